"""Whether a GCP node runs GPUDirect on its A3 GPU NICs, what the user must accept for it, and what the plan says.

- A3 Mega (`tcpxo`): delivered when the spec accepts the two pieces only trusted on first use or without a signature
  (`gpudirect.trust_google_images`, `gpudirect.allow_secure_boot_off`) on an Ubuntu image gpufleet installs into.
  `fabric: auto` then runs TCPXO; without them it runs NCCL over TCP on every gVNIC NIC and the plan names the fields
  that would turn TCPXO on. A forced `fabric: gpudirect` without them is refused at the first missing field.
- A3 High (`tcpx`): never delivered (sources.TCPX_PIECES): `auto` falls back, `gpudirect` is refused.
"""

from __future__ import annotations

from ...catalog.selector import Selection
from ...spec.errors import Problem
from .sources import TCPX_PIECES, TCPXO_PIECES

TCPXO, TCPX = "tcpxo", "tcpx"
GPUDIRECT_FABRICS = (TCPX, TCPXO)
# (field, what accepting it means), in the order a refusal names them.
TCPXO_OPT_INS = (
    ("gpudirect.trust_google_images", "Google's RxDM and NCCL plugin installer images, published by tag only, are "
     "pinned by the digest their tags name at `pulumi up` (or `gpudirect.rxdm_image_digest` / "
     "`gpudirect.nccl_plugin_image_digest`)"),
    ("gpudirect.allow_secure_boot_off", "the dmabuf import helper is built on the node from Google's signed DKMS "
     "source and is unsigned, so the nodes boot without Secure Boot (vTPM and integrity monitoring stay on)"),
)


def missing_opt_ins(selection: Selection) -> list[tuple[str, str]]:
    trust = selection.spec.gpudirect
    accepted = {"gpudirect.trust_google_images": trust.trust_google_images,
                "gpudirect.allow_secure_boot_off": trust.allow_secure_boot_off}
    return [(field, why) for field, why in TCPXO_OPT_INS if not accepted[field]]


def image_problem(selection: Selection) -> str | None:
    """TCPXO builds its module with apt and DKMS: only on the Ubuntu images gpufleet installs into."""
    if selection.spec.image.id is not None:
        return ("`image.id` pins an image gpufleet cannot check for apt, DKMS and the running kernel's headers; drop "
                "it (the Ubuntu accelerator image is pinned at `pulumi up`)")
    return None


def tcpxo_delivered(selection: Selection) -> bool:
    """True when this node group's nodes run GPUDirect-TCPXO."""
    return (selection.fabric == TCPXO and not missing_opt_ins(selection) and image_problem(selection) is None)


def multi_nic_fallback(selection: Selection) -> str:
    """What a node runs when GPUDirect is not delivered: NCCL over TCP on the host NIC and every GPU NIC."""
    instance = selection.instance
    return (f"NCCL over TCP on all {1 + (instance.gpu_nics or 0)} gVNIC NICs (the host NIC and {instance.gpu_nics} "
            f"GPU NICs on their own VPCs, MTU {instance.gpu_nic_mtu})")


def numbered(pieces) -> str:
    return "; ".join(f"({i}) {piece}" for i, piece in enumerate(pieces, 1))


def why_not(selection: Selection) -> str:
    """Why this A3 node does not run GPUDirect, and what would change it."""
    if selection.fabric == TCPX:
        return (f"GPUDirect-TCPX is not delivered on {selection.instance.name}: it needs {numbered(TCPX_PIECES)}; "
                "use an A3 Mega (`a3-megagpu-8g`, GPUDirect-TCPXO) or an A3 Ultra / A4 type (`a3-ultragpu-8g`, "
                "`a4-highgpu-8g`, RoCE)")
    image = image_problem(selection)
    if image:
        return f"GPUDirect-TCPXO is not delivered on {selection.instance.name}: {image}"
    fields = missing_opt_ins(selection)
    return (f"GPUDirect-TCPXO on {selection.instance.name} needs " + " and ".join(
        f"`{field}: true` ({why})" for field, why in fields))


def delivery_problems(selection: Selection) -> list[Problem]:
    """A forced `fabric: gpudirect` that cannot run is refused, at the field that would allow it."""
    if selection.spec.fabric != "gpudirect" or selection.fabric not in GPUDIRECT_FABRICS:
        return []
    if selection.fabric == TCPXO and tcpxo_delivered(selection):
        return []
    if selection.fabric == TCPXO and image_problem(selection) is None:
        field, _ = missing_opt_ins(selection)[0]
        return [Problem(field, False, f"{why_not(selection)}. Set it to accept that, or use `fabric: auto` "
                        f"({multi_nic_fallback(selection)})")]
    path = "image.id" if selection.fabric == TCPXO else "fabric"
    value = selection.spec.image.id if selection.fabric == TCPXO else "gpudirect"
    return [Problem(path, value, f"{why_not(selection)}; or use `fabric: auto` ({multi_nic_fallback(selection)}) or "
                    "`fabric: tcp` (the host NIC only)")]


def delivery_warnings(selection: Selection) -> list[str]:
    """What the plan says about an A3 node's fabric: what runs, and what is trusted for it or why it does not."""
    if selection.fabric not in GPUDIRECT_FABRICS:
        return []
    name = selection.instance.name
    if tcpxo_delivered(selection):
        trusted = "; ".join(f"{piece.name}: {piece.source}, trusting {piece.trusted}" for piece in TCPXO_PIECES)
        return [f"{name}: GPUDirect-TCPXO on its 8 GPU NICs. Where each piece comes from and what you trust: {trusted}"]
    return [f"{name}: GPUDirect is not set up, its nodes run {multi_nic_fallback(selection)}: {why_not(selection)}"]
