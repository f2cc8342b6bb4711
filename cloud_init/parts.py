"""Which real files under `files/` a node gets. Each file lands at the same path on the node ("files/etc/x" ->
"/etc/x"), so the tree under `files/` is exactly what a booted node carries.

A part is present only when the spec asks for what it does; unit files that are present are enabled at install.
The node gets each file without its full-line comments (AWS allows 16 KB of gzip user data); the first line, and
shellcheck directives, stay, and a line naming the source file replaces the rest. Comments live in the repository.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from .config import BootConfig
from .gpudirect import gpudirect_parts, gpudirect_units
from .shipped import (
    SYSTEMD_DIR,
    Part,
    python_without_docstrings,  # noqa: F401  (its home before shipped.py; tests import it here)
    shipped,
)
from .triton import triton_parts, triton_units

FILES_DIR = Path(__file__).parent / "files"
LIB = "usr/local/lib/gpufleet/"

BASE = (
    LIB + "common.sh",
    "usr/local/sbin/gpufleet-install",
    "usr/local/sbin/gpufleet-boot",
    "usr/local/sbin/gpufleet-health",
    "usr/local/sbin/gpufleet-report-health",
    LIB + "install.d/20-driver",
    LIB + "install.d/40-persistenced",
    LIB + "install.d/50-container-toolkit",
    LIB + "boot.d/10-driver",
    LIB + "boot.d/40-cdi",
    SYSTEMD_DIR + "gpufleet-node.target",
    SYSTEMD_DIR + "gpufleet-boot.service",
    SYSTEMD_DIR + "gpufleet-health.service",
    SYSTEMD_DIR + "nvidia-persistenced.service.d/gpufleet.conf",
    "etc/apt/apt.conf.d/51gpufleet-nvidia-hold",
    "etc/profile.d/gpufleet-job-env.sh",
)
STOCK_IMAGE = ("etc/modprobe.d/gpufleet-blacklist-nouveau.conf",)
NVSWITCH = (LIB + "install.d/30-fabricmanager", LIB + "boot.d/20-fabricmanager")
FABRIC = {
    "efa": (LIB + "install.d/60-efa",),
    "infiniband": (LIB + "install.d/61-infiniband", "etc/modules-load.d/gpufleet-nvidia-peermem.conf"),
    "roce": (LIB + "install.d/62-gcp-gpudirect",),
    "tcp-multinic": (LIB + "boot.d/07-nccl-nics",),
}
ISOLATION = (SYSTEMD_DIR + "gpufleet-jobs.slice", "usr/local/bin/gpufleet-run", LIB + "boot.d/50-slice")
MPS = (SYSTEMD_DIR + "gpufleet-mps.service", LIB + "mps-thread-limit")
MIG = (LIB + "boot.d/30-mig",)
DCGM = (LIB + "install.d/70-dcgm",)
DCGM_EXPORTER = (SYSTEMD_DIR + "gpufleet-dcgm-exporter.service", LIB + "dcgm-exporter", "etc/gpufleet/dcgm-counters.csv")
NODE_EXPORTER = (LIB + "install.d/71-node-exporter", SYSTEMD_DIR + "gpufleet-node-exporter.service")
# Per-job metrics of the job slice, published through node_exporter's textfile collector.
JOB_METRICS = (LIB + "job-metrics", SYSTEMD_DIR + "gpufleet-job-metrics.service",
               SYSTEMD_DIR + "gpufleet-job-metrics.timer")
LOCAL_NVME = (LIB + "boot.d/05-local-nvme",)
SHARED_STORAGE = (LIB + "boot.d/06-shared-storage",)
# node.health.performance: the speed measurements and their comparison with the type's figures.
PERFORMANCE = (LIB + "perf-check",)
SPOT_WATCHER = ("usr/local/sbin/gpufleet-watcher", SYSTEMD_DIR + "gpufleet-watcher.service",
                SYSTEMD_DIR + "gpufleet-shutdown-drain.service")
# Clouds whose repair probes ask the node over HTTP (GCP autohealing, Azure Application Health); AWS nodes report
# themselves through SetInstanceHealth instead.
HEALTH_ENDPOINT_CLOUDS = ("azure", "gcp")
# Signed Auto Scaling calls without the AWS CLI, on stock images (the Deep Learning AMI ships the CLI).
AWS_API = ("usr/local/sbin/gpufleet-aws",)
# scheduler.kind: slurm: Debian/Ubuntu's slurmd as a dynamic node, the TaskProlog, HealthCheckProgram and drain.
SLURM = (LIB + "install.d/80-slurm", LIB + "slurm/join", LIB + "slurm/drain", LIB + "slurm/health-check",
         LIB + "slurm/task-prolog", LIB + "slurm/prolog", LIB + "slurm/epilog", "usr/local/bin/gpufleet-run",
         SYSTEMD_DIR + "gpufleet-slurmd.service")
# An elastic group's node: slurmd as the CLOUD node its instance metadata names (the `elastic` sections of join and
# drain come with it).
SLURM_CLOUD_NODE = (LIB + "slurm/node-name", LIB + "slurm/slurmd-exec",
                    SYSTEMD_DIR + "gpufleet-slurmd.service.d/gpufleet-cloud-node.conf")
HEALTH_ENDPOINT = ("usr/local/sbin/gpufleet-health-endpoint", SYSTEMD_DIR + "gpufleet-health-endpoint.service")
# A vGPU slice: the GRID guest driver, fetched and checked, in place of the datacenter driver, and the acceptance check
# that the guest driver is loaded with the slice's memory. AWS fetches with the node's role through gpufleet-aws.
VGPU_REPLACES = (LIB + "install.d/20-driver",)
VGPU = (LIB + "install.d/20-vgpu-driver", LIB + "vgpu-fetch", LIB + "boot.d/15-vgpu-check")


def selected_paths(config: BootConfig) -> list[str]:
    """Relative paths under files/ for `config`, sorted."""
    paths = list(BASE)
    if config.stock_image:
        paths += STOCK_IMAGE
    if config.nvswitch:
        paths += NVSWITCH
    paths += FABRIC.get(config.fabric, ())
    optional = (
        (config.isolation is not None, ISOLATION),
        (config.mps is not None, MPS),
        (bool(config.mig_profiles), MIG),
        (config.dcgm_exporter or config.health_dcgm_diag, DCGM),
        (config.dcgm_exporter, DCGM_EXPORTER),
        (config.node_exporter, NODE_EXPORTER),
        (config.node_exporter and config.isolation is not None and config.triton is None, JOB_METRICS),
        (config.spot_watcher, SPOT_WATCHER),
        (config.cloud in HEALTH_ENDPOINT_CLOUDS, HEALTH_ENDPOINT),
        (config.cloud == "aws" and (config.image_kind != "driver-ready" or _publishes(config)), AWS_API),
        (config.local_nvme is not None, LOCAL_NVME),
        (config.shared_storage is not None, SHARED_STORAGE),
        (config.health_performance is not None, PERFORMANCE),
        (config.slurm is not None, SLURM),
        (config.slurm is not None and config.slurm.cloud_node, SLURM_CLOUD_NODE),
    )
    for wanted, group in optional:
        if wanted:
            paths += group
    if config.vgpu is not None:
        paths = [p for p in paths if p not in VGPU_REPLACES] + list(VGPU) + (list(AWS_API) if config.cloud == "aws"
                                                                             else [])
    return sorted(set(paths))


def _publishes(config: BootConfig) -> bool:
    """An inference node that publishes its autoscaling metric signs CloudWatch calls with gpufleet-aws."""
    return config.triton is not None and config.triton.scale_metric is not None


def static_parts(config: BootConfig) -> list[Part]:
    inference = triton_parts(config.triton, config.cloud) if config.triton else []
    return [_part(relative, config) for relative in selected_paths(config)] + inference + gpudirect_parts(config.gpudirect)


def units_to_enable(config: BootConfig) -> list[str]:
    """Unit names written for `config` that are enabled at install (drop-ins and slices are not, nor a service that
    its timer starts)."""
    names = [p[len(SYSTEMD_DIR):] for p in selected_paths(config) if p.startswith(SYSTEMD_DIR)]
    names += triton_units(config.triton) if config.triton else []
    names += gpudirect_units(config.gpudirect)
    timed = {n.removesuffix(".timer") + ".service" for n in names if n.endswith(".timer")}
    return [n for n in names if "/" not in n and n.endswith((".service", ".target", ".timer")) and n not in timed]


SECTION_MARKERS = ("# cloud: ", "# only: ")


def for_node(content: str, kept_sections: frozenset[str] | set[str]) -> str:
    """`content` without the sections this node does not run. A line `# cloud: NAME...` or `# only: NAME...` starts
    a section kept when any of its names is, `# cloud: end` or `# only: end` ends it; lines outside any section are
    always kept. Each node ships only the code it runs (AWS user data holds 16 KB): its cloud's watcher sources and
    fabric checks, the optional health checks the spec turned on."""
    kept, section = [], None
    for line in content.splitlines(keepends=True):
        marker = next((m for m in SECTION_MARKERS if line.startswith(m)), None)
        if marker is not None:
            names = frozenset(line[len(marker):].split())
            section = None if names == {"end"} else names
        elif section is None or section & kept_sections:
            kept.append(line)
    return "".join(kept)


def for_cloud(content: str, cloud: str) -> str:
    """`content` with only `cloud`'s sections (and every optional one): what the tests run for one cloud."""
    return for_node(content, {cloud, *OPTIONAL_SECTIONS})


