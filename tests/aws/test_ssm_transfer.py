"""The SSM transfer bucket every AWS cluster declares for Ansible's Session Manager connection (gpufleet inventory):
private, encrypted, TLS only, short-lived objects, no node permission on it, and exported by name."""

from __future__ import annotations

import json

from tests.conftest import cached_plan, of_type

SPEC = {"cloud": "aws", "region": "us-east-2", "zone": "use2-az2", "nodes": 2,
        "accelerator": {"instance_type": "p5.48xlarge"}}
PREFIX = "gpufleet-ssm-transfer"


def transfer(result, token: str):
    [found] = [r for r in of_type(result, token) if r.name.startswith(PREFIX)]
    return found.inputs


def test_the_bucket_is_planned_private_encrypted_tls_only_and_expiring():
    result = cached_plan(SPEC)
    bucket = transfer(result, "aws:s3/bucket:Bucket")
    assert bucket["bucketPrefix"].startswith("gpufleet-ssm-") and len(bucket["bucketPrefix"]) <= 37
    assert bucket["tags"]["gpufleet-role"] == "ssm-transfer" and bucket["region"] == "us-east-2"
    block = transfer(result, "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock")
    assert all(block[k] is True for k in ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls",
                                          "restrictPublicBuckets"))
    sse = transfer(result, "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration")
    assert sse["rules"][0]["applyServerSideEncryptionByDefault"]["sseAlgorithm"] == "AES256"
    assert transfer(result, "aws:s3/bucketOwnershipControls:BucketOwnershipControls")["rule"] == {
        "objectOwnership": "BucketOwnerEnforced"}
    [statement] = json.loads(transfer(result, "aws:s3/bucketPolicy:BucketPolicy")["policy"])["Statement"]
    assert (statement["Effect"], statement["Condition"]) == ("Deny", {"Bool": {"aws:SecureTransport": "false"}})
    [rule] = transfer(result, "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration")["rules"]
    assert rule["status"] == "Enabled" and rule["expiration"] == {"days": 1}


def test_the_bucket_name_is_a_stack_output_and_the_nodes_get_no_permission_on_it():
    result = cached_plan(SPEC)
    [bucket] = [r for r in of_type(result, "aws:s3/bucket:Bucket") if r.name.endswith("-ssm-transfer")]
    # The mocks name a prefixed bucket `<prefix>placeholder`: the output is this bucket's, not the node-config one's.
    assert result.outputs["ssm_transfer_bucket"] == bucket.inputs["bucketPrefix"] + "placeholder"
    policies = [r.inputs.get("policy", "") for r in of_type(result, "aws:iam/rolePolicy:RolePolicy")]
    assert not [p for p in policies if "ssm-transfer" in p or "gpufleet-ssm" in p]


def test_a_node_count_change_leaves_the_bucket_alone():
    small, large = cached_plan(SPEC), cached_plan({**SPEC, "nodes": 8})
    assert transfer(small, "aws:s3/bucket:Bucket") == transfer(large, "aws:s3/bucket:Bucket")
