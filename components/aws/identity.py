"""The nodes' IAM identity: SSM Session Manager access, and acting on their own group's health and drain hook.

`AmazonSSMManagedInstanceCore` lets operators connect without SSH or public IPs. The node health check may call
`autoscaling:SetInstanceHealth`, and the watcher may complete (or extend) the drain lifecycle action, all limited to
groups tagged with this cluster's `gpufleet-cluster` hash (unique per project, stack and component: a stack named
`dev` can never act on `dev-b`'s groups, nor another project's `dev`).
More managed policies (`access.iam_policy_arns`) are attached by `gpufleet.aws.permissions`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from ..catalog.selector import Selection
from ..catalog.vgpu_drivers import vgpu_drivers
from .tagging import CLUSTER_TAG, Tagger

SSM_POLICY_ARN = "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore"
EC2_TRUST = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}],
}


# What a node may do to its own group: report itself unhealthy, and finish (or extend) its own drain hook.
GROUP_ACTIONS = ("autoscaling:CompleteLifecycleAction", "autoscaling:RecordLifecycleActionHeartbeat",
                 "autoscaling:SetInstanceHealth")


@dataclass(frozen=True)
class NodeIdentity:
    role: aws.iam.Role
    profile: aws.iam.InstanceProfile


def health_report_policy(cluster_id: str) -> dict:
    """Allows the node's group actions only on Auto Scaling groups that carry this cluster's hash tag, and finding
    its own group's name (Describe actions take no resource or tag condition; the answer is read-only)."""
    return {
        "Version": "2012-10-17",
        "Statement": [{
            "Effect": "Allow",
            "Action": list(GROUP_ACTIONS),
            "Resource": "*",
            "Condition": {"StringEquals": {f"autoscaling:ResourceTag/{CLUSTER_TAG}": cluster_id}},
        }, {
            "Effect": "Allow",
            "Action": "autoscaling:DescribeAutoScalingInstances",
            "Resource": "*",
        }],
    }


def grid_driver_read_policy(bucket: str, prefix: str) -> dict:
    """A vGPU slice reads its GRID guest driver from AWS's driver bucket as itself: list the pinned prefix and get its
    objects, nothing else (AWS's guide asks for read access to the bucket; this is the least of it)."""
    return {
        "Version": "2012-10-17",
        "Statement": [{
            "Effect": "Allow",
            "Action": "s3:ListBucket",
            "Resource": f"arn:aws:s3:::{bucket}",
            "Condition": {"StringLike": {"s3:prefix": [f"{prefix}*"]}},
        }, {
            "Effect": "Allow",
            "Action": "s3:GetObject",
            "Resource": f"arn:aws:s3:::{bucket}/{prefix}*",
        }],
    }


def grid_driver_location(selection: Selection) -> tuple[str, str] | None:
    """(bucket, prefix) a vGPU slice's node reads its GRID driver from; None for whole-GPU types."""
    if not selection.instance.is_vgpu_slice:
        return None
    driver = vgpu_drivers()["aws"]
    return driver.bucket, driver.prefix


def build_instance_profile(name: str, cluster_id: str, tag: Tagger, opts: pulumi.ResourceOptions,
                           grid_driver: tuple[str, str] | None = None) -> NodeIdentity:
    role = aws.iam.Role(f"{name}-role", assume_role_policy=json.dumps(EC2_TRUST, sort_keys=True), tags=tag("role"),
                        description="gpufleet GPU node: SSM access, own health reporting and drain hook", opts=opts)
    aws.iam.RolePolicyAttachment(f"{name}-role-ssm", role=role.name, policy_arn=SSM_POLICY_ARN, opts=opts)
    aws.iam.RolePolicy(f"{name}-role-health", role=role.id, opts=opts,
                       policy=json.dumps(health_report_policy(cluster_id), sort_keys=True))
    if grid_driver is not None:  # (bucket, prefix) of a vGPU slice's GRID driver
        aws.iam.RolePolicy(f"{name}-role-grid-driver", role=role.id, opts=opts,
                           policy=json.dumps(grid_driver_read_policy(*grid_driver), sort_keys=True))
    profile = aws.iam.InstanceProfile(f"{name}-profile", role=role.name, tags=tag("profile"), opts=opts)
    return NodeIdentity(role=role, profile=profile)
