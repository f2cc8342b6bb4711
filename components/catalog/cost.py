"""What a cluster costs per hour and per month, at its market and at every other market for comparison.

All figures are USD from the catalog's node prices; None where the catalog has no public price for a market.
This module is plain arithmetic on node prices, shared by the offer engine, `gpufleet select` and serving; what
one selected cluster costs (the plan's table and the stacks' exports) is `selection_cost`, built on it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

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
            "usd_per_hour": round_usd(hourly),
            "usd_per_month": round_usd(None if hourly is None else hourly * HOURS_PER_MONTH),
            "savings_pct": _savings(hourly, reference),
            "note": "" if hourly is not None else "no public price in the catalog",
        })
    return rows


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


def round_usd(value: float | None) -> float | None:
    return None if value is None else round(value, 2)
