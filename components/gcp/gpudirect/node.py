"""The node's part of GPUDirect-TCPXO: the values `cloud_init.GpuDirectConfig` carries to the node, with both
container images pinned by digest (the user's digest from the spec, else the registry's answer at `pulumi up`)."""

from __future__ import annotations

from gpufleet.cloud_init.gpudirect import GpuDirectConfig

from ...catalog.selector import Selection
from ...deploytime.containers import Pin
from . import sources as s
from .delivery import tcpxo_delivered


def pinned(tag: str, given: str | None, pin: Pin) -> str:
    return f"{tag}@{given}" if given else pin(tag)


def gpudirect_config(selection: Selection, pin: Pin) -> GpuDirectConfig | None:
    """The TCPXO node config, or None where the node does not run GPUDirect-TCPXO."""
    if not tcpxo_delivered(selection):
        return None
    trust = selection.spec.gpudirect
    return GpuDirectConfig(
        rxdm_image=pinned(s.TCPXO_RXDM_IMAGE, trust.rxdm_image_digest, pin),
        plugin_image=pinned(s.TCPXO_PLUGIN_IMAGE, trust.nccl_plugin_image_digest, pin),
        rxdm_args=s.TCPXO_RXDM_ARGS, lib_dir=s.TCPXO_LIB_DIR, apt_url=s.TCPXO_APT_URL, apt_suite=s.TCPXO_APT_SUITE,
        key_url=s.ARTIFACT_REGISTRY_KEY_URL, key_fingerprint=s.ARTIFACT_REGISTRY_KEY_FINGERPRINT,
        package=s.IMPORT_HELPER_PACKAGE, package_version=s.IMPORT_HELPER_VERSION, module=s.IMPORT_HELPER_MODULE,
        device=s.IMPORT_HELPER_DEVICE, aperture_vendor=s.APERTURE_VENDOR, aperture_device=s.APERTURE_DEVICE,
        aperture_dir=s.APERTURE_DIR)
