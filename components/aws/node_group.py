"""One node group on AWS: its launch template, its Auto Scaling group with the drain hook, and its user data
(inline, or in S3 behind a boothook). An elastic group (`nodes: {min, max}` with Slurm) is its launch template only:
Slurm's power programs launch its instances with EC2 Fleet and terminate them by id (`elastic.py`), so `pulumi up`
never creates or deletes one of its nodes. A spec without `node_groups` is one group, whose children keep their names
(`{name}-lt`, `{name}-nodes`); a named group's are `{name}-{group}-lt`, `{name}-{group}-nodes`, and its
resources carry the group's name in the `gpufleet-node-group` tag (Prometheus' `node_group` label, the inventory).
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from ..groups.naming import GROUP_TAG
from ..pipeline import ClusterPlan
from ..storage.boot import user_data_with_source
from .fleet import build_fleet
from .identity import NodeIdentity
from .launch_template import build_launch_template
from .node_config import node_user_data
from .tagging import Tagger


@dataclass(frozen=True)
class ClusterShared:
    """What every group of the cluster shares: its network, security group, identity and placement."""

    subnet_id: pulumi.Input[str]
    security_group_id: pulumi.Input[str]
    identity: NodeIdentity
    placement: aws.ec2.PlacementGroup | None
    cluster_id: str
    key_name: pulumi.Input[str] | None = None
    image_id: pulumi.Input[str] | None = None
    shared_source: pulumi.Input[str] | None = None
    """What the nodes mount (`storage.shared`), put into each group's user data once known."""
    instance_tags: dict[str, pulumi.Input[str]] | None = None
    """The Slurm controller's address and key name, on every node's instance."""


@dataclass(frozen=True)
class AwsNodeGroup:
    plan: ClusterPlan
    launch_template: aws.ec2.LaunchTemplate
    fleet: aws.autoscaling.Group | None
    """None for an elastic group: no Auto Scaling group, not even one at size 0."""
    fallback_templates: tuple[tuple[ClusterPlan, aws.ec2.LaunchTemplate], ...] = ()
    """An elastic group's fallback types, each with its own node config in its own launch template."""


def group_tagger(tag: Tagger, group: str | None) -> Tagger:
    """A named group's tags: the group tag, and the group in the Name; the role tags stay (`node` on every node,
    which discovery and the inventory select by). The one unnamed group's tags are as they were."""
    if group is None:
        return tag

    def tag_in_group(role: str) -> dict[str, str]:
        tags = {**tag(role), "Name": tag(f"{group}-{role}")["Name"], GROUP_TAG: group}
        return {key: tags[key] for key in sorted(tags)}
    return tag_in_group


def build_node_group(name: str, plan: ClusterPlan, shared: ClusterShared, tag: Tagger,
                     opts: pulumi.ResourceOptions, fallbacks: tuple[ClusterPlan, ...] = ()) -> AwsNodeGroup:
    """`fallbacks`: an elastic group's fallback types' plans (`pipeline.fallback_type_plans`), one launch template
    each, `{group}-{type}-lt`."""
    group_name = f"{name}-{plan.group}" if plan.group else name
    tag = group_tagger(tag, plan.group)

    def template_of(typed: ClusterPlan, template_name: str) -> aws.ec2.LaunchTemplate:
        cloud_config = user_data_with_source(typed.cloud_config, shared.shared_source, str)
        user_data = node_user_data(template_name, typed.spec, cloud_config, not typed.by_reference,
                                   shared.identity.role.name, shared.cluster_id, tag, opts)
        return build_launch_template(template_name, typed, shared.security_group_id, shared.identity.profile,
                                     user_data, shared.key_name, tag, opts, shared.image_id, shared.instance_tags)

    template = template_of(plan, group_name)
    if plan.spec.nodes_range is not None:
        return AwsNodeGroup(plan, template, None, tuple(
            (typed, template_of(typed, f"{group_name}-{typed.instance.name}")) for typed in fallbacks))
    placement = shared.placement if plan.placement_group else None
    fleet = build_fleet(group_name, plan, template, shared.subnet_id, placement, tag, opts)
    return AwsNodeGroup(plan, template, fleet)
