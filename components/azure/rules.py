"""Azure's own rules, checked before anything is declared; each returns every problem it finds (R7).

`spec_problems` needs only the spec; `selection_problems` needs the size the selector picked.
"""

from __future__ import annotations

import re

from ..catalog.selector import Selection
from ..groups.plans import NodeGroupPlans
from ..spec import ClusterSpec, Problem
from ..spec.ssh import key_type_problems
from .fabric import InfinibandPartition, infiniband_partition
from .image import floating_image_warning, image_problems
from .network import RDMA_RESERVED, SMALLEST_SUBNET_PREFIX, node_subnet_cidr, parse_subnet_id, usable_addresses
from .nodes import OS_DISK_MAX_GIB, scale_set_plans
from .placement import PLACEMENT_GROUP_MAX_VMS, SCALE_SET_MAX_VMS

AZURE_TAG_NAME_FORBIDDEN = re.compile(r"[<>%&\\?/]")
AZURE_TAG_VALUE_MAX = 256
MAX_PRICE_DECIMALS = 5
# Linux VMs take ssh-rsa keys of 2048 bits or more and ssh-ed25519 keys, not ECDSA (Azure docs, "Supported SSH key
# formats"). VNet address spaces: Azure refuses prefixes shorter than /8 ("Azure Virtual Network FAQ").
VNET_MIN_PREFIX = 8


def ssh_key_is_given(spec: ClusterSpec) -> list[Problem]:
    if spec.access.ssh_public_key:
        return []
    return [Problem("access.ssh_public_key", None, "required on azure: a Linux VM needs an SSH key or a password, and "
                    "gpufleet turns passwords off; give your OpenSSH public key (ssh-ed25519 ...)")]


def ssh_key_fits_azure(spec: ClusterSpec) -> list[Problem]:
    return key_type_problems(spec.access.ssh_public_key, "Azure Linux VMs take", "Azure")


def vnet_prefix_fits(spec: ClusterSpec) -> list[Problem]:
    cidr = spec.network.cidr
    if spec.network.existing_subnet_id or cidr.prefixlen >= VNET_MIN_PREFIX:
        return []
    return [Problem("network.cidr", str(cidr), f"Azure VNet address spaces are /{VNET_MIN_PREFIX} or smaller; use a "
                    "private range such as 10.0.0.0/16")]


def vnet_avoids_rdma_range(spec: ClusterSpec) -> list[Problem]:
    cidr = spec.network.cidr
    if spec.network.existing_subnet_id or not cidr.overlaps(RDMA_RESERVED):
        return []
    return [Problem("network.cidr", str(cidr), f"overlaps {RDMA_RESERVED}, which Azure's InfiniBand network reserves; "
                    "use a range outside it, e.g. 10.0.0.0/16")]


def subnet_holds_the_nodes(spec: ClusterSpec, nodes: int | None = None, counted: str = "`nodes`") -> list[Problem]:
    """`nodes`, `counted`: how many addresses the node subnet must hold and what counts them (a cluster of node
    groups: all its groups' nodes)."""
    cidr = spec.network.cidr
    nodes = spec.nodes if nodes is None else nodes
    if spec.network.existing_subnet_id:
        return []
    if cidr.prefixlen + 1 > SMALLEST_SUBNET_PREFIX:
        return [Problem("network.cidr", str(cidr), f"too small: the node subnet is half the VNet and Azure's smallest "
                        f"subnet is /{SMALLEST_SUBNET_PREFIX}; use a /{SMALLEST_SUBNET_PREFIX - 1} or larger")]
    subnet = node_subnet_cidr(cidr)
    if usable_addresses(subnet) < nodes:
        return [Problem("network.cidr", str(cidr), f"its node subnet {subnet} has {usable_addresses(subnet)} usable "
                        f"addresses (Azure reserves 5), fewer than {counted} ({nodes}); use a larger range")]
    return []


def existing_subnet_is_an_azure_subnet(spec: ClusterSpec) -> list[Problem]:
    subnet_id = spec.network.existing_subnet_id
    if subnet_id is None or parse_subnet_id(subnet_id):
        return []
    return [Problem("network.existing_subnet_id", subnet_id, "expected an Azure subnet resource id: /subscriptions/<id>"
                    "/resourceGroups/<group>/providers/Microsoft.Network/virtualNetworks/<vnet>/subnets/<subnet>")]


def no_capacity_reservation(spec: ClusterSpec) -> list[Problem]:
    if spec.market.capacity_reservation_id is None:
        return []
    return [Problem("market.capacity_reservation_id", spec.market.capacity_reservation_id,
                    "not supported on azure yet (capacity reservation groups); remove it")]


def tags_fit_azure(spec: ClusterSpec) -> list[Problem]:
    problems = [Problem(f"tags.{key}", key, "Azure tag names may not contain < > % & \\ ? /")
                for key in spec.tags if AZURE_TAG_NAME_FORBIDDEN.search(key)]
    problems += [Problem(f"tags.{key}", value, f"Azure tag values are at most {AZURE_TAG_VALUE_MAX} characters")
                 for key, value in spec.tags.items() if len(value) > AZURE_TAG_VALUE_MAX]
    return problems


