"""Plan documents of the shipped stacks (with `--set` overrides), made once per test process."""

from __future__ import annotations

import copy
import json
from functools import cache

from gpufleet.plan.render import plan_json
from gpufleet.plan.runner import run_program
from gpufleet.plan.stackfile import apply_overrides, read_stack_config, stack_names

STACKS = stack_names()
# `--set`s that make aws-train's user data too large for the launch template, so it goes to S3 and the plan declares
# the node config bucket (stock Ubuntu, health checks, Lustre, local NVMe, MPS).
NODE_CONFIG_IN_S3 = ("image.kind=ubuntu-24.04", "node.health.dcgm_diag=true", "node.health.nccl_allreduce=true",
                     "storage.shared.kind=lustre", "storage.local_nvme.enabled=true", "node.mps.enabled=true")


def plan_doc(stack: str, *overrides: str) -> dict:
    """`gpufleet plan STACK --set ... --json`, parsed; a fresh copy each call (tests may mutate it)."""
    return copy.deepcopy(_plan_doc(stack, overrides))


@cache
def _plan_doc(stack: str, overrides: tuple[str, ...]) -> dict:
    config = apply_overrides(read_stack_config(stack), list(overrides))
    return json.loads(plan_json(run_program(stack, config)))
