"""Stack outputs for monitoring on every cloud: the dashboards and the alert rules, for users with their own Grafana
and Prometheus, and how to open the server's Grafana when the stack has one."""

from __future__ import annotations

from typing import Any

from ..catalog.selector import Selection
from ..spec.monitoring import server_enabled
from .dashboard_cache import dashboards
from .pricing import NodePricing
from .scrape import ALERT_RULES


def node_pricing(selection: Selection) -> NodePricing:
    """Catalog prices per node at the chosen market, independent of the node count (0 where the catalog has no
    price: the cost panels then read 0 and the stack's `warnings` say why)."""
    market, price = selection.spec.market, selection.price
    on_demand, spot = price.on_demand or 0.0, price.spot or 0.0
    if market.type == "mixed":
        return NodePricing(usd_per_node_hour=spot, usd_per_base_node_hour=on_demand, base_nodes=market.on_demand_base)
    return NodePricing(usd_per_node_hour=spot if market.type == "spot" else on_demand)


def stack_dashboards(selection: Selection) -> dict[str, str]:
    """The Slurm row only where the monitoring server scrapes a Slurm controller (nothing else can reach it)."""
    spec = selection.spec
    slurm = spec.scheduler.kind == "slurm" and server_enabled(spec.monitoring, spec.nodes, selection.fabric)
    return dashboards(node_pricing(selection), selection.instance.gpus, job_view=spec.inference is None,
                      performance=spec.node.health.performance.enabled,
                      vgpu_slice=selection.instance.is_vgpu_slice, slurm=slurm)


def monitoring_outputs(selection: Selection) -> dict[str, Any]:
    return {"grafana_dashboards": stack_dashboards(selection), "prometheus_alert_rules": ALERT_RULES.read_text()}
