"""Stack outputs for monitoring on every cloud: the dashboards and the alert rules, for users with their own Grafana
and Prometheus, and how to open the server's Grafana when the stack has one."""

from __future__ import annotations

from typing import Any

from ..catalog.selector import Selection
from ..groups.plans import NodeGroupPlans
from .dashboard_cache import dashboards
from .pricing import ElasticGroup, GroupPricing, NodePricing
from .scrape import ALERT_RULES
from .secrets import server_wanted


def node_pricing(selection: Selection) -> NodePricing:
    """Catalog prices per node at the chosen market, independent of the node count (0 where the catalog has no
    price: the cost panels then read 0 and the stack's `warnings` say why)."""
    market, price = selection.spec.market, selection.price
    on_demand, spot = price.on_demand or 0.0, price.spot or 0.0
    if market.type == "mixed":
        return NodePricing(usd_per_node_hour=spot, usd_per_base_node_hour=on_demand, base_nodes=market.on_demand_base)
    return NodePricing(usd_per_node_hour=spot if market.type == "spot" else on_demand)


def stack_dashboards(plans: NodeGroupPlans) -> dict[str, str]:
    """The Slurm row only where the monitoring server scrapes a Slurm controller (nothing else can reach it). A
    cluster of several node groups prices each group's nodes at its own rate; one group renders as before."""
    first = plans.first
    spec = first.spec
    slurm = spec.scheduler.kind == "slurm" and server_wanted(plans)
    groups = tuple(GroupPricing(plan.group, node_pricing(plan), plan.instance.gpus)
                   for plan in plans.groups) if plans.grouped else ()
    elastic = tuple(ElasticGroup(plan.group or plan.spec.scheduler.slurm.partition, plan.instance.gpus,
                                 node_pricing(plan).usd_per_node_hour, plan.spec.nodes_range.min,
                                 plan.spec.nodes_range.max)
                    for plan in plans.groups if plan.spec.nodes_range is not None) if slurm else ()
    return dashboards(node_pricing(first), first.instance.gpus, job_view=spec.inference is None,
                      performance=any(plan.spec.node.health.performance.enabled for plan in plans.groups),
                      vgpu_slice=any(plan.instance.is_vgpu_slice for plan in plans.groups), slurm=slurm,
                      groups=groups, elastic=elastic)


def monitoring_outputs(plans: NodeGroupPlans) -> dict[str, Any]:
    return {"grafana_dashboards": stack_dashboards(plans), "prometheus_alert_rules": ALERT_RULES.read_text()}
