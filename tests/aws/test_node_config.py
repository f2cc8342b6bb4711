"""AWS user data over 16 KB: the cloud-config in the cluster's private bucket, a boothook in the launch template,
on the inputs the engine would receive; inline user data everywhere else."""

from __future__ import annotations

import base64
import gzip
import json

from gpufleet.cloud_init import AWS_USER_DATA_MAX_BYTES, measured_size
from gpufleet.cloud_init.s3_bootstrap import node_config_key, node_config_sha256
from gpufleet.cloud_init.storage import SOURCE_PLACEHOLDER
from tests.conftest import cached_plan, of_type, one, plan_spec
from tests.validators import cloud_config_problems

# Stock Ubuntu, every node option, shared Lustre and local NVMe: about 18 KB of gzip, over the launch template's 16.
LARGE = {"cloud": "aws", "region": "us-east-2", "zone": "use2-az2", "nodes": 2, "market": "spot",
         "accelerator": {"instance_type": "p5.48xlarge"}, "image": {"kind": "ubuntu-24.04"},
         "node": {"mps": {"enabled": True}, "health": {"dcgm_diag": True, "nccl_allreduce": True}},
         "storage": {"shared": {"kind": "lustre"}, "local_nvme": {"enabled": True}}}
SMALL = {"cloud": "aws", "region": "us-east-2", "zone": "use2-az2", "nodes": 2, "market": "spot",
         "accelerator": {"instance_type": "p5.48xlarge"}}
S3_TYPES = ("aws:s3/bucket:Bucket", "aws:s3/bucketObjectv2:BucketObjectv2", "aws:s3/bucketPolicy:BucketPolicy",
            "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock")


def node_config(result, token: str):
    """The node-config bucket's resource of `token` (every AWS cluster also has its SSM transfer bucket)."""
    found = [r for r in of_type(result, token) if r.name.startswith("gpufleet-node-config")]
    assert len(found) == 1, [r.name for r in of_type(result, token)]
    return found[0]


def launch_template_text(result) -> str:
    encoded = one(result, "aws:ec2/launchTemplate:LaunchTemplate").inputs["userData"]
    return gzip.decompress(base64.b64decode(encoded)).decode()


def bucket_name(result) -> str:
    """The node-config bucket's name as the mocks fill it in: its prefix, then `placeholder` (gpufleet.plan.mocks)."""
    [bucket] = [r for r in of_type(result, "aws:s3/bucket:Bucket") if r.name.endswith("-node-config")]
    return bucket.inputs["bucketPrefix"] + "placeholder"


def stored(result) -> str:
    return one(result, "aws:s3/bucketObjectv2:BucketObjectv2").inputs["content"]


def test_the_large_config_is_stored_whole_and_the_template_carries_the_boothook():
    result = cached_plan(LARGE)
    config = stored(result)
    assert config.startswith("#cloud-config\n") and SOURCE_PLACEHOLDER not in config
    assert "fs-placeholder.fsx.example.amazonaws.com@tcp:/placeholder" in config  # the FSx address, filled in
    assert measured_size(config, "aws") > AWS_USER_DATA_MAX_BYTES
    obj = one(result, "aws:s3/bucketObjectv2:BucketObjectv2").inputs
    assert obj["key"] == node_config_key(config) and obj["bucket"] == "gpufleet-node-config-id"
    assert obj["serverSideEncryption"] == "AES256"
    boothook = launch_template_text(result)
    assert boothook.startswith("#cloud-boothook\n#!/bin/sh\n")
    assert f"NODE_CONFIG_BUCKET={bucket_name(result)}\n" in boothook
    assert f"NODE_CONFIG_SHA256={node_config_sha256(config)}\n" in boothook
    assert "GPUFLEET_S3_ENDPOINT=" not in boothook  # the regional endpoint, never a test override
    assert measured_size(boothook, "aws") < AWS_USER_DATA_MAX_BYTES // 2


