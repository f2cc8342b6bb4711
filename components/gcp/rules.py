"""GCP rules, checked after the catalog selection and before anything is declared (R5, R7). One function each.

The selector already refuses an accelerator count the machine type does not have and a zone the catalog does
not list for the machine type (zones are names like us-central1-a on GCP).
"""

from __future__ import annotations

from collections.abc import Callable
from ipaddress import IPv4Network

from ..catalog.selector import Selection
from ..spec import ClusterSpec
from ..spec.errors import Problem
from .fabric import subnet_cidrs, vpc_layout
from .image import boot_image, image_problems
from .labels import label_problems
from .placement import placement_problems

# Subnet primary ranges: /29 is the smallest GCP allows ("Subnets", IPv4 subnet ranges), and GCP reserves 4
# addresses in each; gpufleet keeps the primary range to /8 or smaller so its GPU subnets (fabric.GPU_CIDR_POOLS)
# find room outside it.
SUBNET_MIN_PREFIX = 8
SUBNET_MAX_PREFIX = 29
SUBNET_RESERVED_ADDRESSES = 4


def labels_are_valid(spec: ClusterSpec) -> list[Problem]:
    return label_problems(spec.tags)


def image_runs_cloud_init(spec: ClusterSpec) -> list[Problem]:
    return image_problems(spec)


def primary_range_fits(spec: ClusterSpec) -> list[Problem]:
    cidr = spec.network.cidr
    if not SUBNET_MIN_PREFIX <= cidr.prefixlen <= SUBNET_MAX_PREFIX:
        return [Problem("network.cidr", str(cidr), f"GCP subnet ranges are /{SUBNET_MAX_PREFIX} or larger, and "
                        f"gpufleet needs room for its GPU subnets beside a range of /{SUBNET_MIN_PREFIX} or smaller; "
                        "e.g. 10.0.0.0/16")]
    usable = cidr.num_addresses - SUBNET_RESERVED_ADDRESSES
    if usable < spec.nodes:
        return [Problem("network.cidr", str(cidr), f"holds {usable} usable addresses (GCP reserves "
                        f"{SUBNET_RESERVED_ADDRESSES}), fewer than `nodes` ({spec.nodes}); use a larger range")]
    return []


def gpu_subnets_avoid_primary(selection: Selection) -> list[Problem]:
    """The GPU VPCs' subnets come from fixed pools outside `network.cidr`; the range must leave room for them."""
    cidr = selection.spec.network.cidr
    layout = vpc_layout(selection.instance, selection.fabric)
    try:
        ranges = subnet_cidrs(cidr, layout)
    except StopIteration:
        ranges = {}
    gpu_ranges = [r for role, r in ranges.items() if r != cidr]
    wanted = sum(len(vpc.subnet_roles) for vpc in layout) - 1
    if len(gpu_ranges) == wanted and not any(r.overlaps(cidr) or _overlap(r, gpu_ranges) for r in gpu_ranges):
        return []
    return [Problem("network.cidr", str(cidr), f"leaves no room for the {wanted} GPU subnets "
                    f"{selection.instance.name} needs (gpufleet takes them from 172.16.0.0/12, 192.168.0.0/16 and "
                    "10.0.0.0/8 outside `network.cidr`); use a /16 such as 10.0.0.0/16")]


def _overlap(block: IPv4Network, others: list[IPv4Network]) -> bool:
    return sum(1 for other in others if other.overlaps(block)) > 1


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


SPEC_RULES: tuple[Callable[[ClusterSpec], list[Problem]], ...] = (
    labels_are_valid,
    image_runs_cloud_init,
    primary_range_fits,
)
RULES: tuple[Callable[[Selection], list[Problem]], ...] = (
    gpudirect_is_deliverable,
    gpu_subnets_avoid_primary,
    placement_holds_the_nodes,
    distance_needs_placement,
    market_is_one_model,
    network_is_created,
)


def spec_problems(spec: ClusterSpec) -> list[Problem]:
    """Every GCP problem the spec alone shows, in rule order."""
    return [problem for rule in SPEC_RULES for problem in rule(spec)]


def plan_problems(selection: Selection) -> list[Problem]:
    """Every GCP-specific problem with the selected machine type, fabric and placement, in rule order."""
    return [problem for rule in RULES for problem in rule(selection)]


def plan_warnings(selection: Selection) -> list[str]:
    """Things gpufleet does on GCP that the user should know about, but that are not errors."""
    warnings = []
    if selection.fabric in UNDELIVERED_GPUDIRECT:
        warnings.append(f"{selection.instance.name}: {UNDELIVERED_GPUDIRECT[selection.fabric]}, which gpufleet does "
                        "not install; its nodes run NCCL over TCP on the host NIC (set `fabric: tcp` to say so)")
    if selection.spec.access.ssh_public_key is not None:
        warnings.append("`access.ssh_public_key` is not installed on GCP: nodes use OS Login, so add the key to your "
                        "OS Login profile (`gcloud compute os-login ssh-keys add --key-file=KEY.pub`) or let "
                        "`gcloud compute ssh` create one")
    image = boot_image(selection.spec)
    return [*warnings, *([image.warning] if image.warning else [])]
