"""Turns the raw `gpufleet:cluster` object into a `ClusterSpec`, or one `SpecError` listing every problem."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from ..groups.checks import node_group_problems
from .errors import MISSING, Problem, SpecError
from .messages import problem_from
from .model import REQUIRED_WITHOUT_GROUPS, ClusterSpec
from .raw import raw_problems
from .rules import check_rules


def parse_cluster_spec(raw: Any) -> ClusterSpec:
    """Validates structure, shape and types, then the cross-field rules. Catalog rules run later, in the pipeline
    (`gpufleet.pipeline`); `gpufleet.pipeline.check_cluster_input` reports both stages at once."""
    if not isinstance(raw, dict):
        raise SpecError([Problem("gpufleet:cluster", raw, "expected a mapping with at least `cloud`, `region`, "
                                 "`nodes` and `accelerator`")])
    structural = raw_problems(raw)
    if structural:
        raise SpecError(structural)
    try:
        spec = ClusterSpec.model_validate(raw)
    except ValidationError as err:
        raise SpecError(in_field_order([*map(problem_from, err.errors()), *missing_problems(raw)])) from None
    problems = missing_problems(raw)
    if problems:
        raise SpecError(problems)
    if spec.node_groups is not None:
        problems = node_group_problems(spec)
    else:
        problems = check_rules(spec)
    if problems:
        raise SpecError(problems)
    return spec


def missing_problems(raw: dict[str, Any]) -> list[Problem]:
    """`nodes` and `accelerator` are required at the top level unless the spec has node groups, where each group
    may set its own (`gpufleet.groups.checks` requires them per group)."""
    if raw.get("node_groups") is not None:
        return []
    return [Problem(name, MISSING, "this field is required") for name in REQUIRED_WITHOUT_GROUPS
            if raw.get(name) is None]


def in_field_order(problems: list[Problem]) -> list[Problem]:
    """Problems in the order of their top-level field, as pydantic reports them."""
    order = {name: index for index, name in enumerate(ClusterSpec.model_fields)}
    return sorted(problems, key=lambda p: order.get(p.path.split(".")[0].split("[")[0], len(order)))


__all__ = ["parse_cluster_spec"]
