"""Rules that relate spec fields to each other. Each rule is one small function with its own test (R7).

Rules that need the instance catalog (unknown GPU, EFA support, zones) live in `components/catalog/selector.py`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from ipaddress import IPv4Network

from ..catalog.zones import aws_zone_id_prefix, aws_zone_in_region  # the one AWS zone parser
from .elastic_rules import ELASTIC_RULES
from .errors import Problem
from .inference_rules import INFERENCE_RULES
from .lifecycle_rules import LIFECYCLE_RULES
from .model import ClusterSpec
from .scheduler_rules import SCHEDULER_RULES
from .storage_rules import STORAGE_RULES  # storage, permissions, existing networks

CLOUD_FABRICS = {"aws": ("efa",), "azure": ("infiniband",), "gcp": ("gpudirect",)}
ZONAL_CLOUDS = ("aws", "gcp")
ANYWHERE = IPv4Network("0.0.0.0/0")
# Letters of any script, digits and _.:/=+@- fit every cloud's tag keys (GCP labels are checked in gcp/rules.py).
TAG_KEY = re.compile(r"^[\w.:/=+@-]{1,63}$")
# Region names as each cloud spells them (AWS "Regions and Zones"; Azure `az account list-locations`; GCP
# "Regions and zones"): a region of another cloud is named as such instead of failing later as a bad zone.
REGION_SHAPES = {
    "aws": (re.compile(r"^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-\d$"), "an AWS region like 'us-east-2'"),
    "azure": (re.compile(r"^[a-z]+[a-z0-9]*$"), "an Azure region like 'eastus' or 'westeurope'"),
    "gcp": (re.compile(r"^[a-z]+-[a-z]+\d+$"), "a GCP region like 'us-central1'"),
}


def accelerator_is_named(spec: ClusterSpec) -> list[Problem]:
    acc = spec.accelerator
    if acc.gpu is None and acc.instance_type is None:
        return [Problem("accelerator", acc.model_dump(exclude_defaults=True), "set `gpu` (with `gpus_per_node`) or `instance_type`")]
    return []


def ssh_from_anywhere_is_opt_in(spec: ClusterSpec) -> list[Problem]:
    return [
        Problem(f"access.ssh_cidrs[{i}]", str(cidr), "0.0.0.0/0 opens SSH to the internet; list your own CIDRs, "
                "or set `access.allow_ssh_from_anywhere: true` to accept that")
        for i, cidr in enumerate(spec.access.ssh_cidrs)
        if cidr == ANYWHERE and not spec.access.allow_ssh_from_anywhere
    ]


def monitoring_from_anywhere_is_opt_in(spec: ClusterSpec) -> list[Problem]:
    return [
        Problem(f"access.monitoring_cidrs[{i}]", str(cidr), "0.0.0.0/0 opens the exporters to the internet; list "
                "your Prometheus server's CIDRs, or set `access.allow_monitoring_from_anywhere: true` to accept that")
        for i, cidr in enumerate(spec.access.monitoring_cidrs)
        if cidr == ANYWHERE and not spec.access.allow_monitoring_from_anywhere
    ]


def cidr_lists_have_no_duplicates(spec: ClusterSpec) -> list[Problem]:
    """A CIDR listed twice becomes two identical firewall rules, which AWS refuses (InvalidPermission.Duplicate)."""
    problems = []
    for field in ("ssh_cidrs", "monitoring_cidrs"):
        seen: dict[IPv4Network, int] = {}
        for i, cidr in enumerate(getattr(spec.access, field)):
            if cidr in seen:
                problems.append(Problem(f"access.{field}[{i}]", str(cidr), f"already listed as "
                                        f"`access.{field}[{seen[cidr]}]`; list each CIDR once"))
            seen.setdefault(cidr, i)
    return problems


def region_fits_cloud(spec: ClusterSpec) -> list[Problem]:
    pattern, expected = REGION_SHAPES[spec.cloud]
    if pattern.match(spec.region):
        return []
    other = [cloud for cloud, (shape, _) in REGION_SHAPES.items() if cloud != spec.cloud and shape.match(spec.region)]
    hint = f" ({spec.region!r} looks like a region of {' or '.join(other)}; check `cloud`)" if other else ""
    return [Problem("region", spec.region, f"expected {expected}{hint}")]


def zone_is_pinned(spec: ClusterSpec) -> list[Problem]:
    if spec.cloud in ZONAL_CLOUDS and spec.zone is None:
        return [Problem("zone", None, f"required on {spec.cloud}: RDMA traffic cannot cross zones, and a zone chosen "
                        f"for you could change and replace every node; e.g. `zone: {example_zone(spec)}`")]
    return []


def zone_is_in_region(spec: ClusterSpec) -> list[Problem]:
    if spec.zone is None or region_fits_cloud(spec):
        return []  # a region of the wrong shape is reported once, on `region`
    if spec.cloud == "azure":
        ok = spec.zone in ("1", "2", "3")
        expected = "an Azure zone number: '1', '2' or '3'"
    elif spec.cloud == "aws":
        # Regular zones (us-east-1a, use1-az4) and Local/Wavelength Zones (us-east-1-atl-2a, use1-atl2-az1).
        ok = aws_zone_in_region(spec.zone, spec.region)
        expected = (f"a zone of region {spec.region!r}: an AZ name like {example_zone(spec)!r} "
                    f"or an AZ id like '{aws_zone_id_prefix(spec.region)}-az1'")
    else:
        ok = bool(re.fullmatch(re.escape(spec.region) + r"-[a-z]", spec.zone))
        expected = f"a zone of region {spec.region!r}, e.g. {example_zone(spec)!r}"
    return [] if ok else [Problem("zone", spec.zone, f"expected {expected}")]


def fabric_fits_cloud(spec: ClusterSpec) -> list[Problem]:
    allowed = ("auto", "tcp") + CLOUD_FABRICS[spec.cloud]
    if spec.fabric not in allowed:
        return [Problem("fabric", spec.fabric, f"expected one of {', '.join(repr(f) for f in allowed)} on {spec.cloud}")]
    return []


def market_fields_fit_type(spec: ClusterSpec) -> list[Problem]:
    market = spec.market
    problems = []
    if market.type == "mixed":
        if market.on_demand_base >= spec.nodes:
            problems.append(Problem("market.on_demand_base", market.on_demand_base,
                                    f"must be below `nodes` ({spec.nodes}) for a mixed market; use `market: on-demand` "
                                    "for an all on-demand cluster"))
    elif market.on_demand_base:
        problems.append(Problem("market.on_demand_base", market.on_demand_base, "only applies to `market.type: mixed`"))
    if market.type != "on-demand" and market.capacity_reservation_id:
        problems.append(Problem("market.capacity_reservation_id", market.capacity_reservation_id,
                                "a capacity reservation is bought on demand; set `market.type: on-demand`"))
    if market.capacity_block and not market.capacity_reservation_id:
        problems.append(Problem("market.capacity_block", True, "requires `market.capacity_reservation_id` (cr-...)"))
    if market.spot_max_price_per_hour is not None and market.type == "on-demand":
        problems.append(Problem("market.spot_max_price_per_hour", market.spot_max_price_per_hour,
                                "only applies to `market.type: spot` or `mixed`"))
    return problems


def placement_distance_is_gcp(spec: ClusterSpec) -> list[Problem]:
    if spec.placement_max_distance is not None and spec.cloud != "gcp":
        return [Problem("placement_max_distance", spec.placement_max_distance, "only applies to gcp compact placement")]
    return []


def capacity_block_is_aws(spec: ClusterSpec) -> list[Problem]:
    if spec.market.capacity_block and spec.cloud != "aws":
        return [Problem("market.capacity_block", True, "Capacity Blocks exist only on aws")]
    return []


def tags_are_valid(spec: ClusterSpec) -> list[Problem]:
    return [
        Problem(f"tags.{key}", key, "tag keys are 1-63 characters of letters, digits and _.:/=+@-")
        for key in spec.tags
        if not TAG_KEY.match(key) or key.lower().startswith(("aws:", "gpufleet-"))
    ]


def example_zone(spec: ClusterSpec) -> str:
    return {"aws": f"{spec.region}a", "gcp": f"{spec.region}-a", "azure": "1"}[spec.cloud]


RULES: tuple[Callable[[ClusterSpec], list[Problem]], ...] = (
    accelerator_is_named,
    ssh_from_anywhere_is_opt_in,
    monitoring_from_anywhere_is_opt_in,
    cidr_lists_have_no_duplicates,
    region_fits_cloud,
    zone_is_pinned,
    zone_is_in_region,
    fabric_fits_cloud,
    market_fields_fit_type,
    capacity_block_is_aws,
    placement_distance_is_gcp,
    tags_are_valid,
    *LIFECYCLE_RULES,
    *INFERENCE_RULES,
    *SCHEDULER_RULES,
    *ELASTIC_RULES,
)


def check_rules(spec: ClusterSpec) -> list[Problem]:
    """Every cross-field problem in `spec`, in rule order."""
    return [problem for rule in (*RULES, *STORAGE_RULES) for problem in rule(spec)]
