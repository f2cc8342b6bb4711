"""The Auto Scaling group that runs the nodes: on-demand, spot or mixed, all in one subnet and placement group.

Spot uses price-capacity-optimized allocation with capacity rebalance, as AWS recommends. The node count is the
group's size and nothing else, so changing it touches only this resource.
"""

from __future__ import annotations

import pulumi
import pulumi_aws as aws

from ..catalog.selector import Selection
from .tagging import Tagger

SPOT_ALLOCATION = "price-capacity-optimized"
HEALTH_CHECK_GRACE_SEC = 1200  # a stock-Ubuntu node installs the driver and reboots before its health check
CAPACITY_WAIT = "20m"


def build_fleet(name: str, selection: Selection, launch_template: aws.ec2.LaunchTemplate,
                subnet_id: pulumi.Input[str], placement_group: aws.ec2.PlacementGroup | None, tag: Tagger,
                opts: pulumi.ResourceOptions) -> aws.autoscaling.Group:
    spec = selection.spec
    template_version = launch_template.latest_version.apply(str)
    uses_spot = spec.market.type in ("spot", "mixed")
    return aws.autoscaling.Group(
        f"{name}-nodes",
        min_size=spec.nodes,
        max_size=spec.nodes,
        desired_capacity=spec.nodes,
        vpc_zone_identifiers=[subnet_id],
        placement_group=placement_group.name if placement_group else None,
        capacity_rebalance=uses_spot,
        health_check_type="EC2",
        health_check_grace_period=HEALTH_CHECK_GRACE_SEC,
        wait_for_capacity_timeout=CAPACITY_WAIT,
        launch_template=None if uses_spot else aws.autoscaling.GroupLaunchTemplateArgs(
            id=launch_template.id, version=template_version),
        mixed_instances_policy=_mixed_policy(selection, launch_template, template_version) if uses_spot else None,
        tags=[aws.autoscaling.GroupTagArgs(key=key, value=value, propagate_at_launch=True)
              for key, value in tag("node").items()],
        opts=opts,
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
