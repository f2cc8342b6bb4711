"""AWS rules that need the catalog's choice of instance type (spec-only rules live in gpufleet.spec)."""

from __future__ import annotations

from ..catalog.selector import Selection
from ..spec.errors import Problem
from .capacity import capacity_block_problems


def selection_problems(selection: Selection) -> list[Problem]:
    return capacity_block_problems(selection.spec, selection.instance.name)
