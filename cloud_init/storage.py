"""What a node mounts: the shared filesystem (storage.shared) and the local NVMe scratch array (storage.local_nvme).

Both reach the node through node.env (`storage_env_items`); the scripts are boot.d/06-shared-storage and
boot.d/05-local-nvme. The mount options are each service's documented ones plus `_netdev` (wait for the network)
and `x-systemd.automount` (never block boot on the filesystem):
- FSx for Lustre: relatime,flock (AWS FSx "Mounting Amazon FSx file systems automatically"; its
  `x-systemd.requires=network.service` names a unit Ubuntu lacks, so network-online.target is required instead);
- Azure Managed Lustre and GCP Managed Lustre: noatime,flock;
- EFS: nfsvers=4.1,rsize=1048576,wsize=1048576,hard,timeo=600,retrans=2,noresvport (AWS EFS "Mounting with NFS");
- Azure Files NFS: vers=4,minorversion=1,sec=sys,nconnect=4 (Azure Files "Mount NFS file share");
- Filestore: hard,timeo=600,retrans=3,rsize=262144,wsize=1048576,resvport (Filestore "Mounting file shares").
"""

from __future__ import annotations

from dataclasses import dataclass

# The created filesystem's address is known only after it exists: user data carries this placeholder and the
# cloud component substitutes the real source (an Output) before encoding. Existing filesystems do the same.
SOURCE_PLACEHOLDER = "@@GPUFLEET_SHARED_SOURCE@@"
AUTOMOUNT = "_netdev,x-systemd.automount,x-systemd.requires=network-online.target,x-systemd.after=network-online.target"
MOUNT_OPTIONS = {
    ("aws", "lustre"): "defaults,relatime,flock",
    ("azure", "lustre"): "defaults,noatime,flock",
    ("gcp", "lustre"): "defaults,noatime,flock",
    ("aws", "nfs"): "nfsvers=4.1,rsize=1048576,wsize=1048576,hard,timeo=600,retrans=2,noresvport",
    ("azure", "nfs"): "vers=4,minorversion=1,sec=sys,nconnect=4",
    ("gcp", "nfs"): "hard,timeo=600,retrans=3,rsize=262144,wsize=1048576,resvport",
}
# Filestore serves NFSv3 (`nfs`); EFS and Azure Files serve NFS 4.1.
NFS_FSTYPE = {"aws": "nfs4", "azure": "nfs4", "gcp": "nfs"}


@dataclass(frozen=True)
class SharedMount:
    """One shared filesystem: kind (lustre|nfs), where it is mounted and the fstab source."""

    cloud: str
    kind: str
    mount_path: str
    source: str = SOURCE_PLACEHOLDER

    def __post_init__(self) -> None:
        if (self.cloud, self.kind) not in MOUNT_OPTIONS:
            raise ValueError(f"SharedMount: no {self.kind} mount for cloud {self.cloud!r}")

    @property
    def fstype(self) -> str:
        return NFS_FSTYPE[self.cloud] if self.kind == "nfs" else "lustre"

    @property
    def options(self) -> str:
        return f"{MOUNT_OPTIONS[(self.cloud, self.kind)]},{AUTOMOUNT}"

    def fstab_line(self) -> str:
        return f"{self.source} {self.mount_path} {self.fstype} {self.options} 0 0"


@dataclass(frozen=True)
class ScratchArray:
    """The RAID0 of local NVMe disks."""

    mount_path: str = "/scratch"
    container_data_root: bool = False


def storage_env_items(shared: SharedMount | None, scratch: ScratchArray | None) -> list[tuple[str, str]]:
    """node.env lines for the storage parts, only when a part is present (other nodes' env stays as it was)."""
    items: list[tuple[str, str]] = []
    if shared is not None:
        items += [("GPUFLEET_SHARED_KIND", shared.kind), ("GPUFLEET_SHARED_SOURCE", shared.source),
                  ("GPUFLEET_SHARED_MOUNT_PATH", shared.mount_path), ("GPUFLEET_SHARED_FSTYPE", shared.fstype),
                  ("GPUFLEET_SHARED_OPTIONS", shared.options)]
    if scratch is not None:
        items += [("GPUFLEET_LOCAL_NVME", "1"), ("GPUFLEET_SCRATCH_PATH", scratch.mount_path),
                  ("GPUFLEET_SCRATCH_CONTAINER_ROOT", "1" if scratch.container_data_root else "0")]
    return items
