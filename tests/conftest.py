"""Shared fixtures: a fresh mock runtime per test, and the plan of a spec."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from components.plan.runner import PlanResult, run_program  # noqa: E402


def plan_spec(spec: dict, stack: str = "test", extra_config: dict | None = None) -> PlanResult:
    """Runs `__main__.py` for `spec` under a fresh mock runtime (preview=False) and returns what it declared."""
    return run_program(stack, {"gpufleet:cluster": spec, **(extra_config or {})})


@pytest.fixture
def plan():
    """`plan(spec_dict)` -> PlanResult, each call on a fresh mock runtime."""
    return plan_spec
