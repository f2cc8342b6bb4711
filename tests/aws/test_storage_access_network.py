"""AWS: the shared filesystem (FSx for Lustre / EFS), node permissions and the existing-network modes, on the
inputs the engine would receive."""

from __future__ import annotations

import asyncio
import base64
import gzip
import json

import pulumi
import pytest

from gpufleet.plan.calls import CALLS
from gpufleet.plan.mocks import PlanMocks, RecordingMonitor
from gpufleet.plan.runner import run_program
from gpufleet.spec import parse_cluster_spec
from tests.conftest import cached_plan, of_type, one, plan_spec, refusal

DEV = {"cloud": "aws", "region": "us-east-1", "zone": "use1-az4", "nodes": 1, "accelerator": {"instance_type": "g6e.xlarge"}}
LUSTRE = {**DEV, "storage": {"shared": {"kind": "lustre", "capacity_gib": 4800, "throughput": 500,
                                        "data_repository": "s3://training-data/imagenet/"}}}
NFS = {**DEV, "storage": {"shared": {"kind": "nfs", "mount_path": "/home/shared"}}}


def deploy_failure(spec: dict, calls: dict) -> str:
    """The error a deploy-time check raises; the failed run's pending tasks are cancelled so no later plan in this
    process sees them."""
    try:
        with pytest.raises(pulumi.RunError) as caught:
            run_program("test", {"gpufleet:cluster": spec}, monitor=RecordingMonitor(PlanMocks(calls)))
    finally:
        loop = asyncio.get_event_loop()
        pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
        for task in pending:
            task.cancel()
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    return str(caught.value)


def user_data(result) -> str:
    """The node's cloud-config: the launch template's, or the S3 object's where it is too large for the template."""
    stored = of_type(result, "aws:s3/bucketObjectv2:BucketObjectv2")
    if stored:
        return stored[0].inputs["content"]
    encoded = one(result, "aws:ec2/launchTemplate:LaunchTemplate").inputs["userData"]
    return gzip.decompress(base64.b64decode(encoded)).decode()