def test_the_stored_config_is_valid_cloud_config(tmp_path):
    path = tmp_path / "node.yaml"
    path.write_text(stored(cached_plan(LARGE)))
    assert cloud_config_problems(path) == {}


def test_the_bucket_is_private_encrypted_and_tls_only():
    result = cached_plan(LARGE)
    bucket = node_config(result, "aws:s3/bucket:Bucket").inputs
    assert bucket["bucketPrefix"].startswith("gpufleet-node-config-") and bucket["forceDestroy"] is True
    assert len(bucket["bucketPrefix"]) <= 37 and bucket["bucketPrefix"] == bucket["bucketPrefix"].lower()
    block = node_config(result, "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock").inputs
    assert all(block[k] is True for k in ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls",
                                          "restrictPublicBuckets"))
    sse = node_config(result, "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration")
    assert sse.inputs["rules"][0]["applyServerSideEncryptionByDefault"]["sseAlgorithm"] == "AES256"
    owner = node_config(result, "aws:s3/bucketOwnershipControls:BucketOwnershipControls").inputs
    assert owner["rule"]["objectOwnership"] == "BucketOwnerEnforced"
    [statement] = json.loads(node_config(result, "aws:s3/bucketPolicy:BucketPolicy").inputs["policy"])["Statement"]
    assert (statement["Effect"], statement["Condition"]) == ("Deny", {"Bool": {"aws:SecureTransport": "false"}})


def test_the_node_role_reads_only_the_node_config_prefix():
    result = cached_plan(LARGE)
    [policy] = [r for r in of_type(result, "aws:iam/rolePolicy:RolePolicy") if r.name.endswith("-role-node-config")]
    assert policy.inputs["role"] == "gpufleet-role"  # the mock's name of the node role
    assert json.loads(policy.inputs["policy"])["Statement"] == [{
        "Effect": "Allow", "Action": "s3:GetObject", "Resource": f"arn:aws:s3:::{bucket_name(result)}/gpufleet/node-config/*"}]


def test_a_config_that_fits_stays_inline_with_no_bucket():
    result = cached_plan(SMALL)
    assert launch_template_text(result).startswith("#cloud-config\n")
    assert [r.name for r in result.resources if r.type in S3_TYPES and "node-config" in r.name] == []
    assert not [r for r in of_type(result, "aws:iam/rolePolicy:RolePolicy") if r.name.endswith("-role-node-config")]


def test_the_same_spec_gives_the_same_inputs():
    first, second = plan_spec(LARGE), cached_plan(LARGE)
    assert [(r.name, r.inputs) for r in first.resources] == [(r.name, r.inputs) for r in second.resources]


def test_a_node_count_change_touches_neither_the_object_nor_the_template():
    small, large = cached_plan(LARGE), cached_plan({**LARGE, "nodes": 6})
    assert one(small, "aws:ec2/launchTemplate:LaunchTemplate").inputs == one(
        large, "aws:ec2/launchTemplate:LaunchTemplate").inputs
    for token in ("aws:s3/bucketObjectv2:BucketObjectv2", "aws:s3/bucket:Bucket"):
        assert node_config(small, token).inputs == node_config(large, token).inputs


def test_an_existing_subnet_is_warned_that_nodes_need_a_route_to_s3():
    from gpufleet.pipeline import plan_cluster
    from gpufleet.spec.parse import parse_cluster_spec
    existing = {**LARGE, "network": {"existing_subnet_id": "subnet-0123456789abcdef0"}}
    [warning] = [w for w in plan_cluster(parse_cluster_spec(existing)).warnings if "fetched from S3" in w]
    assert "needs a NAT gateway or an S3 gateway endpoint" in warning
    assert not [w for w in plan_cluster(parse_cluster_spec(LARGE)).warnings if "fetched from S3" in w]
    small = {**SMALL, "network": {"existing_subnet_id": "subnet-0123456789abcdef0"}}
    assert not [w for w in plan_cluster(parse_cluster_spec(small)).warnings if "fetched from S3" in w]
