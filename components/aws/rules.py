"""AWS's own rules, checked by the pipeline before anything is declared; one function each (R5, R7).

Every limit is data with its source:
- VPC CIDR blocks are /16 to /28 (Amazon VPC User Guide, "VPC CIDR blocks"); gpufleet's layout puts the node
  subnet in the first quarter (at most /26) and the NAT subnet in the last /28, so it needs a /24 or larger, and
  AWS reserves 5 addresses in every subnet ("Subnet CIDR blocks").
- Tags: keys up to 128 characters, values up to 256; `aws:` is reserved (EC2 User Guide, "Tag restrictions").
- Key pairs: EC2 imports RSA (2048 bits or more) and ED25519 keys, not ECDSA (EC2 User Guide, "Import a public
  key to Amazon EC2").
- Ids: `ami-` and `subnet-` followed by 8 or 17 hexadecimal digits (EC2 API, "Resource IDs").
- EFA needs a cluster placement group between its nodes (reference section 5, row 3), except in a Capacity Block,
  which fixes placement itself and refuses a placement group.
`spec_problems` needs only the spec; `plan_problems` needs the selection (the instance type and fabric).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from ipaddress import IPv4Network

from ..catalog.selector import Selection
from ..groups.plans import NodeGroupPlans
from ..spec import ClusterSpec, Problem
from ..spec.ssh import key_type_problems
from .capacity import capacity_block_problems

VPC_PREFIXES = range(16, 29)  # what AWS allows
LAYOUT_MAX_PREFIX = 24  # what gpufleet's two subnets need
PRIVATE_SUBNET_MAX_PREFIX = 26
SUBNET_RESERVED_ADDRESSES = 5
TAG_KEY_MAX = 128
TAG_VALUE_MAX = 256
AMI_ID = re.compile(r"^ami-([0-9a-f]{8}|[0-9a-f]{17})$")
SUBNET_ID = re.compile(r"^subnet-([0-9a-f]{8}|[0-9a-f]{17})$")
RESERVATION_ID = re.compile(r"^cr-([0-9a-f]{8}|[0-9a-f]{17})$")
ID_PREFIXES = {"vpc-": "a VPC", "sg-": "a security group", "igw-": "an internet gateway", "ami-": "an AMI",
               "subnet-": "a subnet", "eni-": "a network interface"}


def private_subnet(cidr: IPv4Network) -> IPv4Network:
    """The node subnet gpufleet carves from the VPC range: its first quarter, at most a /26."""
    return next(cidr.subnets(new_prefix=min(cidr.prefixlen + 2, PRIVATE_SUBNET_MAX_PREFIX)))


def vpc_cidr_fits(spec: ClusterSpec, nodes: int | None = None, counted: str = "`nodes`") -> list[Problem]:
    """`nodes`, `counted`: how many addresses the node subnet must hold and what counts them (a cluster of node
    groups: all its groups' nodes)."""
    cidr = spec.network.cidr
    nodes = spec.nodes if nodes is None else nodes
    if spec.network.existing_subnet_id:
        return []
    if cidr.prefixlen not in VPC_PREFIXES or cidr.prefixlen > LAYOUT_MAX_PREFIX:
        return [Problem("network.cidr", str(cidr), f"AWS VPCs are /{VPC_PREFIXES[0]} to /{VPC_PREFIXES[-1]}, and "
                        f"gpufleet's node and NAT subnets need a /{LAYOUT_MAX_PREFIX} or larger; e.g. 10.0.0.0/16")]
    usable = private_subnet(cidr).num_addresses - SUBNET_RESERVED_ADDRESSES
    if usable < nodes:
        return [Problem("network.cidr", str(cidr), f"its node subnet {private_subnet(cidr)} has {usable} usable "
                        f"addresses (AWS reserves {SUBNET_RESERVED_ADDRESSES}), fewer than {counted} ({nodes}); "
                        "use a larger range")]
    return []


def tags_fit_aws(spec: ClusterSpec) -> list[Problem]:
    problems = [Problem(f"tags.{key}", key, f"AWS tag keys are at most {TAG_KEY_MAX} characters")
                for key in spec.tags if len(key) > TAG_KEY_MAX]
    problems += [Problem(f"tags.{key}", value, f"AWS tag values are at most {TAG_VALUE_MAX} characters")
                 for key, value in spec.tags.items() if len(value) > TAG_VALUE_MAX]
    return problems


def key_pair_is_importable(spec: ClusterSpec) -> list[Problem]:
    return key_type_problems(spec.access.ssh_public_key, "EC2 imports", "EC2")


def ids_have_aws_shapes(spec: ClusterSpec) -> list[Problem]:
    checks = (("image.id", spec.image.id, AMI_ID, "an AMI id like ami-0123456789abcdef0 (not an AMI name)"),
              ("network.existing_subnet_id", spec.network.existing_subnet_id, SUBNET_ID,
               "a subnet id like subnet-0123456789abcdef0"),
              ("market.capacity_reservation_id", spec.market.capacity_reservation_id, RESERVATION_ID,
               "a capacity reservation id like cr-0123456789abcdef0"))
    return [Problem(path, value, f"expected {expected}{_id_hint(value, pattern)}")
            for path, value, pattern, expected in checks if value is not None and not pattern.match(value)]


def _id_hint(value: str, pattern: re.Pattern[str]) -> str:
    """Names the kind of id given when it is another resource's, e.g. a VPC id as the subnet."""
    kind = next((what for prefix, what in ID_PREFIXES.items()
                 if value.startswith(prefix) and not pattern.pattern.startswith(f"^{prefix}")), None)
    return f"; {value!r} is {kind} id" if kind else ""


def efa_nodes_are_placed_together(selection: Selection) -> list[Problem]:
    spec = selection.spec
    if (selection.fabric != "efa" or spec.nodes < 2 or selection.placement_group or spec.market.capacity_block
            or spec.market.capacity_reservation_id is not None):  # a reservation places its instances itself
        return []
    return [Problem("placement_group", False, "a multi-node EFA cluster needs a cluster placement group (without "
                    "one, EFA bandwidth between nodes falls); remove `placement_group: false`, or use `fabric: tcp`")]


SPEC_RULES: tuple[Callable[[ClusterSpec], list[Problem]], ...] = (
    vpc_cidr_fits, tags_fit_aws, key_pair_is_importable, ids_have_aws_shapes)
def capacity_block_fits(selection: Selection) -> list[Problem]:
    """Capacity Blocks exist only for some types, and a block about to end runs nothing (capacity.py)."""
    return capacity_block_problems(selection.spec, selection.instance.name)


def only_blocks_sell_the_type(selection: Selection) -> list[Problem]:
    """A type sold only through Capacity Blocks (catalog `capacity_blocks_only`) runs only inside one."""
    if not selection.instance.capacity_blocks_only or selection.spec.market.capacity_block:
        return []
    return [Problem("market.capacity_block", False, f"{selection.instance.name} is sold only through EC2 Capacity "
                    "Blocks for ML, never on demand or on Spot; buy a block, then set `market.type: on-demand`, "
                    "`market.capacity_block: true`, `market.capacity_reservation_id` (the block's cr- id) and its "
                    "`capacity_block_start` / `capacity_block_end`")]


PLAN_RULES: tuple[Callable[[Selection], list[Problem]], ...] = (efa_nodes_are_placed_together, capacity_block_fits,
                                                                only_blocks_sell_the_type)


def spec_problems(spec: ClusterSpec) -> list[Problem]:
    """Every AWS problem the spec alone shows, in rule order."""
    return [problem for rule in SPEC_RULES for problem in rule(spec)]


def plan_problems(selection: Selection) -> list[Problem]:
    """Every AWS problem with the selected instance type, fabric and placement."""
    return [problem for rule in PLAN_RULES for problem in rule(selection)]


def plan_warnings(selection: Selection) -> list[str]:
    return []


def cluster_problems(plans: NodeGroupPlans) -> list[Problem]:
    """What only the node groups together show: the node subnet holds all their nodes."""
    return vpc_cidr_fits(plans.first.spec, plans.nodes, "the node groups' nodes together")
