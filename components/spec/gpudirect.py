"""What the user trusts so that GCP's GPUDirect-TCPXO (A3 Mega) can run: explicit opt-ins, each naming the piece.

Google publishes RxDM and the TCPXO NCCL plugin installer as container images by tag only (no digest, no
signature gpufleet could check), and the dmabuf import helper as DKMS source that the node builds into an unsigned
module. Neither is accepted silently: like `access.allow_ssh_from_anywhere`, each opening is a field of its own
(components/gcp/gpudirect/ reads them; its `sources.py` says where each piece comes from).
"""

from __future__ import annotations

from pydantic import Field

from .strict import StrictModel

DIGEST_PATTERN = r"^sha256:[0-9a-f]{64}$"


class GpuDirectTrust(StrictModel):
    """GCP GPUDirect-TCPXO (A3 Mega): the pieces only trusted on first use, each accepted by its own field."""

    trust_google_images: bool = False
    """Run Google's RxDM and TCPXO NCCL plugin installer containers (us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo), which Google publishes by tag only: `pulumi up` pins the digest each tag names then, and every node runs exactly those bytes. Default: false (A3 Mega falls back to NCCL over TCP)."""
    allow_secure_boot_off: bool = False
    """Boot A3 Mega nodes without Secure Boot (vTPM and integrity monitoring stay on): the dmabuf import helper is built on the node by DKMS from Google's signed source package and is not signed itself. Default: false."""
    rxdm_image_digest: str | None = Field(None, pattern=DIGEST_PATTERN)
    """Pin RxDM (tcpgpudmarxd-dev) to this digest instead of the one its tag names at `pulumi up`. Default: none."""
    nccl_plugin_image_digest: str | None = Field(None, pattern=DIGEST_PATTERN)
    """Pin the TCPXO NCCL plugin installer to this digest instead of the one its tag names at `pulumi up`. Default: none."""
