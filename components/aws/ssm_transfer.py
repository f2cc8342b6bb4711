"""The bucket Ansible's Session Manager connection (`amazon.aws.aws_ssm`) moves files through: every module Ansible
runs on a node is uploaded here and fetched by the node over a presigned HTTPS URL, so day-2 playbooks reach the
nodes with no SSH port and no key.

Private (all four public access blocks, objects owned by the bucket owner), encrypted (SSE-S3; presigned URLs need
no KMS grant), TLS only, and every object expires after a day (a transfer lives for seconds; a broken run's leftovers
do not pile up). The nodes get no permission on it: the operator's credentials sign the URLs. Exported as
`ssm_transfer_bucket`, which `gpufleet inventory` writes into the AWS inventory. Children: `{name}-ssm-transfer`,
`-public`, `-owner`, `-sse`, `-tls`, `-expiry`.
"""

from __future__ import annotations

import json

import pulumi
import pulumi_aws as aws

from ..spec import ClusterSpec
from .node_config import tls_only_policy
from .tagging import Tagger

BUCKET_PREFIX_MAX = 37  # S3's limit on `bucket_prefix`; AWS appends 26 characters
EXPIRY_DAYS = 1


def build_ssm_transfer_bucket(name: str, spec: ClusterSpec, cluster_id: str, tag: Tagger,
                              opts: pulumi.ResourceOptions) -> aws.s3.Bucket:
    role = f"{name}-ssm-transfer"
    bucket = aws.s3.Bucket(role, bucket_prefix=f"gpufleet-ssm-{cluster_id}-"[:BUCKET_PREFIX_MAX], force_destroy=True,
                           tags=tag("ssm-transfer"), region=spec.region, opts=opts)
    aws.s3.BucketPublicAccessBlock(f"{role}-public", bucket=bucket.id, block_public_acls=True, block_public_policy=True,
                                   ignore_public_acls=True, restrict_public_buckets=True, region=spec.region,
                                   opts=opts)
    aws.s3.BucketOwnershipControls(f"{role}-owner", bucket=bucket.id, region=spec.region, opts=opts,
                                   rule=aws.s3.BucketOwnershipControlsRuleArgs(object_ownership="BucketOwnerEnforced"))
    aws.s3.BucketServerSideEncryptionConfiguration(
        f"{role}-sse", bucket=bucket.id, region=spec.region, opts=opts,
        rules=[aws.s3.BucketServerSideEncryptionConfigurationRuleArgs(
            apply_server_side_encryption_by_default=aws.s3.
            BucketServerSideEncryptionConfigurationRuleApplyServerSideEncryptionByDefaultArgs(sse_algorithm="AES256"))])
    aws.s3.BucketPolicy(f"{role}-tls", bucket=bucket.id, region=spec.region, opts=opts,
                        policy=bucket.arn.apply(lambda arn: json.dumps(tls_only_policy(arn), sort_keys=True)))
    aws.s3.BucketLifecycleConfiguration(
        f"{role}-expiry", bucket=bucket.id, region=spec.region, opts=opts,
        rules=[aws.s3.BucketLifecycleConfigurationRuleArgs(
            id="expire-transfers", status="Enabled", filter=aws.s3.BucketLifecycleConfigurationRuleFilterArgs(prefix=""),
            expiration=aws.s3.BucketLifecycleConfigurationRuleExpirationArgs(days=EXPIRY_DAYS),
            abort_incomplete_multipart_upload=aws.s3.BucketLifecycleConfigurationRuleAbortIncompleteMultipartUploadArgs(
                days_after_initiation=EXPIRY_DAYS))])
    return bucket
