"""What a cluster costs per hour and per month at its market, from the catalog's node prices."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from .selector import Selection

HOURS_PER_MONTH = 730


@dataclass(frozen=True)
class ClusterCost:
    """USD for the whole cluster; None where the catalog lacks a price the market needs."""

    market: str
    usd_per_hour: Optional[float]
    usd_per_month: Optional[float]
    on_demand_nodes: int
    spot_nodes: int


def cluster_cost(selection: Selection) -> ClusterCost:
    """Mixed markets pay on-demand for the base and spot for the rest."""
    spec, price = selection.spec, selection.price
    if spec.market.type == "on-demand":
        on_demand_nodes = spec.nodes
    elif spec.market.type == "spot":
        on_demand_nodes = 0
    else:
        on_demand_nodes = spec.market.on_demand_base
    spot_nodes = spec.nodes - on_demand_nodes
    hourly = _sum(on_demand_nodes, price.on_demand) if on_demand_nodes else 0.0
    if spot_nodes and hourly is not None:
        spot_part = _sum(spot_nodes, price.spot)
        hourly = None if spot_part is None else hourly + spot_part
    return ClusterCost(market=spec.market.type, usd_per_hour=_round(hourly),
                       usd_per_month=_round(hourly * HOURS_PER_MONTH if hourly is not None else None),
                       on_demand_nodes=on_demand_nodes, spot_nodes=spot_nodes)


def _sum(nodes: int, price: Optional[float]) -> Optional[float]:
    return None if price is None else nodes * price


def _round(value: Optional[float]) -> Optional[float]:
    return None if value is None else round(value, 2)
