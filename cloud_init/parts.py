"""Which real files under `files/` a node gets. Each file lands at the same path on the node ("files/etc/x" ->
"/etc/x"), so the tree under `files/` is exactly what a booted node carries.

A part is present only when the spec asks for what it does; unit files that are present are enabled at install.
The node gets each file without its full-line comments (AWS allows 16 KB of gzip user data); the first line, and
shellcheck directives, stay, and a line naming the source file replaces the rest. Comments live in the repository.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .config import BootConfig

FILES_DIR = Path(__file__).parent / "files"
SYSTEMD_DIR = "etc/systemd/system/"
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
}
ISOLATION = (SYSTEMD_DIR + "gpufleet-jobs.slice", "usr/local/bin/gpufleet-run", LIB + "boot.d/50-slice")
MPS = (SYSTEMD_DIR + "gpufleet-mps.service", LIB + "mps-thread-limit")
MIG = (LIB + "boot.d/30-mig",)
DCGM = (LIB + "install.d/70-dcgm",)
DCGM_EXPORTER = (SYSTEMD_DIR + "gpufleet-dcgm-exporter.service", LIB + "dcgm-exporter", "etc/gpufleet/dcgm-counters.csv")
NODE_EXPORTER = (LIB + "install.d/71-node-exporter", SYSTEMD_DIR + "gpufleet-node-exporter.service")
SPOT_WATCHER = ("usr/local/sbin/gpufleet-watcher", SYSTEMD_DIR + "gpufleet-watcher.service")


@dataclass(frozen=True)
class Part:
    """One file for write_files: where it goes on the node, its mode and content."""

    path: str
    permissions: str
    content: str


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
        (config.spot_watcher, SPOT_WATCHER),
    )
    for wanted, group in optional:
        if wanted:
            paths += group
    return sorted(set(paths))


def static_parts(config: BootConfig) -> list[Part]:
    return [_part(relative) for relative in selected_paths(config)]


def units_to_enable(config: BootConfig) -> list[str]:
    """Unit names written for `config` that are enabled at install (drop-ins and slices are not)."""
    names = [p[len(SYSTEMD_DIR):] for p in selected_paths(config) if p.startswith(SYSTEMD_DIR)]
    return [n for n in names if "/" not in n and n.endswith((".service", ".target"))]


KEPT_COMMENTS = ("#!", "# shellcheck")


def shipped(content: str, relative: str) -> str:
    """`content` without full-line comments, with a pointer to its source after the first line."""
    lines = content.splitlines()
    marker = "//" if relative.startswith("etc/apt/") else "#"
    prefixes = ("#", ";") if relative.startswith(SYSTEMD_DIR) else (marker,)
    head = lines[:1] if lines and lines[0].startswith(("#!", "# shellcheck shell=")) else []
    body = [line for line in lines[len(head):]
            if not line.lstrip().startswith(prefixes) or line.lstrip().startswith(KEPT_COMMENTS)]
    return "\n".join(head + [f"{marker} gpufleet: cloud_init/files/{relative} (comments are in the source)"] + body) + "\n"


def _part(relative: str) -> Part:
    content = (FILES_DIR / relative).read_text()
    # The mode follows the content, not the checkout's file mode, so every checkout renders the same bytes.
    mode = "0755" if content.startswith("#!") else "0644"
    return Part(path="/" + relative, permissions=mode, content=shipped(content, relative))
