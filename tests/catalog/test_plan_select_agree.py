"""The plan (`selector.select`) and `gpufleet select` (`offers.rank`) are one engine: for every shipped stack's shape,
asked by GPU in the stack's own cloud, region and zone at each market, both pick the same instance type at the
same price."""

from __future__ import annotations

import copy

import pytest

from gpufleet.catalog import load_catalog
from gpufleet.catalog.cost import NodePrices, hourly_cost
from gpufleet.catalog.offers import Requirement, rank
from gpufleet.catalog.selector import select
from gpufleet.groups.resolve import group_specs
from gpufleet.plan.stackfile import read_stack_config, stack_names
from gpufleet.spec.errors import SpecError
from gpufleet.spec.parse import parse_cluster_spec

CAT = load_catalog()


def shapes():
    """Each shipped stack's shape, or each node group's (resolved) of a stack with `node_groups`."""
    for stack in stack_names():
        for group in group_specs(parse_cluster_spec(read_stack_config(stack)["gpufleet:cluster"])):
            raw = group.spec.model_dump(mode="json", exclude_none=True)
            spec = group.spec
            instance = CAT.instance(spec.cloud, spec.accelerator.instance_type)
            for market in ("on-demand", "spot"):
                if market == "spot" and raw.get("workload") == "inference":
                    continue  # spot alone is refused for inference fleets (they could drop to 0 nodes)
                by_gpu = copy.deepcopy(raw)
                by_gpu["accelerator"] = {"gpu": instance.gpu, "gpus_per_node": instance.gpus}
                by_gpu["market"] = {"type": market}
                name = f"{stack}-{group.name}" if group.name else stack
                yield pytest.param(by_gpu, id=f"{name}-{market}")


@pytest.mark.parametrize("raw", list(shapes()))
def test_plan_and_select_rank_the_same_offer_first(raw):
    spec = parse_cluster_spec(raw)
    req = Requirement(gpus=(CAT.gpu(spec.accelerator.gpu).model,), gpus_per_node=spec.accelerator.gpus_per_node,
                      nodes=spec.nodes, market=spec.market.type, fabric=spec.fabric, clouds=(spec.cloud,),
                      regions=(spec.region,), zone=spec.zone)
    ranking = rank(req, CAT)
    offers = ranking.offers
    try:
        chosen = select(spec, CAT)
    except SpecError as err:
        assert not offers, f"select refused ({err}) but rank offers {offers[0].candidate}"
        return
    price = NodePrices(on_demand=chosen.price.on_demand, spot=chosen.price.spot)
    if not offers:  # the plan may go ahead without a public price (cost n/a); select lists it as unpriced
        assert hourly_cost(spec.market.type, spec.nodes, price, spec.market.on_demand_base) is None
        assert chosen.instance.name in {o.candidate.instance.name for o in ranking.rejected if o.only_unpriced}
        return
    top = offers[0]
    assert top.candidate.instance.name == chosen.instance.name
    assert top.usd_per_hour == hourly_cost(spec.market.type, spec.nodes, price, spec.market.on_demand_base)
