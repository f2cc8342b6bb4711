"""Cost advisories: large on-demand multi-node fleets, and idle-prone dev stacks that pay on-demand prices.

Prices are the gpufleet catalog's on-demand rows (the cheapest region when the resource does not say which).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from . import aws, azure
from .common import as_list
from .model import Finding, Resource

IGM = "gcp:compute/instanceGroupManager:InstanceGroupManager"
REGION_IGM = "gcp:compute/regionInstanceGroupManager:RegionInstanceGroupManager"
DEFAULT_MAX_ON_DEMAND_USD_PER_HOUR = 100.0
DEFAULT_DEV_MAX_USD_PER_HOUR = 5.0
DEFAULT_DEV_STACK_PATTERN = r"(^|[-_.])(dev|sandbox|scratch)([-_.]|$)"


@dataclass(frozen=True)
class Fleet:
    resource: Resource
    instance_type: str
    nodes: int
    spot: bool


def fleets(resources: list[Resource]) -> list[Fleet]:
    """Every node group a program declares, on any of the three clouds, with its size and market."""
    found = []
    by_id = {i: r for r in resources for i in r.ids()}
    for r in resources:
        if r.type == aws.ASG:
            template = by_id.get(aws.template_id(r.props) or "")
            mixed = r.props.get("mixedInstancesPolicy") or {}
            share = (mixed.get("instancesDistribution") or {}).get("onDemandPercentageAboveBaseCapacity")
            market = (template.props.get("instanceMarketOptions") or {}) if template is not None else {}
            spot = (bool(mixed) and share not in (None, 100)) or market.get("marketType") == "spot"
            overrides = as_list((mixed.get("launchTemplate") or {}).get("overrides"))
            kind = (template.props.get("instanceType") if template else None) or next(
                (o.get("instanceType") for o in overrides if isinstance(o, dict)), "")
            nodes = max(_int(r.props.get("desiredCapacity")), _int(r.props.get("minSize")))
            found.append(Fleet(r, str(kind or ""), nodes, spot))
        elif r.type == azure.VMSS:
            sku = r.props.get("sku") or {}
            priority = (r.props.get("virtualMachineProfile") or {}).get("priority")
            found.append(Fleet(r, str(sku.get("name") or ""), _int(sku.get("capacity")), priority in ("Spot", "Low")))
        elif r.type in (IGM, REGION_IGM):
            versions = as_list(r.props.get("versions"))
            ref = next((v.get("instanceTemplate") for v in versions if isinstance(v, dict)), None)
            template = by_id.get(ref or "")
            scheduling = (template.props.get("scheduling") or {}) if template else {}
            spot = scheduling.get("provisioningModel") == "SPOT" or bool(scheduling.get("preemptible"))
            kind = template.props.get("machineType") if template else ""
            found.append(Fleet(r, str(kind or ""), _int(r.props.get("targetSize")), spot))
    return found


@cache
def on_demand_usd_per_hour(instance_type: str) -> float | None:
    """The catalog's cheapest on-demand price for one node of `instance_type`, or None when it has none."""
    from ..catalog.loader import load_catalog

    prices = [p.on_demand for p in load_catalog().prices
              if p.instance_type == instance_type and p.on_demand is not None]
    return min(prices) if prices else None


def on_demand_multi_node(resources: list[Resource], config: dict):
    limit = float(config.get("max_on_demand_usd_per_hour", DEFAULT_MAX_ON_DEMAND_USD_PER_HOUR))
    for fleet in fleets(resources):
        price = on_demand_usd_per_hour(fleet.instance_type)
        if fleet.spot or fleet.nodes < 2 or price is None or price * fleet.nodes <= limit:
            continue
        yield fleet.resource, Finding(
            f"{fleet.nodes} on-demand {fleet.instance_type} nodes cost about ${price * fleet.nodes:,.2f}/h "
            f"(over ${limit:,.2f}/h)", "use spot or a mixed market, a reservation, or scale down when idle")


def dev_stack_without_spot(resources: list[Resource], config: dict):
    pattern = re.compile(str(config.get("dev_stack_pattern", DEFAULT_DEV_STACK_PATTERN)), re.IGNORECASE)
    limit = float(config.get("dev_max_usd_per_hour", DEFAULT_DEV_MAX_USD_PER_HOUR))
    for fleet in fleets(resources):
        price = on_demand_usd_per_hour(fleet.instance_type)
        if fleet.spot or not pattern.search(fleet.resource.stack) or price is None or price * fleet.nodes <= limit:
            continue
        yield fleet.resource, Finding(
            f"dev stack {fleet.resource.stack} runs {fleet.nodes} on-demand {fleet.instance_type} "
            f"(about ${price * fleet.nodes:,.2f}/h) and is likely idle much of the time",
            "use the spot market for dev stacks, or a smaller instance")


def _int(value) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0
