"""A cluster without `scheduler` plans exactly as before: the section's default declares and renders nothing."""

import json

import pytest

from gpufleet.plan.stackfile import CLUSTER_KEY, read_stack_config

from ..plan.plan_docs import STACKS, plan_doc

WITHOUT_SLURM = [stack for stack in STACKS if read_stack_config(stack)[CLUSTER_KEY].get("scheduler") is None]



@pytest.mark.parametrize("stack", WITHOUT_SLURM)
def test_scheduler_none_plans_byte_identically_to_no_scheduler(stack):
    assert json.dumps(plan_doc(stack), sort_keys=True) == json.dumps(plan_doc(stack, "scheduler.kind=none"),
                                                                     sort_keys=True)


def test_the_team_and_burst_stacks_are_the_ones_shipped_with_slurm():
    assert sorted(set(STACKS) - set(WITHOUT_SLURM)) == ["aws-team", "gcp-burst"]


@pytest.mark.parametrize("stack", WITHOUT_SLURM)
def test_no_shipped_stack_declares_slurm(stack):
    """Nothing declared or exported mentions Slurm (but in the stack that asks for it); the plan's warnings may cite
    Slurm blueprints as sources."""
    doc = plan_doc(stack)
    outputs = {key: value for key, value in doc["outputs"].items() if key != "warnings"}
    text = json.dumps([doc["resources"], outputs]).lower()
    assert "slurm" not in text and "munge" not in text
