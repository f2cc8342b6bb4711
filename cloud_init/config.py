"""What one node needs to know at boot: a plain, frozen description built by the cloud component.

`cloud_init` never imports `components`: `components/boot.py` maps the validated spec and the catalog row into a
`BootConfig`, and `render_cloud_config` turns it into cloud-config text. Every field here reaches the node through
/etc/gpufleet/node.env (see `env.py`), so the scripts under `files/` stay static.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .storage import ScratchArray, SharedMount
from .triton import TritonConfig

CLOUDS = ("aws", "azure", "gcp")
IMAGE_KINDS = ("driver-ready", "ubuntu-22.04", "ubuntu-24.04")
# The node-side fabric names: the RDMA fabrics the node stack can start, plus "tcp" when nodes talk over plain
# sockets on the primary NIC and "tcp-multinic" when NCCL's socket transport spreads over every gVNIC NIC of a GCP
# A3 High / A3 Mega node. GCP's TCPX/TCPXO are not here: their host prerequisites are not installed, so
# `fabric: gpudirect` is refused upstream and `auto` falls back to "tcp-multinic".
FABRICS = ("efa", "infiniband", "roce", "tcp", "tcp-multinic")
CONTAINER_RUNTIMES = ("docker", "containerd", "none")
DRIVER_FLAVORS = ("open", "proprietary")

# Pinned versions of things gpufleet downloads on the node. Bump deliberately; each bump changes user data.
EFA_INSTALLER_VERSION = "1.47.0"
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
        if self.gpus < 1:
            raise ValueError(f"BootConfig.gpus: got {self.gpus}; expected at least 1")

    @property
    def stock_image(self) -> bool:
        """True when gpufleet installs the driver itself (stock Ubuntu)."""
        return self.image_kind != "driver-ready"
