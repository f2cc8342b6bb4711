"""What one selected cluster costs: the plan's cost table and the stacks' exported figures.

Kept apart from `cost`, whose arithmetic the offer engine and the selector use, so that pricing a selection (which
needs the selector's `Selection`) does not make the selector depend on itself through `cost`.
"""

from __future__ import annotations

from .cost import HOURS_PER_MONTH, ClusterCost, NodePrices, hourly_cost, market_costs, round_usd
from .loader import Catalog, load_catalog
from .selection import Selection


def cluster_cost(selection: Selection) -> ClusterCost:
    """The cluster at its own market; mixed markets pay on-demand for the base and spot for the rest."""
    spec, price = selection.spec, selection.price
    on_demand_nodes = {"on-demand": spec.nodes, "spot": 0}.get(spec.market.type, spec.market.on_demand_base)
    hourly = hourly_cost(spec.market.type, spec.nodes, NodePrices(on_demand=price.on_demand, spot=price.spot),
                         spec.market.on_demand_base)
    return ClusterCost(market=spec.market.type, usd_per_hour=round_usd(hourly),
                       usd_per_month=round_usd(hourly * HOURS_PER_MONTH if hourly is not None else None),
                       on_demand_nodes=on_demand_nodes, spot_nodes=spec.nodes - on_demand_nodes)


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
