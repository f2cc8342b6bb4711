"""An elastic group's fallback instance types (`accelerator.fallback_types`): each checked like the chosen type, by
the same catalog selection and the cloud's plan rules, then against the chosen type itself, and ranked.

A fallback must carry the same GPU model, so a job's code, drivers and performance figures hold on whichever type a
resume gets, and the same fabric, since a node of another fabric could not join the group's placement and
collectives. A different GPU count is accepted only where the group has no RDMA fabric (the user asks for it by
listing the type; `--gres=gpu:N` jobs then fit only the larger nodes, which Slurm sees per node). Ranking: the
cheapest at the group's market first (what the selection ranks by), unpriced ones last, ties in the order written.
The chosen type is always tried first: it is the one the user named or `select` found cheapest.
"""

from __future__ import annotations

from collections.abc import Callable

from ..catalog.cost import NodePrices, hourly_cost
from ..catalog.loader import Catalog
from ..catalog.selection import Selection
from ..catalog.selector import select
from ..spec.errors import Problem, SpecError


def fallback_plan(selection: Selection, catalog: Catalog,
                  plan_problems: Callable[[Selection], list[Problem]]) -> tuple[tuple[str, ...], list[Problem]]:
    """(the fallback types in the order a resume tries them, problems at `accelerator.fallback_types[i]`)."""
    spec = selection.spec
    if spec.accelerator is None or not spec.accelerator.fallback_types:
        return (), []
    problems: list[Problem] = []
    own = {str(problem) for problem in plan_problems(selection)}  # the chosen type's, reported once, at their field
    accepted: list[tuple[float, int, str]] = []
    for index, name in enumerate(spec.accelerator.fallback_types):
        path = f"accelerator.fallback_types[{index}]"
        accelerator = spec.accelerator.model_copy(update={"instance_type": name, "gpu": None, "gpus_per_node": None,
                                                          "fallback_types": []})
        try:
            candidate = select(spec.model_copy(update={"accelerator": accelerator}), catalog)
        except SpecError as err:
            problems += [_at(path, name, problem) for problem in err.problems]
            continue
        found = [_at(path, name, problem) for problem in plan_problems(candidate) if str(problem) not in own]
        found += _mismatch(path, selection, candidate)
        problems += found
        if not found:
            price = hourly_cost(spec.market.type, 1, NodePrices(on_demand=candidate.price.on_demand,
                                                                spot=candidate.price.spot), min(spec.market.on_demand_base, 1))
            accepted.append((float("inf") if price is None else price, index, name))
    return tuple(name for _, _, name in sorted(accepted)), problems


def _mismatch(path: str, chosen: Selection, candidate: Selection) -> list[Problem]:
    name, main = candidate.instance.name, chosen.instance.name
    if candidate.instance.gpu != chosen.instance.gpu:
        return [Problem(path, name, f"carries {candidate.instance.gpu} GPUs; expected a type with the chosen "
                        f"{main}'s {chosen.instance.gpu}, so jobs run alike on either")]
    if candidate.fabric != chosen.fabric:
        return [Problem(path, name, f"has fabric {candidate.fabric or 'none (TCP)'}; expected the chosen {main}'s "
                        f"{chosen.fabric or 'none (TCP)'}: a group's nodes share one fabric")]
    if candidate.instance.gpus != chosen.instance.gpus and chosen.fabric is not None:
        return [Problem(path, name, f"has {candidate.instance.gpus} GPUs a node, {main} {chosen.instance.gpus}; on "
                        f"an RDMA fabric ({chosen.fabric}) a group's nodes carry the same count: expected a type with "
                        f"{chosen.instance.gpus}")]
    return []


def _at(path: str, name: str, problem: Problem) -> Problem:
    """A problem the selection found for a fallback, said at the fallback's entry."""
    where = problem.path if problem.path.startswith("accelerator") else f"`{problem.path}`"
    detail = problem.expected if problem.path.startswith("accelerator") else f"{where}: {problem.expected}"
    return Problem(path, name, detail)
