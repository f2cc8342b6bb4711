"""Which real files under `files/` a node gets. Each file lands at the same path on the node ("files/etc/x" ->
"/etc/x"), so the tree under `files/` is exactly what a booted node carries.

A part is present only when the spec asks for what it does; unit files that are present are enabled at install.
"""

from __future__ import annotations

import os
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
    LIB + "install.d/20-driver",
    LIB + "install.d/40-persistenced",
    LIB + "install.d/50-container-toolkit",
    LIB + "boot.d/10-driver",
    LIB + "boot.d/40-cdi",
    SYSTEMD_DIR + "gpufleet-node.target",
    SYSTEMD_DIR + "gpufleet-boot.service",
    SYSTEMD_DIR + "nvidia-persistenced.service.d/gpufleet.conf",
    "etc/apt/apt.conf.d/51gpufleet-nvidia-hold",
    "etc/profile.d/gpufleet-nccl.sh",
)
STOCK_IMAGE = ("etc/modprobe.d/gpufleet-blacklist-nouveau.conf",)
NVSWITCH = (LIB + "install.d/30-fabricmanager", LIB + "boot.d/20-fabricmanager")
FABRIC = {
    "efa": (LIB + "install.d/60-efa",),
    "infiniband": ("etc/modules-load.d/gpufleet-nvidia-peermem.conf",),
}


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
    return sorted(paths)


def static_parts(config: BootConfig) -> list[Part]:
    return [_part(relative) for relative in selected_paths(config)]


def units_to_enable(config: BootConfig) -> list[str]:
    """Unit names written for `config` that are enabled at install (drop-ins and slices are not)."""
    names = [p[len(SYSTEMD_DIR):] for p in selected_paths(config) if p.startswith(SYSTEMD_DIR)]
    return [n for n in names if "/" not in n and n.endswith((".service", ".target"))]


def _part(relative: str) -> Part:
    source = FILES_DIR / relative
    mode = "0755" if os.access(source, os.X_OK) else "0644"
    return Part(path="/" + relative, permissions=mode, content=source.read_text())
