"""A GCP A3 Mega node's GPUDirect-TCPXO parts: the dmabuf import helper's install step (Artifact Registry's signed
apt repository, key pinned by fingerprint, package pinned by version, built by DKMS), the per-boot device step
(module loaded, aperture devices bound), the NCCL plugin installer and RxDM as services, both run by digest after
the node has checked the digest against the registry (`oci-verify`).

The static files live under `gpudirect/` (same layout as `files/`), so nodes without GPUDirect-TCPXO render exactly
what they did before. The values (images, key, package) come from `components/gcp/gpudirect` through
`GpuDirectConfig`; cloud_init never imports components.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .shipped import SYSTEMD_DIR, Part, shipped

GPUDIRECT_DIR = Path(__file__).parent / "gpudirect"
LIB = "usr/local/lib/gpufleet/"
STATIC = (
    LIB + "install.d/63-gcp-tcpxo",
    LIB + "boot.d/08-tcpxo-devices",
    LIB + "gpudirect-container",
    LIB + "oci-verify",
    SYSTEMD_DIR + "gpufleet-tcpxo-plugin.service",
    SYSTEMD_DIR + "gpufleet-rxdm.service",
)
UNITS = ("gpufleet-tcpxo-plugin.service", "gpufleet-rxdm.service")
READY_FILE = "/run/gpufleet/rxdm/ready"
IMAGE_REFERENCE = r"^[a-z0-9.-]+(:[0-9]+)?/[a-z0-9._/-]+:[\w.-]+@sha256:[0-9a-f]{64}$"


@dataclass(frozen=True)
class GpuDirectConfig:
    """What the node needs to start GPUDirect-TCPXO; every value is checked upstream (components/gcp/gpudirect)."""

    rxdm_image: str
    """REGISTRY/REPOSITORY:TAG@sha256:<hex>: the node refuses anything else."""
    plugin_image: str
    rxdm_args: tuple[str, ...]
    lib_dir: str
    apt_url: str
    apt_suite: str
    key_url: str
    key_fingerprint: str
    package: str
    package_version: str
    module: str
    device: str
    aperture_vendor: str
    aperture_device: str
    aperture_dir: str


def gpudirect_env_items(config: GpuDirectConfig) -> list[tuple[str, str]]:
    """node.env lines for the TCPXO scripts and the acceptance check (only on such nodes)."""
    return [
        ("GPUFLEET_TCPXO_RXDM_IMAGE", config.rxdm_image),
        ("GPUFLEET_TCPXO_PLUGIN_IMAGE", config.plugin_image),
        ("GPUFLEET_TCPXO_RXDM_ARGS", " ".join(config.rxdm_args)),
        ("GPUFLEET_TCPXO_LIB_DIR", config.lib_dir),
        ("GPUFLEET_TCPXO_APT_URL", config.apt_url),
        ("GPUFLEET_TCPXO_APT_SUITE", config.apt_suite),
        ("GPUFLEET_TCPXO_KEY_URL", config.key_url),
        ("GPUFLEET_TCPXO_KEY_FINGERPRINT", config.key_fingerprint),
        ("GPUFLEET_TCPXO_PACKAGE", config.package),
        ("GPUFLEET_TCPXO_PACKAGE_VERSION", config.package_version),
        ("GPUFLEET_TCPXO_MODULE", config.module),
        ("GPUFLEET_TCPXO_DEVICE", config.device),
        ("GPUFLEET_TCPXO_APERTURE_ID", f"{config.aperture_vendor}:{config.aperture_device}"),
        ("GPUFLEET_TCPXO_APERTURE_DIR", config.aperture_dir),
        ("GPUFLEET_TCPXO_READY_FILE", READY_FILE),
    ]


def gpudirect_parts(config: GpuDirectConfig | None) -> list[Part]:
    """The TCPXO node's files on top of the training node's; none without GPUDirect-TCPXO."""
    if config is None:
        return []
    parts = []
    for relative in STATIC:
        content = (GPUDIRECT_DIR / relative).read_text()
        mode = "0755" if content.startswith("#!") else "0644"
        text = shipped(content, relative).replace("cloud_init/files/", "cloud_init/gpudirect/", 1)
        parts.append(Part("/" + relative, mode, text))
    return parts


def gpudirect_units(config: GpuDirectConfig | None) -> list[str]:
    return list(UNITS) if config is not None else []
