"""What a cluster costs per hour and per month, at its market and at every other market for comparison.

All figures are USD from the catalog's node prices; None where the catalog has no public price for a market.
`cost_table` is what the plan prints and the stacks export; `market_costs` is the same arithmetic on plain
numbers, used by `gpufleet select`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .loader import Catalog, load_catalog

if TYPE_CHECKING:  # the selector prices through the offer engine, which uses this module's arithmetic
    from .selector import Selection

HOURS_PER_MONTH = 730
# The comparison rows, in the order the plan prints them.
MARKETS = ("on-demand", "spot", "mixed", "reserved-1y", "reserved-3y")


@dataclass(frozen=True)
class ClusterCost:
    """USD for the whole cluster; None where the catalog lacks a price the market needs."""

    market: str
    usd_per_hour: float | None
    usd_per_month: float | None
    on_demand_nodes: int
    spot_nodes: int


@dataclass(frozen=True)
class NodePrices:
    """USD per node-hour at one location; reserved prices are effective hourly rates of the commitment."""

    on_demand: float | None
    spot: float | None
    reserved_1y: float | None = None
    reserved_3y: float | None = None


def cluster_cost(selection: Selection) -> ClusterCost:
    """The cluster at its own market; mixed markets pay on-demand for the base and spot for the rest."""
    spec, price = selection.spec, selection.price
    on_demand_nodes = {"on-demand": spec.nodes, "spot": 0}.get(spec.market.type, spec.market.on_demand_base)
    hourly = hourly_cost(spec.market.type, spec.nodes, NodePrices(on_demand=price.on_demand, spot=price.spot),
                         spec.market.on_demand_base)
    return ClusterCost(market=spec.market.type, usd_per_hour=_round(hourly),
                       usd_per_month=_round(hourly * HOURS_PER_MONTH if hourly is not None else None),
                       on_demand_nodes=on_demand_nodes, spot_nodes=spec.nodes - on_demand_nodes)


def hourly_cost(market: str, nodes: int, prices: NodePrices, on_demand_base: int = 0) -> float | None:
    """USD per hour for `nodes` at `market`; None when a price the market needs is missing."""
    if market == "mixed":
        base = min(on_demand_base, nodes)
        parts = [(base, prices.on_demand), (nodes - base, prices.spot)]
    else:
        per_node = {"on-demand": prices.on_demand, "spot": prices.spot, "reserved-1y": prices.reserved_1y,
                    "reserved-3y": prices.reserved_3y}[market]
        parts = [(nodes, per_node)]
    if any(count and price is None for count, price in parts):
        return None
    return sum(count * price for count, price in parts if count)


def market_costs(nodes: int, prices: NodePrices, chosen: str, on_demand_base: int | None = None) -> list[dict]:
    """One row per market: $/hour, $/month and savings against on-demand. Mixed uses `on_demand_base`, or
    half the nodes (rounded up) when the cluster is not mixed."""
    base = on_demand_base if on_demand_base is not None else math.ceil(nodes / 2)
    reference = hourly_cost("on-demand", nodes, prices)
    rows = []
    for market in MARKETS:
        hourly = hourly_cost(market, nodes, prices, base)
        od_nodes = {"on-demand": nodes, "mixed": min(base, nodes)}.get(market, 0)
        spot_nodes = {"spot": nodes, "mixed": nodes - min(base, nodes)}.get(market, 0)
        rows.append({
            "market": market,
            "label": _label(market, od_nodes, spot_nodes),
            "chosen": market == chosen,
            "on_demand_nodes": od_nodes,
            "spot_nodes": spot_nodes,
            "usd_per_hour": _round(hourly),
            "usd_per_month": _round(None if hourly is None else hourly * HOURS_PER_MONTH),
            "savings_pct": _savings(hourly, reference),
            "note": "" if hourly is not None else "no public price in the catalog",
        })
    return rows


def node_prices(selection: Selection, catalog: Catalog | None = None) -> NodePrices:
    """The selection's zone prices plus the region's reserved rates, where the catalog has them."""
    catalog = catalog or load_catalog()
    rows = catalog.prices_of(selection.spec.cloud, selection.instance.name, selection.spec.region)
    return NodePrices(on_demand=selection.price.on_demand, spot=selection.price.spot,
                      reserved_1y=max((p.reserved_1y for p in rows if p.reserved_1y is not None), default=None),
                      reserved_3y=max((p.reserved_3y for p in rows if p.reserved_3y is not None), default=None))


def cost_table(selection: Selection, catalog: Catalog | None = None) -> list[dict]:
    """The cluster's cost at its market (`chosen`) and at on-demand, spot, mixed and 1/3-year reserved.

    Each row: market, label, chosen, on_demand_nodes, spot_nodes, usd_per_hour, usd_per_month, savings_pct
    (against on-demand; None when either price is missing) and note. Pure: same selection, same rows.
    """
    spec = selection.spec
    base = spec.market.on_demand_base if spec.market.type == "mixed" else None
    return market_costs(spec.nodes, node_prices(selection, catalog), spec.market.type, base)


def cost_table_lines(rows: list[dict]) -> list[str]:
    """The cost table as fixed-width text lines for the plan."""
    lines = [f"{'market':<34} {'$/hour':>12} {'$/month':>14} {'savings':>8}"]
    for row in rows:
        mark = "*" if row["chosen"] else " "
        money = [f"{row[k]:,.2f}" if row[k] is not None else "n/a" for k in ("usd_per_hour", "usd_per_month")]
        savings = f"{row['savings_pct']:.1f}%" if row["savings_pct"] is not None else "n/a"
        lines.append(f"{mark}{row['label']:<33} {money[0]:>12} {money[1]:>14} {savings:>8}")
    lines.append(f"(* = the stack's market; $/month = {HOURS_PER_MONTH} h; n/a = no public price in the catalog)")
    return lines


def _label(market: str, od_nodes: int, spot_nodes: int) -> str:
    if market == "mixed":
        return f"mixed ({od_nodes} on-demand + {spot_nodes} spot)"
    return {"reserved-1y": "reserved 1 year", "reserved-3y": "reserved 3 years"}.get(market, market)


def _savings(hourly: float | None, reference: float | None) -> float | None:
    if hourly is None or not reference:
        return None
    return round(100 * (1 - hourly / reference), 1)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)
