"""Extra permissions for the node role (`access:`): the user's policy ARNs and the ready-made read-only opt-ins.

- `iam_policy_arns`: attached as they are (admin policies were refused by the spec rules unless allow_admin);
- `container_registry_read`: AmazonEC2ContainerRegistryReadOnly (ECR pull, e.g. Deep Learning Containers);
- `buckets_read`: one inline policy with s3:ListBucket/GetBucketLocation on the buckets and s3:GetObject on
  their objects, nothing else.
"""

from __future__ import annotations

import json

import pulumi
import pulumi_aws as aws

from ..spec import ClusterSpec

ECR_READ_ONLY = "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly"


def attached_policy_arns(spec: ClusterSpec) -> list[str]:
    """Every managed policy the node role gets beyond gpufleet's own, in a fixed order."""
    arns = list(spec.access.iam_policy_arns)
    if spec.access.container_registry_read and ECR_READ_ONLY not in arns:
        arns.append(ECR_READ_ONLY)
    return arns


def buckets_read_policy(buckets: list[str]) -> dict:
    return {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Action": ["s3:ListBucket", "s3:GetBucketLocation"],
             "Resource": [f"arn:aws:s3:::{bucket}" for bucket in buckets]},
            {"Effect": "Allow", "Action": ["s3:GetObject"],
             "Resource": [f"arn:aws:s3:::{bucket}/*" for bucket in buckets]},
        ],
    }


def grant_node_permissions(name: str, spec: ClusterSpec, role_name: pulumi.Input[str],
                           opts: pulumi.ResourceOptions) -> list[str]:
    """Attaches the extra policies to the node role; returns the attached ARNs (for the outputs)."""
    arns = attached_policy_arns(spec)
    for index, arn in enumerate(arns):
        aws.iam.RolePolicyAttachment(f"{name}-role-policy-{index}", role=role_name, policy_arn=arn, opts=opts)
    if spec.access.buckets_read:
        aws.iam.RolePolicy(f"{name}-role-buckets-read", role=role_name, opts=opts,
                           policy=json.dumps(buckets_read_policy(spec.access.buckets_read), sort_keys=True))
    return arns
