"""GCP rules, checked after the catalog selection and before anything is declared (R5, R7). One function each.

The selector already refuses an accelerator count the machine type does not have and a zone the catalog does
not list for the machine type (zones are names like us-central1-a on GCP).
"""

from __future__ import annotations

from typing import Callable

from ..catalog.selector import Selection
from ..spec.errors import Problem
from .image import image_problems
from .labels import label_problems
from .placement import placement_problems


def labels_are_valid(selection: Selection) -> list[Problem]:
    return label_problems(selection.spec.tags)


def image_runs_cloud_init(selection: Selection) -> list[Problem]:
    return image_problems(selection.spec)


def placement_holds_the_nodes(selection: Selection) -> list[Problem]:
    if not selection.placement_group:
        return []
    return placement_problems(selection.instance, selection.spec.nodes, selection.spec.placement_max_distance)


def distance_needs_placement(selection: Selection) -> list[Problem]:
    """A max distance without a placement policy would be dropped silently; say so instead."""
    distance = selection.spec.placement_max_distance
    if distance is None or selection.placement_group:
        return []
    return [Problem("placement_max_distance", distance, "only applies with compact placement, which this cluster does "
                    "not use (`placement_group: false`, or a single node); remove it or set `placement_group: true`")]


def market_is_one_model(selection: Selection) -> list[Problem]:
    """A managed instance group has one provisioning model; a mixed market would need two groups."""
    market = selection.spec.market
    problems = []
    if market.type == "mixed":
        problems.append(Problem("market.type", "mixed", "not supported on gcp yet: a managed instance group runs "
                                "one provisioning model; use `spot` or `on-demand`"))
    if market.spot_max_price_per_hour is not None:
        problems.append(Problem("market.spot_max_price_per_hour", market.spot_max_price_per_hour,
                                "GCP spot VMs have no maximum price (you pay the current spot price); remove it"))
    return problems


def network_is_created(selection: Selection) -> list[Problem]:
    subnet = selection.spec.network.existing_subnet_id
    if subnet is None:
        return []
    return [Problem("network.existing_subnet_id", subnet, "not supported on gcp yet: gpufleet creates the primary VPC "
                    "together with the GPU VPCs, Cloud Router and NAT; remove it")]


# GPUDirect transports gpufleet cannot start on the node yet. TCPX (A3 High) needs Google's TCPX-patched kernel
# (`linux-gcp-tcpx`, from a Canonical PPA behind credentials) and the RxDM container; TCPXO (A3 Mega) needs the
# dmabuf-import-helper module (built by DKMS, unsigned, so Secure Boot must be off), the /dev/aperture_devices udev
# rules, RxDM and the plugin installer, pinned by digest at versions Google documents together. A forced NCCL_NET
# whose plugin cannot run makes NCCL fail instead of falling back, so these are refused, never half-configured.
UNDELIVERED_GPUDIRECT = {
    "tcpx": "GPUDirect-TCPX needs Google's TCPX-patched kernel and the RxDM receive-datapath manager",
    "tcpxo": "GPUDirect-TCPXO needs the unsigned dmabuf-import-helper module (Secure Boot off), the aperture "
             "device udev rules and the RxDM receive-datapath manager",
}


def gpudirect_is_deliverable(selection: Selection) -> list[Problem]:
    """`fabric: gpudirect` only where the node stack can start the transport (A3 Ultra / A4 RoCE today)."""
    missing = UNDELIVERED_GPUDIRECT.get(selection.fabric or "")
    if selection.spec.fabric != "gpudirect" or missing is None:
        return []
    return [Problem("fabric", "gpudirect", f"not delivered by gpufleet on {selection.instance.name} yet: {missing}, "
                    "which gpufleet does not install; use `fabric: tcp` (NCCL over the host NIC) or an A3 Ultra / "
                    "A4 type (`a3-ultragpu-8g`, `a4-highgpu-8g`) whose RoCE fabric gpufleet sets up")]


RULES: tuple[Callable[[Selection], list[Problem]], ...] = (
    gpudirect_is_deliverable,
    labels_are_valid,
    image_runs_cloud_init,
    placement_holds_the_nodes,
    distance_needs_placement,
    market_is_one_model,
    network_is_created,
)


def gcp_problems(selection: Selection) -> list[Problem]:
    """Every GCP-specific problem with the selected spec, in rule order."""
    return [problem for rule in RULES for problem in rule(selection)]


def gcp_warnings(selection: Selection) -> list[str]:
    """Things gpufleet does on GCP that the user should know about, but that are not errors."""
    warnings = []
    if selection.fabric in UNDELIVERED_GPUDIRECT:
        warnings.append(f"{selection.instance.name}: {UNDELIVERED_GPUDIRECT[selection.fabric]}, which gpufleet does "
                        "not install; its nodes run NCCL over TCP on the host NIC (set `fabric: tcp` to say so)")
    if selection.spec.access.ssh_public_key is not None:
        warnings.append("`access.ssh_public_key` is not installed on GCP: nodes use OS Login, so add the key to your "
                        "OS Login profile (`gcloud compute os-login ssh-keys add --key-file=KEY.pub`) or let "
                        "`gcloud compute ssh` create one")
    return warnings
