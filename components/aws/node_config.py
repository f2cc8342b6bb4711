"""The nodes' user data: inline when it fits EC2's 16 KB, else a boothook and the cloud-config in a private bucket.

A node with health checks, shared storage, local NVMe and the watcher needs more than 16 KB even gzipped. Such a
cluster gets a bucket of its own (`{name}-node-config`: no public access, SSE-S3, TLS only, objects owned by the
bucket owner, emptied on destroy) holding the cloud-config under its SHA-256 (`cloud_init.s3_bootstrap`), and the
node role may read that prefix only. The launch template carries the boothook, which fetches and checks the object
before cloud-init runs its modules; the template waits for the object and the read permission, so no node boots
before either exists. A changed cloud-config is a new object and a new template version, like inline user data.
"""

from __future__ import annotations

import json

import pulumi
import pulumi_aws as aws

from gpufleet import cloud_init
from gpufleet.cloud_init.s3_bootstrap import NODE_CONFIG_PREFIX, aws_bootstrap, node_config_key

from ..spec import ClusterSpec
from .tagging import Tagger

CLOUD = "aws"
BUCKET_PREFIX_MAX = 37  # S3's limit on `bucket_prefix`; AWS appends 26 characters


def node_user_data(name: str, spec: ClusterSpec, cloud_config: pulumi.Input[str], inline: bool,
                   role_name: pulumi.Input[str], cluster_id: str, tag: Tagger,
                   opts: pulumi.ResourceOptions) -> pulumi.Input[str]:
    """The launch template's `user_data` (base64 of gzip): `cloud_config` itself when `inline`, else the boothook
    that fetches it from the bucket declared here."""
    if inline and isinstance(cloud_config, str):
        return cloud_init.encode_user_data(cloud_config, CLOUD)
    if inline:
        return pulumi.Output.from_input(cloud_config).apply(lambda text: cloud_init.encode_user_data(text, CLOUD))
    prefix = f"gpufleet-node-config-{cluster_id}-"[:BUCKET_PREFIX_MAX]
    bucket = aws.s3.Bucket(f"{name}-node-config", bucket_prefix=prefix, force_destroy=True, tags=tag("node-config"),
                           region=spec.region, opts=opts)
    guards = [
        aws.s3.BucketPublicAccessBlock(f"{name}-node-config-public", bucket=bucket.id, block_public_acls=True,
                                       block_public_policy=True, ignore_public_acls=True,
                                       restrict_public_buckets=True, region=spec.region, opts=opts),
        aws.s3.BucketOwnershipControls(f"{name}-node-config-owner", bucket=bucket.id, region=spec.region, opts=opts,
                                       rule=aws.s3.BucketOwnershipControlsRuleArgs(
                                           object_ownership="BucketOwnerEnforced")),
        aws.s3.BucketServerSideEncryptionConfiguration(
            f"{name}-node-config-sse", bucket=bucket.id, region=spec.region, opts=opts,
            rules=[aws.s3.BucketServerSideEncryptionConfigurationRuleArgs(
                apply_server_side_encryption_by_default=aws.s3.
                BucketServerSideEncryptionConfigurationRuleApplyServerSideEncryptionByDefaultArgs(
                    sse_algorithm="AES256"))]),
        aws.s3.BucketPolicy(f"{name}-node-config-tls", bucket=bucket.id, region=spec.region, opts=opts,
                            policy=bucket.arn.apply(lambda arn: json.dumps(tls_only_policy(arn), sort_keys=True))),
    ]
    text = pulumi.Output.from_input(cloud_config)
    stored = aws.s3.BucketObjectv2(
        f"{name}-node-config-object", bucket=bucket.id, key=text.apply(node_config_key), content=text,
        content_type="text/cloud-config; charset=utf-8", server_side_encryption="AES256", tags=tag("node-config"),
        region=spec.region, opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=guards)))
    readable = aws.iam.RolePolicy(f"{name}-role-node-config", role=role_name, opts=opts,
                                  policy=bucket.arn.apply(lambda arn: json.dumps(read_policy(arn), sort_keys=True)))
    return pulumi.Output.all(bucket.bucket, text, stored.key, readable.id).apply(
        lambda values: cloud_init.encode_user_data(aws_bootstrap(values[0], values[1]), CLOUD))


def read_policy(bucket_arn: str) -> dict:
    """The node may read the node-config objects of its own cluster's bucket, nothing else in S3."""
    return {"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Action": "s3:GetObject", "Resource": f"{bucket_arn}/{NODE_CONFIG_PREFIX}*"}]}


def tls_only_policy(bucket_arn: str) -> dict:
    """Every request without TLS is refused (the node's boothook always uses HTTPS)."""
    return {"Version": "2012-10-17", "Statement": [{
        "Sid": "TlsOnly", "Effect": "Deny", "Principal": "*", "Action": "s3:*",
        "Resource": [bucket_arn, f"{bucket_arn}/*"], "Condition": {"Bool": {"aws:SecureTransport": "false"}}}]}
