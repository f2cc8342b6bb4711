"""What one node needs to know at boot: a plain, frozen description built by the cloud component.

`cloud_init` never imports `components`: `components/boot.py` maps the validated spec and the catalog row into a
`BootConfig`, and `render_cloud_config` turns it into cloud-config text. Every field here reaches the node through
/etc/gpufleet/node.env (see `env.py`), so the scripts under `files/` stay static.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .gpudirect import GpuDirectConfig
from .storage import ScratchArray, SharedMount
from .triton import TritonConfig

CLOUDS = ("aws", "azure", "gcp")
IMAGE_KINDS = ("driver-ready", "ubuntu-22.04", "ubuntu-24.04")
# The node-side fabric names: the RDMA fabrics the node stack can start, plus "tcp" when nodes talk over plain
# sockets on the primary NIC and "tcp-multinic" when NCCL's socket transport spreads over every gVNIC NIC of a GCP
# A3 High / A3 Mega node. "tcpxo" is GPUDirect-TCPXO on A3 Mega where the user accepted what it needs
# (`gpudirect` in the spec; its parts are gpudirect.py's); GCP's TCPX is not here: its patched kernel has no public
# source, so `fabric: gpudirect` is refused upstream on A3 High and `auto` falls back to "tcp-multinic".
FABRICS = ("efa", "infiniband", "roce", "tcp", "tcp-multinic", "tcpxo")
CONTAINER_RUNTIMES = ("docker", "containerd", "none")
DRIVER_FLAVORS = ("open", "proprietary")

# Pinned versions of things gpufleet downloads on the node. Bump deliberately; each bump changes user data.
EFA_INSTALLER_VERSION = "1.47.0"
# The tag gpufleet runs; the node gets it pinned by digest (`BootConfig.dcgm_exporter_image`, resolved at deploy).
DCGM_EXPORTER_IMAGE = "nvcr.io/nvidia/k8s/dcgm-exporter:4.5.3-4.8.2-distroless"


@dataclass(frozen=True)
class IsolationConfig:
    """The cgroup v2 slice `gpufleet-jobs.slice`."""

    memory_max_percent: int = 90
    cpu_quota_percent: int | None = None
    allowed_cpus: str | None = None


@dataclass(frozen=True)
class MpsConfig:
    """The CUDA MPS control daemon."""

    active_thread_percentage: int | None = None


VGPU_SOURCE_KINDS = ("aws-s3", "url")


@dataclass(frozen=True)
class VgpuDriverConfig:
    """A vGPU slice's GRID guest driver (install.d/20-vgpu-driver, fetched and checked by lib/vgpu-fetch) and what the
    acceptance check expects of the slice (boot.d/15-vgpu-check)."""

    kind: str  # aws-s3 | url: where the file comes from and whose checksum it is checked against
    version: str
    slice_memory_mib: int  # the slice's frame buffer as the catalog gives it
    bucket: str = ""
    bucket_region: str = ""
    prefix: str = ""
    file_pattern: str = ""
    url: str = ""
    sha256: str = ""  # node.driver.grid_sha256; required for a `url` the cloud publishes no checksum for
    published_sha256: str = ""  # the cloud's own SHA-256 of a `url` file

    def __post_init__(self) -> None:
        if self.kind not in VGPU_SOURCE_KINDS:
            raise ValueError(f"VgpuDriverConfig.kind: got {self.kind!r}; expected one of {', '.join(VGPU_SOURCE_KINDS)}")
        if self.kind == "url" and not (self.sha256 or self.published_sha256):
            raise ValueError("VgpuDriverConfig: a `url` driver needs a sha256 to check the download against")


@dataclass(frozen=True)
class SlurmNodeConfig:
    """The node joins the cluster's Slurm controller as a dynamic node once its acceptance check has passed."""

    node_conf: str
    """`slurmd -Z --conf` line: "Gres=gpu:8 Feature=..."."""
    requeue: bool = True
    """The drain requeues the node's running batch jobs."""
    cloud_node: bool = False
    """An elastic group's node: it runs as the State=CLOUD node its instance metadata names (`slurm/node-name`,
    `slurm/slurmd-exec`), and as a dynamic node when none does. False ships exactly a fixed group's files."""