# Optional sections (`# only: NAME`) and when a node gets them.
OPTIONAL_SECTIONS = ("health-dcgm-diag", "health-nccl-allreduce", "health-performance", "shared-storage",
                     "multi-nic-tcp", "gpudirect-tcpxo", "elastic")


def node_sections(config: BootConfig) -> frozenset[str]:
    """The sections `config`'s node runs: its cloud's and the optional ones its spec turned on."""
    wanted = {"health-dcgm-diag": config.health_dcgm_diag, "health-nccl-allreduce": config.health_nccl_allreduce,
              "health-performance": config.health_performance is not None,
              "shared-storage": config.shared_storage is not None,
              "multi-nic-tcp": config.fabric == "tcp-multinic", "gpudirect-tcpxo": config.fabric == "tcpxo",
              "elastic": config.slurm is not None and config.slurm.cloud_node}
    return frozenset({config.cloud, *(name for name, on in wanted.items() if on)})


def _part(relative: str, config: BootConfig) -> Part:
    return _shipped_part(relative, node_sections(config))


@lru_cache(maxsize=512)
def _shipped_part(relative: str, sections: frozenset[str]) -> Part:
    """One shipped file, built once per process for each set of sections (the files are part of the package)."""
    content = for_node((FILES_DIR / relative).read_text(), sections)
    # The mode follows the content, not the checkout's file mode, so every checkout renders the same bytes.
    mode = "0755" if content.startswith("#!") else "0644"
    return Part(path="/" + relative, permissions=mode, content=shipped(content, relative))