def ingress(result, group: str) -> list[tuple]:
    return sorted((r.inputs["ipProtocol"], r.inputs.get("fromPort"), r.inputs.get("toPort"),
                   r.inputs.get("referencedSecurityGroupId") or r.inputs.get("cidrIpv4"))
                  for r in of_type(result, "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
                  if r.inputs["securityGroupId"] == f"{group}-id")


def test_lustre_is_fsx_persistent_2_in_the_node_subnet_with_an_s3_association():
    result = cached_plan(LUSTRE)
    fsx = one(result, "aws:fsx/lustreFileSystem:LustreFileSystem").inputs
    assert (fsx["deploymentType"], fsx["storageType"], fsx["storageCapacity"], fsx["perUnitStorageThroughput"]) == (
        "PERSISTENT_2", "SSD", 4800, 500)
    assert fsx["subnetIds"] == "gpufleet-subnet-id" and fsx["securityGroupIds"] == ["gpufleet-fs-sg-id"]
    association = one(result, "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation").inputs
    assert association["dataRepositoryPath"] == "s3://training-data/imagenet/"
    assert association["fileSystemId"] == "gpufleet-fsx-id" and association["fileSystemPath"] == "/data"


def test_lustre_ports_open_only_between_the_nodes_and_the_filesystem():
    result = cached_plan(LUSTRE)
    assert ingress(result, "gpufleet-fs-sg") == [
        ("tcp", 988, 988, "gpufleet-fs-sg-id"), ("tcp", 988, 988, "gpufleet-sg-id"),
        ("tcp", 1018, 1023, "gpufleet-fs-sg-id"), ("tcp", 1018, 1023, "gpufleet-sg-id")]
    # the nodes' group gains only the same ports from the filesystem's group (servers call clients back)
    added = set(ingress(result, "gpufleet-sg")) - set(ingress(cached_plan(DEV), "gpufleet-sg"))
    assert added == {("tcp", 988, 988, "gpufleet-fs-sg-id"), ("tcp", 1018, 1023, "gpufleet-fs-sg-id")}


def test_lustre_user_data_mounts_the_created_filesystem():
    text = user_data(cached_plan(LUSTRE))
    assert "@@GPUFLEET_SHARED_SOURCE@@" not in text
    assert "GPUFLEET_SHARED_SOURCE='fs-placeholder.fsx.example.amazonaws.com@tcp:/placeholder'" in text
    assert "GPUFLEET_SHARED_FSTYPE='lustre'" in text and "/usr/local/lib/gpufleet/boot.d/06-shared-storage" in text


def test_same_spec_gives_byte_identical_user_data_with_the_filesystem_address():
    assert user_data(plan_spec(LUSTRE)) == user_data(plan_spec(LUSTRE))


def test_nfs_is_encrypted_efs_with_a_mount_target_and_only_port_2049():
    result = cached_plan(NFS)
    assert one(result, "aws:efs/fileSystem:FileSystem").inputs["encrypted"] is True
    target = one(result, "aws:efs/mountTarget:MountTarget").inputs
    assert target["subnetId"] == "gpufleet-subnet-id" and target["securityGroups"] == ["gpufleet-fs-sg-id"]
    assert ingress(result, "gpufleet-fs-sg") == [("tcp", 2049, 2049, "gpufleet-sg-id")]
    text = user_data(result)
    assert "GPUFLEET_SHARED_FSTYPE='nfs4'" in text and "GPUFLEET_SHARED_MOUNT_PATH='/home/shared'" in text


def test_no_storage_declares_no_filesystem_and_keeps_user_data_free_of_the_mount():
    result = cached_plan(DEV)
    assert not [r for r in result.resources if r.type.startswith(("aws:fsx", "aws:efs"))]
    assert "06-shared-storage" not in user_data(result)


@pytest.mark.parametrize(("capacity", "accepted"), [(1200, True), (2400, True), (3600, False), (1300, False)])
def test_fsx_capacity_increments(capacity, accepted):
    spec = {**DEV, "storage": {"shared": {"kind": "lustre", "capacity_gib": capacity}}}
    if accepted:
        assert parse_cluster_spec(spec).storage.shared.capacity_gib == capacity
    else:
        message = refusal(spec)
        assert "storage.shared.capacity_gib" in message and "multiple of 2,400 GiB" in message


@pytest.mark.parametrize(("region", "zone"), [("il-central-1", "ilc1-az1"), ("sa-east-1", "sae1-az1")])
def test_lustre_refused_where_the_service_is_not_offered(region, zone):
    """Tel Aviv lists only two PERSISTENT_2 tiers in the Price List, São Paulo none (services.yaml)."""
    message = refusal({**DEV, "region": region, "zone": zone, "storage": {"shared": {"kind": "lustre"}}})
    assert f"not offered in aws region {region}" in message and "eu-west-2" in message


def test_existing_fsx_in_another_az_fails_at_deploy_time():
    calls = {**CALLS, "aws:ec2/getSubnet:getSubnet": lambda args: {
        "id": args["id"], "vpcId": "vpc-1", "cidrBlock": "10.0.0.0/20", "availabilityZone": "us-east-1a",
        "availabilityZoneId": "use1-az1"}}
    spec = {**DEV, "storage": {"shared": {"kind": "lustre", "existing_id": "fs-0123456789abcdef0"}}}
    assert "is in us-east-1a (use1-az1) but the nodes are in zone use1-az4" in deploy_failure(spec, calls)


def test_existing_fsx_creates_nothing_and_admits_lustre_from_the_vpc_only():
    result = cached_plan({**DEV, "storage": {"shared": {"kind": "lustre", "existing_id": "fs-0123456789abcdef0"}}})
    assert not [r for r in result.resources if r.type.startswith("aws:fsx")]
    added = set(ingress(result, "gpufleet-sg")) - set(ingress(cached_plan(DEV), "gpufleet-sg"))
    assert added == {("tcp", 988, 988, "10.0.0.0/16"), ("tcp", 1018, 1023, "10.0.0.0/16")}
    assert "fs-0123456789abcdef0.fsx.placeholder.amazonaws.com@tcp:/placeholder" in user_data(result)


def test_node_permissions_are_attached_and_exported():
    spec = {**DEV, "access": {"iam_policy_arns": ["arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess"],
                              "container_registry_read": True, "buckets_read": ["training-data"]}}
    result = cached_plan(spec)
    attached = sorted(r.inputs["policyArn"] for r in of_type(result, "aws:iam/rolePolicyAttachment:RolePolicyAttachment"))
    assert attached == ["arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly",
                        "arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess",
                        "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore"]
    policy = json.loads(next(r for r in of_type(result, "aws:iam/rolePolicy:RolePolicy")
                             if r.name == "gpufleet-role-buckets-read").inputs["policy"])
    assert policy["Statement"][1] == {"Effect": "Allow", "Action": ["s3:GetObject"],
                                      "Resource": ["arn:aws:s3:::training-data/*"]}
    assert "node_role" not in result.outputs  # a resource (`AwsGpuCluster.identity.role`); its ARN is exported
    assert "node_role_arn" in result.outputs
    assert result.outputs["node_extra_policy_arns"][0] == "arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess"


def test_admin_policy_needs_allow_admin():
    admin = ["arn:aws:iam::aws:policy/AdministratorAccess"]
    assert "access.allow_admin: true" in refusal({**DEV, "access": {"iam_policy_arns": admin}})
    assert parse_cluster_spec({**DEV, "access": {"iam_policy_arns": admin, "allow_admin": True}}).access.allow_admin


NETWORK_TYPES = ("Vpc", "InternetGateway", "Subnet", "Eip", "NatGateway", "RouteTable", "RouteTableAssociation",
                 "VpcEndpoint")


def test_existing_vpc_creates_only_subnets_nat_routes_and_the_s3_endpoint():
    result = cached_plan({**DEV, "network": {"existing_vpc_id": "vpc-0123456789abcdef0", "cidr": "10.0.64.0/20"}})
    network = sorted(r.type.split(":")[-1] for r in result.resources
                     if r.type.startswith("aws:ec2/") and r.type.split(":")[-1] in NETWORK_TYPES)
    assert network == ["Eip", "NatGateway", "RouteTable", "RouteTable", "RouteTableAssociation",
                       "RouteTableAssociation", "Subnet", "Subnet", "VpcEndpoint"]
    subnets = [r.inputs for r in of_type(result, "aws:ec2/subnet:Subnet")]
    assert {s["vpcId"] for s in subnets} == {"vpc-0123456789abcdef0"}
    assert {s["cidrBlock"] for s in subnets} == {"10.0.64.0/22", "10.0.79.240/28"}
    nat_routes = [
        r for r in of_type(result, "aws:ec2/routeTable:RouteTable") if r.name == "gpufleet-nat-routes"][0]
    assert nat_routes.inputs["routes"][0]["gatewayId"] == "igw-placeholder"


def test_s3_goes_through_a_free_gateway_endpoint_on_the_private_route_table_only():
    """Datasets, checkpoints and the node config reach S3 without the NAT gateway's per-GB charge."""
    result = cached_plan(DEV)
    endpoint = one(result, "aws:ec2/vpcEndpoint:VpcEndpoint").inputs
    assert (endpoint["serviceName"], endpoint["vpcEndpointType"]) == ("com.amazonaws.us-east-1.s3", "Gateway")
    assert endpoint["routeTableIds"] == ["gpufleet-routes-id"] and endpoint["vpcId"] == "gpufleet-vpc-id"
    assert "policy" not in endpoint  # the default full-access policy: the same reach as through the NAT gateway


def test_an_existing_subnet_gets_no_network_resources_not_even_the_endpoint():
    result = cached_plan({**DEV, "network": {"existing_subnet_id": "subnet-0123456789abcdef0"}})
    assert [r.type for r in result.resources if r.type.split(":")[-1] in NETWORK_TYPES] == []


def test_existing_subnet_in_another_az_fails_at_deploy_time_with_a_message():
    calls = {**CALLS, "aws:ec2/getSubnet:getSubnet": lambda args: {
        "id": args["id"], "vpcId": "vpc-1", "cidrBlock": "10.0.0.0/20", "availabilityZone": "us-east-1b",
        "availabilityZoneId": "use1-az2"}}
    spec = {**DEV, "network": {"existing_subnet_id": "subnet-0123456789abcdef0"}}
    assert "subnet subnet-0123456789abcdef0 is in us-east-1b (use1-az2) but `zone` is use1-az4" in deploy_failure(
        spec, calls)


def test_existing_subnet_creates_no_network():
    result = cached_plan({**DEV, "network": {"existing_subnet_id": "subnet-0123456789abcdef0"}})
    assert not of_type(result, "aws:ec2/subnet:Subnet") and not of_type(result, "aws:ec2/vpc:Vpc")
    assert one(result, "aws:autoscaling/group:Group").inputs["vpcZoneIdentifiers"] == ["subnet-0123456789abcdef0"]
