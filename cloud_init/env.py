"""The node's parameters as files: /etc/gpufleet/node.env, /etc/nccl.conf and /etc/gpufleet/job.env.

Scripts never contain per-node values; they read node.env. Values are single-quoted, which both `sh` and systemd's
EnvironmentFile= read literally, so a value may not contain a single quote or a newline (the drain command, which
may, is written to its own script instead).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from .config import BootConfig
from .env_file import ENV_NAME, quote_env_value, render_env_file  # noqa: F401  (their home before env_file.py)
from .gpudirect import gpudirect_env_items
from .storage import storage_env_items

NCCL_DIR = Path(__file__).parent / "nccl"
NODE_ENV_PATH = "/etc/gpufleet/node.env"
JOB_ENV_PATH = "/etc/gpufleet/job.env"
MPS_PIPE_DIRECTORY = "/run/nvidia-mps"
NCCL_CONF_PATH = "/etc/nccl.conf"
DRAIN_HOOK_PATH = "/etc/gpufleet/drain-hook"
# Where each cloud's metadata service answers; tests point GPUFLEET_METADATA_URL at a loopback server.
METADATA_URLS = {"aws": "http://169.254.169.254", "azure": "http://169.254.169.254",
                 "gcp": "http://metadata.google.internal"}
# NCCL variables that name the node's NICs, per fabric: (variable, "host", "gpu" or "every" (host then gpu), all
# NICs or only the first, prefix). When the catalog row lists its NIC names, they replace the defaults of
# nccl/<fabric>.conf.
NIC_VARIABLES = {
    "roce": (("NCCL_SOCKET_IFNAME", "host", True, ""),),
    "tcp-multinic": (("NCCL_SOCKET_IFNAME", "every", True, "="),),
    "tcpxo": (("NCCL_SOCKET_IFNAME", "host", False, ""), ("NCCL_FASTRAK_CTRL_DEV", "host", False, ""),
              ("NCCL_FASTRAK_IFNAME", "gpu", True, "")),
}
# Fabrics whose NCCL_SOCKET_IFNAME boot.d/07-nccl-nics rewrites from the gVNIC interfaces the node has.
DISCOVERED_NIC_FABRICS = ("tcp-multinic",)
# Plugin libraries NCCL must find, per fabric: written to /etc/ld.so.conf.d (render.py); EFA's installer adds its own.
NCCL_LIBRARY_PATHS = {"roce": "/usr/local/gib/lib64", "tcpxo": "/var/lib/tcpxo/lib64"}


def _flag(value: bool) -> str:
    return "1" if value else "0"


def node_env_items(config: BootConfig, units: Iterable[str]) -> list[tuple[str, str]]:
    """Every node parameter, in a fixed order."""
    iso, mps = config.isolation, config.mps
    return [
        ("GPUFLEET_CLOUD", config.cloud),
        ("GPUFLEET_CLUSTER", config.cluster_name),
        ("GPUFLEET_INSTANCE_TYPE", config.instance_type),
        ("GPUFLEET_IMAGE_KIND", config.image_kind),
        ("GPUFLEET_ARCH", config.arch),
        ("GPUFLEET_GPU_MODEL", config.gpu_model),
        ("GPUFLEET_GPUS", str(config.gpus)),
        ("GPUFLEET_GPU_MEMORY_GIB", str(config.gpu_memory_gib)),
        ("GPUFLEET_GPU_ARCHITECTURE", config.gpu_architecture),
        ("GPUFLEET_DRIVER_BRANCH", config.driver_branch),
        ("GPUFLEET_DRIVER_FLAVOR", config.driver_flavor),
        ("GPUFLEET_CUDA", config.cuda),
        ("GPUFLEET_MIN_DRIVER_BRANCH", str(config.min_driver_branch)),
        ("GPUFLEET_NVSWITCH", _flag(config.nvswitch)),
        ("GPUFLEET_NVLSM", _flag(config.nvlink_subnet_manager)),
        ("GPUFLEET_FABRIC", config.fabric),
        ("GPUFLEET_RDMA_DEVICES", str(config.rdma_devices)),
        ("GPUFLEET_CONTAINER_RUNTIME", config.container_runtime),
        ("GPUFLEET_EFA_INSTALLER_VERSION", config.efa_installer_version),
        ("GPUFLEET_ISOLATION", _flag(iso is not None)),
        ("GPUFLEET_SLICE_MEMORY_MAX_PERCENT", str(iso.memory_max_percent) if iso else ""),
        ("GPUFLEET_SLICE_CPU_QUOTA_PERCENT", str(iso.cpu_quota_percent or "") if iso else ""),
        ("GPUFLEET_SLICE_ALLOWED_CPUS", (iso.allowed_cpus or "") if iso else ""),
        ("GPUFLEET_MPS", _flag(mps is not None)),
        ("GPUFLEET_MPS_ACTIVE_THREAD_PERCENTAGE", str(mps.active_thread_percentage or "") if mps else ""),
        ("GPUFLEET_MIG_PROFILES", ",".join(config.mig_profiles)),
        ("GPUFLEET_DCGM_EXPORTER", _flag(config.dcgm_exporter)),
        ("GPUFLEET_DCGM_EXPORTER_IMAGE", config.dcgm_exporter_image),
        ("GPUFLEET_NODE_EXPORTER", _flag(config.node_exporter)),
        ("GPUFLEET_HEALTH_DCGM_DIAG", _flag(config.health_dcgm_diag)),
        ("GPUFLEET_HEALTH_NCCL_ALLREDUCE", _flag(config.health_nccl_allreduce)),
        ("GPUFLEET_SPOT_WATCHER", _flag(config.spot_watcher)),
        ("GPUFLEET_DRAIN_HOOK", DRAIN_HOOK_PATH if config.spot_watcher else ""),
        ("GPUFLEET_DRAIN_ON_REBALANCE", _flag(config.drain_on_rebalance)),
        ("GPUFLEET_AWS_LIFECYCLE_HOOK", config.aws_lifecycle_hook),
        ("GPUFLEET_METADATA_URL", METADATA_URLS[config.cloud]),
        ("GPUFLEET_UNITS", " ".join(units)),
        *storage_env_items(config.shared_storage, config.local_nvme),
        *((("GPUFLEET_PERF_EXPECT", config.health_performance),) if config.health_performance is not None else ()),
        *slurm_env_items(config),
        *vgpu_env_items(config),
        *((("GPUFLEET_NCCL_DISCOVER_NICS", str(max(len(config.host_nics), 1) + config.rdma_devices)),)
          if discovers_nics(config) else ()),
        *(gpudirect_env_items(config.gpudirect) if config.gpudirect is not None else ()),
    ]


def slurm_env_items(config: BootConfig) -> list[tuple[str, str]]:
    """Only on a Slurm cluster's nodes, so a node without a scheduler gets the node.env it always had."""
    if config.slurm is None:
        return []
    return [("GPUFLEET_SLURM_NODE_CONF", config.slurm.node_conf),
            ("GPUFLEET_SLURM_REQUEUE", _flag(config.slurm.requeue))]