@dataclass(frozen=True)
class BootConfig:
    """Everything the node software stack depends on, already validated and resolved."""

    cloud: str
    cluster_name: str
    instance_type: str
    image_kind: str
    gpu_model: str
    gpus: int
    gpu_memory_gib: int
    gpu_architecture: str
    driver_branch: str
    driver_flavor: str
    cuda: str
    min_driver_branch: int
    nvswitch: bool = False
    nvlink_subnet_manager: bool = False
    fabric: str = "tcp"
    rdma_devices: int = 0
    arch: str = "x86_64"
    container_runtime: str = "docker"
    isolation: IsolationConfig | None = field(default_factory=IsolationConfig)
    mps: MpsConfig | None = None
    mig_profiles: tuple[str, ...] = ()
    nccl_debug: str = "WARN"
    nccl_env: tuple[tuple[str, str], ...] = ()
    nccl_topo_file: str | None = None
    host_nics: tuple[str, ...] = ()
    gpu_nics: tuple[str, ...] = ()
    dcgm_exporter: bool = True
    dcgm_exporter_image: str = DCGM_EXPORTER_IMAGE
    """The exporter's image as the node runs it: `DCGM_EXPORTER_IMAGE` pinned by digest (the node refuses a bare
    tag)."""
    node_exporter: bool = True
    health_dcgm_diag: bool = False
    health_nccl_allreduce: bool = False
    # node.health.performance: the type's figures as "metric=value:tolerance[:bytes] ..." (perf-check reads them);
    # None when the check is off.
    health_performance: str | None = None
    spot_watcher: bool = False
    drain_command: str = "systemctl kill --signal=SIGTERM gpufleet-jobs.slice"
    drain_on_rebalance: bool = False
    # AWS: the group's termination lifecycle hook the watcher completes once drained ("" where there is none).
    aws_lifecycle_hook: str = ""
    efa_installer_version: str = EFA_INSTALLER_VERSION
    # storage.shared / storage.local_nvme (boot.d/06-shared-storage, boot.d/05-local-nvme; see storage.py)
    shared_storage: SharedMount | None = None
    local_nvme: ScratchArray | None = None
    triton: TritonConfig | None = None
    # scheduler.kind: slurm (files/usr/local/lib/gpufleet/slurm/, gpufleet-slurmd.service)
    slurm: SlurmNodeConfig | None = None
    vgpu: VgpuDriverConfig | None = None  # a vGPU slice: the GRID guest driver instead of the datacenter driver
    gpudirect: GpuDirectConfig | None = None  # GPUDirect-TCPXO (fabric "tcpxo"): module, devices, RxDM, plugin

    def __post_init__(self) -> None:
        checks = {
            "cloud": (self.cloud, CLOUDS),
            "image_kind": (self.image_kind, IMAGE_KINDS),
            "fabric": (self.fabric, FABRICS),
            "container_runtime": (self.container_runtime, CONTAINER_RUNTIMES),
            "driver_flavor": (self.driver_flavor, DRIVER_FLAVORS),
        }
        for name, (value, allowed) in checks.items():
            if value not in allowed:
                raise ValueError(f"BootConfig.{name}: got {value!r}; expected one of {', '.join(allowed)}")
        if (self.fabric == "tcpxo") != (self.gpudirect is not None):
            raise ValueError("BootConfig.gpudirect: required with fabric 'tcpxo', and only with it")
        if self.gpus < 1:
            raise ValueError(f"BootConfig.gpus: got {self.gpus}; expected at least 1")

    @property
    def stock_image(self) -> bool:
        """True when gpufleet installs the driver itself (stock Ubuntu)."""
        return self.image_kind != "driver-ready"
