"""The Auto Scaling group that runs the nodes: on-demand, spot or mixed, all in one subnet and placement group.

Spot uses price-capacity-optimized allocation with capacity rebalance, as AWS recommends. Capacity rebalance makes
the group terminate an at-risk node itself, with no spot interruption notice, so every termination goes through a
lifecycle hook (`capacity.DRAIN_HOOK_NAME`), on every market: scale-in, repair, instance refresh and a Capacity
Block's end too. The node's watcher sees `autoscaling/target-lifecycle-state` turn to Terminated in IMDS, runs the
drain once and completes the action. With the hook, rebalance is safe to keep on; `node.spot.drain_on_rebalance`
drains earlier still, at the recommendation itself. The hook is its own resource, not one of the group's
`initial_lifecycle_hooks` (which AWS applies only when the group is created), so an existing group gains it
without being replaced.

The node count is the group's size and nothing else, so changing it touches only this resource (and, inside a
Capacity Block, its scheduled actions). Running nodes are replaced only by an explicit `rollout` (instance refresh).
"""

from __future__ import annotations

import pulumi
import pulumi_aws as aws

from ..catalog.selector import Selection
from .capacity import DRAIN_HOOK_NAME, DRAIN_HOOK_TIMEOUT_SEC, fleet_sizing
from .serving import HEALTH_CHECK_GRACE_SEC, group_args, group_ignore_changes
from .tagging import Tagger

SPOT_ALLOCATION = "price-capacity-optimized"
TERMINATING = "autoscaling:EC2_INSTANCE_TERMINATING"
ROLLOUT_CHECKPOINT_DELAY_SEC = 600


def build_fleet(name: str, selection: Selection, launch_template: aws.ec2.LaunchTemplate,
                subnet_id: pulumi.Input[str], placement_group: aws.ec2.PlacementGroup | None, tag: Tagger,
                opts: pulumi.ResourceOptions) -> aws.autoscaling.Group:
    spec = selection.spec
    template_version = launch_template.latest_version.apply(str)
    uses_spot = spec.market.type in ("spot", "mixed")
    sizing = fleet_sizing(spec)
    size_and_health = group_args(spec)  # fixed for training, autoscaled behind the load balancer for inference
    ignore_changes = group_ignore_changes(spec)
    if sizing.schedule:  # inside a Capacity Block the scheduled actions own the size; `up` must not undo them
        size_and_health.update(min_size=sizing.size, desired_capacity=sizing.size)
        ignore_changes += ["minSize", "desiredCapacity"]
    group = aws.autoscaling.Group(
        f"{name}-nodes",
        **size_and_health,
        vpc_zone_identifiers=[subnet_id],
        placement_group=placement_group.name if placement_group else _existing_placement(selection),
        capacity_rebalance=uses_spot,
        wait_for_capacity_timeout=spec.market.wait_for_capacity_timeout,
        instance_refresh=_instance_refresh(selection),
        launch_template=None if uses_spot else aws.autoscaling.GroupLaunchTemplateArgs(
            id=launch_template.id, version=template_version),
        mixed_instances_policy=_mixed_policy(selection, launch_template, template_version) if uses_spot else None,
        tags=[aws.autoscaling.GroupTagArgs(key=key, value=value, propagate_at_launch=True)
              for key, value in tag("node").items()],
        region=spec.region,
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(ignore_changes=ignore_changes or None)),
    )
    aws.autoscaling.LifecycleHook(
        f"{name}-drain-hook", autoscaling_group_name=group.name, name=DRAIN_HOOK_NAME,
        lifecycle_transition=TERMINATING, default_result="CONTINUE", heartbeat_timeout=DRAIN_HOOK_TIMEOUT_SEC,
        region=spec.region, opts=opts)
    for action in sizing.schedule:
        aws.autoscaling.Schedule(
            f"{name}-{action.role}", autoscaling_group_name=group.name, scheduled_action_name=f"gpufleet-{action.role}",
            start_time=action.start_time, min_size=action.size, max_size=spec.nodes, desired_capacity=action.size,
            region=spec.region, opts=opts)
    return group


def _existing_placement(selection: Selection) -> str | None:
    """`placement_group_name`, for the groups in the cluster's placement (a named group without the fabric runs
    outside it; `gpufleet.groups.placement`)."""
    in_placement = selection.placement_group or getattr(selection, "group", None) is None
    return selection.spec.placement_group_name if in_placement else None


def _instance_refresh(selection: Selection) -> aws.autoscaling.GroupInstanceRefreshArgs | None:
    """With `rollout.enabled`, a changed launch template replaces nodes a few at a time, skipping matching ones."""
    rollout, nodes = selection.spec.rollout, selection.spec.nodes
    if not rollout.enabled:
        return None
    min_healthy = max(0, (nodes - rollout.max_unavailable) * 100 // nodes)
    return aws.autoscaling.GroupInstanceRefreshArgs(
        strategy="Rolling",
        preferences=aws.autoscaling.GroupInstanceRefreshPreferencesArgs(
            min_healthy_percentage=min_healthy, max_healthy_percentage=100, skip_matching=True,
            instance_warmup=str(HEALTH_CHECK_GRACE_SEC), checkpoint_percentages=[50, 100],
            checkpoint_delay=str(ROLLOUT_CHECKPOINT_DELAY_SEC)),
    )


def _mixed_policy(selection: Selection, launch_template: aws.ec2.LaunchTemplate,
                  version: pulumi.Output[str]) -> aws.autoscaling.GroupMixedInstancesPolicyArgs:
    market = selection.spec.market
    max_price = market.spot_max_price_per_hour
    return aws.autoscaling.GroupMixedInstancesPolicyArgs(
        instances_distribution=aws.autoscaling.GroupMixedInstancesPolicyInstancesDistributionArgs(
            on_demand_base_capacity=market.on_demand_base,
            on_demand_percentage_above_base_capacity=0,
            spot_allocation_strategy=SPOT_ALLOCATION,
            spot_max_price=f"{max_price:.5f}" if max_price is not None else None,
        ),
        launch_template=aws.autoscaling.GroupMixedInstancesPolicyLaunchTemplateArgs(
            launch_template_specification=aws.autoscaling.GroupMixedInstancesPolicyLaunchTemplateLaunchTemplateSpecificationArgs(
                launch_template_id=launch_template.id, version=version),
            overrides=[aws.autoscaling.GroupMixedInstancesPolicyLaunchTemplateOverrideArgs(
                instance_type=selection.instance.name)],
        ),
    )