def vgpu_env_items(config: BootConfig) -> list[tuple[str, str]]:
    """A vGPU slice's driver source and expected slice; nothing for whole-GPU nodes (their node.env is unchanged)."""
    vgpu = config.vgpu
    if vgpu is None:
        return []
    return [("GPUFLEET_VGPU_SOURCE", vgpu.kind), ("GPUFLEET_VGPU_VERSION", vgpu.version),
            ("GPUFLEET_VGPU_BUCKET", vgpu.bucket), ("GPUFLEET_VGPU_BUCKET_REGION", vgpu.bucket_region),
            ("GPUFLEET_VGPU_PREFIX", vgpu.prefix), ("GPUFLEET_VGPU_FILE_PATTERN", vgpu.file_pattern),
            ("GPUFLEET_VGPU_URL", vgpu.url), ("GPUFLEET_VGPU_SHA256", vgpu.sha256),
            ("GPUFLEET_VGPU_PUBLISHED_SHA256", vgpu.published_sha256),
            ("GPUFLEET_VGPU_SLICE_MIB", str(vgpu.slice_memory_mib))]


def discovers_nics(config: BootConfig) -> bool:
    """Whether boot.d/07-nccl-nics sets NCCL_SOCKET_IFNAME from the NICs found at boot: on a multi-NIC TCP fabric,
    unless the user chose the interfaces (`node.nccl.env`), whose value always wins."""
    return config.fabric in DISCOVERED_NIC_FABRICS and "NCCL_SOCKET_IFNAME" not in dict(config.nccl_env)


def read_conf(path: Path) -> list[tuple[str, str]]:
    """KEY=VALUE lines of one of the fabric files under nccl/, comments skipped."""
    items = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            name, _, value = line.partition("=")
            items.append((name, value))
    return items


def nccl_items(config: BootConfig) -> list[tuple[str, str]]:
    """The fabric's variables, then the topology file, debug level and the user's overrides (which win)."""
    merged: dict[str, str] = dict(read_conf(NCCL_DIR / f"{config.fabric}.conf"))
    nics = {"host": config.host_nics, "gpu": config.gpu_nics, "every": config.host_nics + config.gpu_nics}
    for name, kind, every, prefix in NIC_VARIABLES.get(config.fabric, ()):
        if nics[kind]:
            merged[name] = prefix + ",".join(nics[kind] if every else nics[kind][:1])
    if config.nccl_topo_file:
        merged["NCCL_TOPO_FILE"] = config.nccl_topo_file
    if config.nccl_debug:
        merged["NCCL_DEBUG"] = config.nccl_debug
    for name, value in config.nccl_env:
        merged[name] = value
    return list(merged.items())


def nccl_library_path(config: BootConfig) -> str | None:
    return NCCL_LIBRARY_PATHS.get(config.fabric)


def render_nccl_conf(config: BootConfig) -> str:
    """/etc/nccl.conf: NCCL reads it in every process and never overrides the process environment."""
    source = f"cloud_init/nccl/{config.fabric}.conf + node.nccl"
    lines = [f"# gpufleet: NCCL system configuration for fabric {config.fabric} ({source})"]
    lines += [f"{name}={value}" for name, value in nccl_items(config)]
    return "\n".join(lines) + "\n"


def render_job_env(config: BootConfig) -> str:
    """/etc/gpufleet/job.env: the NCCL variables plus the plugin library path and MPS pipe, for login shells
    (/etc/profile.d/gpufleet-job-env.sh) and `gpufleet-run`."""
    items = nccl_items(config)
    library = nccl_library_path(config)
    if library:
        items.append(("GPUFLEET_NCCL_LIBRARY_PATH", library))
    if config.mps is not None:
        items.append(("CUDA_MPS_PIPE_DIRECTORY", MPS_PIPE_DIRECTORY))
    return render_env_file(items, f"gpufleet: job environment for fabric {config.fabric}")


SLURM_DRAIN = "/usr/local/lib/gpufleet/slurm/drain"


def render_drain_hook(command: str, slurm: bool = False) -> str:
    """The user's drain command as its own script, so any quoting in it survives. On a Slurm node, Slurm hears of
    the notice first (DRAIN, requeue, delete), then the user's command runs."""
    head = "#!/bin/sh\n# gpufleet drain hook (node.spot.drain_command); run once on a spot/eviction notice.\n"
    return head + (f"{SLURM_DRAIN}\n" if slurm else "") + f"{command}\n"
