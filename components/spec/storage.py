"""`storage:` in the spec: one shared filesystem mounted on every node, and the local NVMe scratch array.

Which service backs `shared.kind` on each cloud (see README "Shared storage"):
- lustre: AWS FSx for Lustre PERSISTENT_2, Azure Managed Lustre (AMLFS), GCP Managed Lustre;
- nfs: Amazon EFS, Azure Files NFS 4.1 (premium), GCP Filestore (BASIC_SSD).
Capacity increments and throughput tiers are each service's; `storage_rules.py` checks them.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator

from .strict import StrictModel

SharedKind = Literal["lustre", "nfs"]
MOUNT_PATH = re.compile(r"^/[A-Za-z0-9._/-]*[A-Za-z0-9._-]$")
RESERVED_MOUNTS = ("/", "/bin", "/boot", "/dev", "/etc", "/lib", "/proc", "/run", "/sbin", "/sys", "/tmp", "/usr",
                   "/var")


def _checked_mount_path(path: str) -> str:
    if not MOUNT_PATH.match(path) or "//" in path or "/../" in f"{path}/" or "/./" in f"{path}/":
        raise ValueError("expected an absolute path of letters, digits, '.', '_', '-' and '/', e.g. /shared")
    if path in RESERVED_MOUNTS or path.startswith(("/proc/", "/sys/", "/dev/", "/run/", "/boot/")):
        raise ValueError(f"{path} is a system directory; use e.g. /shared or /fsx")
    return path


class SharedStorage(StrictModel):
    """A shared filesystem for checkpoints and data, created with the cluster (or an existing one), mounted on every node."""

    kind: SharedKind
    """"lustre" (FSx for Lustre, Azure Managed Lustre, GCP Managed Lustre) or "nfs" (EFS, Azure Files NFS, Filestore)."""
    capacity_gib: int | None = Field(None, ge=1)
    """Size in GiB, in the service's increments (FSx PERSISTENT_2: 1200, 2400, then multiples of 2400). Default: the service's smallest size; EFS grows by itself and takes none."""
    mount_path: str = "/shared"
    """Where every node mounts it (in /etc/fstab with _netdev). Default: /shared."""
    throughput: int | None = Field(None, ge=1)
    """Lustre throughput tier in MB/s per TiB: AWS 125/250/500/1000, Azure 40/125/250/500, GCP 125/250/500/1000. Default: 250 (AWS, GCP), 125 (Azure)."""
    existing_id: str | None = None
    """Mount this existing filesystem instead of creating one (FSx/EFS id, AMLFS or storage account + share resource id, GCP instance id `projects/p/locations/zone/instances/name`). Default: gpufleet creates one."""
    data_repository: str | None = None
    """AWS FSx for Lustre only: link this S3 prefix (s3://bucket/prefix) to the filesystem (data repository association, lazy import and export). Default: none."""

    @field_validator("mount_path")
    @classmethod
    def _mount_path_is_safe(cls, path: str) -> str:
        return _checked_mount_path(path)

    @field_validator("data_repository")
    @classmethod
    def _is_s3_url(cls, url: str | None) -> str | None:
        if url is not None and not re.match(r"^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/.*)?$", url):
            raise ValueError("expected an S3 URL like s3://my-bucket/datasets/")
        return url


class LocalNvme(StrictModel):
    """The instance's local NVMe disks (p5 8x3.84 TB, A3 local SSDs, ND temp NVMe) as one RAID0 array, assembled at every boot."""

    enabled: bool = False
    """Assemble the array. Default: off on every image: the AWS DLAMI already mounts the instance store at /opt/dlami/nvme (DLAMI release notes), so a default array would fight the image's; the boot step only takes disks that carry no partition, filesystem or array, and skips when there are none."""
    mount_path: str = "/scratch"
    """Where the array is mounted. Default: /scratch."""
    container_data_root: bool = False
    """Move the container runtime's data root (images, layers) onto the array. Default: false (it is lost when the instance stops)."""

    @field_validator("mount_path")
    @classmethod
    def _mount_path_is_safe(cls, path: str) -> str:
        return _checked_mount_path(path)


class Storage(StrictModel):
    """Storage the nodes mount. Nothing is created unless asked for here."""

    shared: SharedStorage | None = None
    """A shared filesystem on every node. Default: none."""
    local_nvme: LocalNvme = Field(default_factory=LocalNvme)