def os_disk_fits(spec: ClusterSpec) -> list[Problem]:
    if spec.root_disk_gib <= OS_DISK_MAX_GIB:
        return []
    return [Problem("root_disk_gib", spec.root_disk_gib, f"Azure OS disks are at most {OS_DISK_MAX_GIB} GiB; use a "
                    "smaller root disk (ND and NC sizes also bring local NVMe disks for data)")]


def max_price_has_five_decimals(spec: ClusterSpec) -> list[Problem]:
    """Azure takes `billingProfile.maxPrice` in USD with at most five decimal places (Azure Spot VMs, "Pricing")."""
    price = spec.market.spot_max_price_per_hour
    if price is None or round(price, MAX_PRICE_DECIMALS) == price:
        return []
    return [Problem("market.spot_max_price_per_hour", price, f"Azure takes a max price with at most "
                    f"{MAX_PRICE_DECIMALS} decimal places, e.g. {round(price, MAX_PRICE_DECIMALS)}")]


SPEC_RULES = (ssh_key_is_given, ssh_key_fits_azure, vnet_prefix_fits, os_disk_fits, max_price_has_five_decimals, vnet_avoids_rdma_range, subnet_holds_the_nodes, existing_subnet_is_an_azure_subnet,
              no_capacity_reservation, tags_fit_azure, image_problems)


def spec_problems(spec: ClusterSpec) -> list[Problem]:
    return [problem for rule in SPEC_RULES for problem in rule(spec)]


def partition_fits_one_placement_group(selection: Selection, partition: InfinibandPartition | None) -> list[Problem]:
    spec = selection.spec
    if partition is None or spec.nodes <= PLACEMENT_GROUP_MAX_VMS:
        return []
    return [Problem("nodes", spec.nodes, f"InfiniBand links ({selection.instance.name}) form only inside one placement "
                    f"group, which holds {PLACEMENT_GROUP_MAX_VMS} VMs (300 after an Azure support request); use at "
                    f"most {PLACEMENT_GROUP_MAX_VMS} nodes, or `fabric: tcp` for up to {SCALE_SET_MAX_VMS} nodes "
                    "without InfiniBand")]


def scale_sets_fit(selection: Selection) -> list[Problem]:
    largest = max(plan.capacity for plan in scale_set_plans(selection))
    if largest <= SCALE_SET_MAX_VMS:
        return []
    return [Problem("nodes", selection.spec.nodes, f"one Azure scale set holds at most {SCALE_SET_MAX_VMS} VMs; use "
                    f"at most {SCALE_SET_MAX_VMS} nodes per stack")]


def mixed_market_without_infiniband(selection: Selection, partition: InfinibandPartition | None) -> list[Problem]:
    if selection.spec.market.type != "mixed" or partition is None:
        return []
    return [Problem("market.type", "mixed", f"on azure a mixed market needs two scale sets, and InfiniBand links "
                    f"({selection.instance.name}) do not cross scale sets; use `market: spot` or `on-demand`, or "
                    "`fabric: tcp` to run without InfiniBand")]


def size_runs_gpufleet_node_software(selection: Selection) -> list[Problem]:
    """A size whose GPUs need another driver than NVIDIA's datacenter one (GRID, AMD's ROCm): the catalog says why."""
    why = selection.instance.unsupported_driver
    if why is None:
        return []
    return [Problem("accelerator", selection.instance.name, f"this size {why}, nor does the HPC image; pick an NC "
                    "or ND size with NVIDIA's datacenter driver")]


def plan_problems(selection: Selection) -> list[Problem]:
    """Every Azure problem with the selected size, fabric and placement."""
    partition = infiniband_partition(selection.spec, selection.instance)
    return [*partition_fits_one_placement_group(selection, partition), *scale_sets_fit(selection),
            *mixed_market_without_infiniband(selection, partition), *size_runs_gpufleet_node_software(selection)]


def cluster_problems(plans: NodeGroupPlans) -> list[Problem]:
    """What only the node groups together show: the node subnet holds all their nodes, and no group's scale set
    takes another's name (group `a`'s spot set and group `a-spot`'s set are both `<name>-a-spot-nodes`)."""
    problems = subnet_holds_the_nodes(plans.first.spec, plans.nodes, "the node groups' nodes together")
    owners: dict[str, str] = {}
    for plan in plans.groups:
        for scale_set in scale_set_plans(plan):
            role = f"{plan.group}-{scale_set.role}"
            if role in owners:
                problems.append(Problem(f"node_groups.{plan.group}", plan.group, f"its scale set would be named like "
                                        f"node group {owners[role]!r}'s ({role}); rename the group"))
            owners.setdefault(role, plan.group)
    return problems


def plan_warnings(selection: Selection) -> list[str]:
    warnings = floating_image_warning(selection.spec)
    if selection.spec.network.existing_subnet_id:
        warnings.append("existing subnet: its VNet range (must not overlap 172.16.0.0/16, which InfiniBand reserves) "
                        "and its egress are not checked or created by gpufleet")
    return warnings
