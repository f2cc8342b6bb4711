"""A cluster without `scheduler` plans exactly as before: the section's default declares and renders nothing."""

import json

import pytest

from ..plan.plan_docs import STACKS, plan_doc


@pytest.mark.parametrize("stack", STACKS)
def test_scheduler_none_plans_byte_identically_to_no_scheduler(stack):
    assert json.dumps(plan_doc(stack), sort_keys=True) == json.dumps(plan_doc(stack, "scheduler.kind=none"),
                                                                     sort_keys=True)


@pytest.mark.parametrize("stack", STACKS)
def test_no_shipped_stack_declares_slurm(stack):
    """Nothing declared or exported mentions Slurm; the plan's warnings may cite Slurm blueprints as sources."""
    doc = plan_doc(stack)
    outputs = {key: value for key, value in doc["outputs"].items() if key != "warnings"}
    text = json.dumps([doc["resources"], outputs]).lower()
    assert "slurm" not in text and "munge" not in text
