"""Every cloud-config gpufleet renders for the shipped stacks, read from what each stack's plan declares: the node
groups' user data (training and inference), the monitoring server's, and any other machine a plan gains later (a
controller): whatever resource carries user data is found by the plan's own user-data reader, so a new machine is
covered without touching the tests that use this module."""

from __future__ import annotations

import functools

from gpufleet.plan.runner import PlanResult
from gpufleet.plan.stackfile import CLUSTER_KEY, apply_overrides, read_stack_config, stack_names
from gpufleet.plan.userdata import node_user_data
from tests.conftest import cached_plan

CLOUD_CONFIG = "#cloud-config"


def plan_cloud_configs(result: PlanResult) -> dict[str, str]:
    """{resource name: cloud-config text} of every cloud-config `result` declares, decoded as the cloud hands it to
    cloud-init. An AWS node whose config is too large for its user data boots a boothook that fetches the config
    from S3; the S3 object is in the plan too and is listed here, the boothook (no units) is not."""
    return {name: text for name, text in node_user_data(result.resources).items() if text.startswith(CLOUD_CONFIG)}


@functools.cache
def stack_cloud_configs(stack: str) -> dict[str, str]:
    """`plan_cloud_configs` of the shipped stack stacks/Pulumi.<stack>.yaml, as `pulumi up` would declare it."""
    return plan_cloud_configs(cached_plan(read_stack_config(stack)[CLUSTER_KEY]))


@functools.cache
def slurm_cloud_configs(stack: str) -> dict[str, str]:
    """`plan_cloud_configs` of the shipped stack with `scheduler.kind: slurm`: its nodes (with slurmd), the monitoring
    server and the Slurm controller."""
    return plan_cloud_configs(cached_plan(apply_overrides(read_stack_config(stack),
                                                          ["scheduler.kind=slurm"])[CLUSTER_KEY]))


SHIPPED_STACKS = stack_names()
TRAIN_STACKS = [stack for stack in SHIPPED_STACKS if stack.endswith("-train")]
