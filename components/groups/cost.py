"""What a cluster of several node groups costs: one row per group at its own market, and their total.

Each group's row is `selection_cost.cluster_cost` of its plan, the same arithmetic as a one-group cluster; the
total is unknown (None) when a group's price is. The plan prints these rows (`group_cost_lines`) where a one-group
cluster prints its market comparison; each group's comparison is in the `node_groups` output.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..catalog.cost import HOURS_PER_MONTH, NodePrices, hourly_cost, round_usd
from ..catalog.selection_cost import cluster_cost
from .plans import ClusterPlan, NodeGroupPlans


@dataclass(frozen=True)
class ElasticCost:
    """An elastic group's cost: what one node costs an hour at the group's market, with `min` nodes up (idle: the
    queue is empty) and with `max` (full)."""

    usd_per_node_hour: float | None
    idle_usd_per_hour: float | None
    full_usd_per_hour: float | None

    def line(self) -> str:
        """"idle: $0.00/h, full: $220/h"."""
        return f"idle: {_money(self.idle_usd_per_hour)}/h, full: {_money(self.full_usd_per_hour)}/h"


def elastic_cost(plan: ClusterPlan) -> ElasticCost | None:
    """None for a fixed group. A mixed market's on-demand base is bought first, as the fleet buys it."""
    spec = plan.spec
    if spec.nodes_range is None:
        return None
    prices = NodePrices(on_demand=plan.price.on_demand, spot=plan.price.spot)
    base = spec.market.on_demand_base

    def at(nodes: int) -> float | None:
        return round_usd(hourly_cost(spec.market.type, nodes, prices, base))

    first = hourly_cost(spec.market.type, 1, prices, base)  # the node bought first: on demand below the base
    return ElasticCost(round_usd(first), at(spec.nodes_range.min), at(spec.nodes_range.max))


def _money(value: float | None) -> str:
    return "n/a" if value is None else f"${value:,.2f}"


def group_cost_rows(plans: NodeGroupPlans) -> list[dict]:
    """Rows: group, label, instance_type, nodes, market, chosen, on_demand_nodes, spot_nodes, usd_per_hour,
    usd_per_month, savings_pct, note; the last row's group is None: the total. An elastic group's row is at its
    `max` (full), its note says idle and full, and it has usd_per_node_hour, idle_usd_per_hour and
    full_usd_per_hour besides; a fixed group's row is as it was."""
    rows: list[dict] = []
    for plan in plans.groups:
        cost = cluster_cost(plan)
        elastic = elastic_cost(plan)
        count = f"{plan.spec.nodes_range.min}-{plan.spec.nodes_range.max}" if plan.spec.nodes_range else plan.spec.nodes
        note = "" if cost.usd_per_hour is not None else "no public price in the catalog"
        rows.append({"group": plan.group, "label": f"{plan.group or 'nodes'}: {count} x {plan.instance.name}",
                     "instance_type": plan.instance.name, "nodes": plan.spec.nodes, "market": cost.market,
                     "chosen": True, "on_demand_nodes": cost.on_demand_nodes, "spot_nodes": cost.spot_nodes,
                     "usd_per_hour": cost.usd_per_hour, "usd_per_month": cost.usd_per_month, "savings_pct": None,
                     "note": elastic.line() if elastic else note})
        if elastic:
            rows[-1].update(usd_per_node_hour=elastic.usd_per_node_hour, idle_usd_per_hour=elastic.idle_usd_per_hour,
                            full_usd_per_hour=elastic.full_usd_per_hour)
    hourly: list[float | None] = [row["usd_per_hour"] for row in rows]
    total = None if None in hourly else round_usd(sum(h for h in hourly if h is not None))
    on_demand: int = sum(row["on_demand_nodes"] for row in rows)
    spot: int = sum(row["spot_nodes"] for row in rows)
    rows.append({"group": None, "label": "total", "instance_type": None, "nodes": plans.nodes, "market": "",
                 "chosen": True, "on_demand_nodes": on_demand, "spot_nodes": spot, "usd_per_hour": total,
                 "usd_per_month": round_usd(total * HOURS_PER_MONTH) if total is not None else None,
                 "savings_pct": None, "note": "" if total is not None else "a group has no public price"})
    return rows


def group_cost_lines(rows: list[dict]) -> list[str]:
    """The groups' cost rows as fixed-width text lines for the plan."""
    lines = [f"{'node group':<44} {'market':<10} {'$/hour':>12} {'$/month':>14}"]
    for row in rows:
        money = [f"{row[k]:,.2f}" if row[k] is not None else "n/a" for k in ("usd_per_hour", "usd_per_month")]
        lines.append(f" {row['label']:<43} {row['market']:<10} {money[0]:>12} {money[1]:>14}")
        if "usd_per_node_hour" in row:  # an elastic group: its price per node-hour, idle and full
            lines.append(f"   {_money(row['usd_per_node_hour'])} per node-hour; {row['note']} (the row: full)")
    lines.append(f"($/month = {HOURS_PER_MONTH} h; n/a = no public price in the catalog; each group's other markets: "
                 "the `node_groups` output)")
    return lines


def is_group_cost(rows: list[dict]) -> bool:
    return bool(rows) and "group" in rows[0]
