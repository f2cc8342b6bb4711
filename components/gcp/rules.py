"""GCP rules, checked after the catalog selection and before anything is declared (R5, R7). One function each.

The selector already refuses an accelerator count the machine type does not have and a zone the catalog does
not list for the machine type (zones are names like us-central1-a on GCP).
"""

from __future__ import annotations

from collections.abc import Callable
from ipaddress import IPv4Network

from ..catalog.selector import Selection
from ..groups.plans import NodeGroupPlans
from ..spec import ClusterSpec
from ..spec.errors import Problem
from .fabric import subnet_cidrs, vpc_layout
from .gpudirect.delivery import delivery_problems, delivery_warnings
from .image import boot_image, image_problems
from .labels import label_problems
from .placement import placement_plan, placement_problems

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


def primary_range_fits(spec: ClusterSpec, nodes: int | None = None, counted: str = "`nodes`") -> list[Problem]:
    """`nodes`, `counted`: how many addresses the range must hold and what counts them (a cluster of node groups:
    all its groups' nodes)."""
    cidr = spec.network.cidr
    nodes = spec.nodes if nodes is None else nodes
    if not SUBNET_MIN_PREFIX <= cidr.prefixlen <= SUBNET_MAX_PREFIX:
        return [Problem("network.cidr", str(cidr), f"GCP subnet ranges are /{SUBNET_MAX_PREFIX} or larger, and "
                        f"gpufleet needs room for its GPU subnets beside a range of /{SUBNET_MIN_PREFIX} or smaller; "
                        "e.g. 10.0.0.0/16")]
    usable = cidr.num_addresses - SUBNET_RESERVED_ADDRESSES
    if usable < nodes:
        return [Problem("network.cidr", str(cidr), f"holds {usable} usable addresses (GCP reserves "
                        f"{SUBNET_RESERVED_ADDRESSES}), fewer than {counted} ({nodes}); use a larger range")]
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


def gpudirect_is_deliverable(selection: Selection) -> list[Problem]:
    """`fabric: gpudirect` on A3 only where the node stack starts the transport: A3 Mega's TCPXO once the spec accepts
    what it needs (gpudirect/delivery.py, whose sources.py says where each piece comes from); never A3 High's TCPX.
    A forced NCCL transport whose pieces are missing makes NCCL fail instead of falling back, so it is refused here,
    never half-configured."""
    return delivery_problems(selection)


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


def cluster_problems(plans: NodeGroupPlans) -> list[Problem]:
    """What only the node groups together show: the primary range holds all their nodes, the placement policy all
    the placed groups' nodes, and the groups on a GPU fabric need the same networks."""
    problems = primary_range_fits(plans.first.spec, plans.nodes, "the node groups' nodes together")
    placed = plans.placed
    placed_nodes = sum(plan.spec.nodes for plan in placed)
    if placed and placed_nodes > placement_plan(placed[0].instance, plans.first.spec.placement_max_distance).max_vms:
        cap = placement_plan(placed[0].instance, plans.first.spec.placement_max_distance).max_vms
        problems.append(Problem("node_groups", {plan.group: plan.spec.nodes for plan in placed},
                                f"the cluster's placement policy for {placed[0].instance.name} holds at most {cap} "
                                f"VMs, fewer than its groups' {placed_nodes} nodes; use fewer nodes, or set "
                                "`placement_group: false`"))
    fabric_groups = [plan for plan in plans.groups if plan.fabric is not None]
    for plan in fabric_groups[1:]:
        if vpc_layout(plan.instance, plan.fabric) != vpc_layout(fabric_groups[0].instance, fabric_groups[0].fabric):
            problems.append(Problem(f"node_groups.{plan.group}.accelerator", plan.instance.name, "needs other GPU "
                                    f"networks than node group {fabric_groups[0].group!r} "
                                    f"({fabric_groups[0].instance.name}), and a cluster's networks are laid out once; "
                                    "choose the same machine family, or put it in a cluster of its own"))
    return problems


def plan_warnings(selection: Selection) -> list[str]:
    """Things gpufleet does on GCP that the user should know about, but that are not errors."""
    warnings = []
    warnings += delivery_warnings(selection)
    if selection.spec.access.ssh_public_key is not None:
        warnings.append("`access.ssh_public_key` is not installed on GCP: nodes use OS Login, so add the key to your "
                        "OS Login profile (`gcloud compute os-login ssh-keys add --key-file=KEY.pub`) or let "
                        "`gcloud compute ssh` create one")
    image = boot_image(selection.spec)
    return [*warnings, *([image.warning] if image.warning else [])]
