"""What AwsGpuCluster declares, checked on the inputs the engine would receive (camelCase)."""

from __future__ import annotations

import base64
import gzip
import json
from dataclasses import replace

import pytest

from gpufleet.aws.rules import only_blocks_sell_the_type
from gpufleet.catalog.loader import load_catalog
from gpufleet.catalog.selector import select
from gpufleet.plan.calls import CALLS
from gpufleet.plan.mocks import PlanMocks, RecordingMonitor
from gpufleet.plan.render import plan_json
from gpufleet.plan.runner import run_program
from gpufleet.spec.parse import parse_cluster_spec
from tests.conftest import cached_plan, of_type, one, plan_spec, refusal

TRAIN = {"cloud": "aws", "region": "us-east-2", "zone": "use2-az2", "nodes": 2,
         "accelerator": {"instance_type": "p5.48xlarge"}, "market": "spot", "fabric": "efa"}
DEV = {"cloud": "aws", "region": "us-east-1", "zone": "use1-az4", "nodes": 1, "accelerator": {"instance_type": "g6e.xlarge"}}


plan_of = cached_plan


def test_declares_the_whole_cluster_under_one_component():
    result = plan_of(TRAIN)
    component = one(result, "gpufleet:index:AwsGpuCluster")
    for token in ("aws:ec2/vpc:Vpc", "aws:ec2/natGateway:NatGateway", "aws:ec2/securityGroup:SecurityGroup",
                  "aws:ec2/placementGroup:PlacementGroup", "aws:ec2/launchTemplate:LaunchTemplate",
                  "aws:iam/instanceProfile:InstanceProfile", "aws:autoscaling/group:Group"):
        declared = of_type(result, token)  # the monitoring server adds its own group and profile
        assert declared and all(r.parent == component.urn for r in declared), token
    assert all(r.parent == component.urn for r in result.resources if r is not component)


def test_nodes_go_into_one_private_subnet_in_one_zone():
    result = plan_of(TRAIN)
    subnets = {r.name: r.inputs for r in of_type(result, "aws:ec2/subnet:Subnet")}
    assert set(subnets) == {"gpufleet-subnet", "gpufleet-nat-subnet"}
    assert all(s["availabilityZoneId"] == "use2-az2" and s["mapPublicIpOnLaunch"] is False for s in subnets.values())
    group = one(result, "aws:autoscaling/group:Group").inputs
    assert group["vpcZoneIdentifiers"] == ["gpufleet-subnet-id"]
    nat = one(result, "aws:ec2/natGateway:NatGateway").inputs
    assert nat["subnetId"] == "gpufleet-nat-subnet-id"


def test_private_subnet_routes_through_the_nat_gateway():
    tables = {r.name: r.inputs for r in of_type(plan_of(TRAIN), "aws:ec2/routeTable:RouteTable")}
    assert tables["gpufleet-routes"]["routes"] == [{"cidrBlock": "0.0.0.0/0", "natGatewayId": "gpufleet-nat-id"}]
    assert tables["gpufleet-nat-routes"]["routes"] == [{"cidrBlock": "0.0.0.0/0", "gatewayId": "gpufleet-igw-id"}]


def test_security_group_references_itself_in_both_directions():
    result = plan_of(TRAIN)
    ingress = [r.inputs for r in of_type(result, "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")]
    egress = [r.inputs for r in of_type(result, "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule")]
    self_rule = {"securityGroupId": "gpufleet-sg-id", "referencedSecurityGroupId": "gpufleet-sg-id", "ipProtocol": "-1"}
    assert any(self_rule.items() <= rule.items() for rule in ingress)
    assert any(self_rule.items() <= rule.items() for rule in egress)
    assert ingress == [r for r in ingress if r.get("referencedSecurityGroupId")], "SSH must stay closed by default"


def test_ssh_opens_only_to_the_given_cidrs():
    result = plan_of({**TRAIN, "access": {"ssh_cidrs": ["203.0.113.0/24"], "ssh_public_key": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGdwdWZsZWV0LWV4YW1wbGUtcmVwbGFjZS1tZS0wMDAw me"}})
    ssh = [r.inputs for r in of_type(result, "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
           if r.inputs.get("fromPort") == 22]
    assert ssh == [{**ssh[0], "cidrIpv4": "203.0.113.0/24", "toPort": 22, "ipProtocol": "tcp"}]
    assert one(result, "aws:ec2/keyPair:KeyPair").inputs["publicKey"] == "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGdwdWZsZWV0LWV4YW1wbGUtcmVwbGFjZS1tZS0wMDAw me"


@pytest.mark.parametrize("instance_type, zone, region, interfaces", [
    ("p4d.24xlarge", "use1-az2", "us-east-1", 5), ("p5.48xlarge", "use2-az2", "us-east-2", 33),
    ("p5en.48xlarge", "use2-az2", "us-east-2", 17), ("p6-b200.48xlarge", "use2-az2", "us-east-2", 9),
])
def test_launch_template_carries_the_efa_layout_of_the_family(instance_type, zone, region, interfaces):
    spec = {**TRAIN, "region": region, "zone": zone, "accelerator": {"instance_type": instance_type}}
    nics = one(plan_of(spec), "aws:ec2/launchTemplate:LaunchTemplate").inputs["networkInterfaces"]
    assert len(nics) == interfaces
    assert nics[0]["interfaceType"] == "interface" and nics[0]["networkCardIndex"] == 0 and nics[0]["deviceIndex"] == 0
    assert {n["interfaceType"] for n in nics[1:]} == {"efa-only"}
    assert all(n["securityGroups"] == ["gpufleet-sg-id"] for n in nics)


def test_nodes_are_private_imdsv2_and_encrypted():
    template = one(plan_of(TRAIN), "aws:ec2/launchTemplate:LaunchTemplate").inputs
    assert template["metadataOptions"] == {"httpEndpoint": "enabled", "httpPutResponseHopLimit": 1,
                                           "httpTokens": "required", "instanceMetadataTags": "disabled"}
    assert template["blockDeviceMappings"][0]["ebs"] == {"deleteOnTermination": "true", "encrypted": "true",
                                                         "volumeSize": 200, "volumeType": "gp3"}
    assert template["networkInterfaces"][0]["associatePublicIpAddress"] == "false"
    assert not any(n.get("associatePublicIpAddress") == "true" for n in template["networkInterfaces"])
    assert "vpcSecurityGroupIds" not in template


DLAMI_PARAMETER = "/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id"


def test_default_image_is_the_deep_learning_ami_resolved_at_deploy_and_pinned():
    asked = []

    def parameter(args: dict) -> dict:
        asked.append(args)
        return {"name": args["name"], "value": "ami-0123456789abcdef0", "type": "String"}

    monitor = RecordingMonitor(PlanMocks(calls={**CALLS, "aws:ssm/getParameter:getParameter": parameter}))
    result = run_program("test", {"gpufleet:cluster": TRAIN}, monitor=monitor)
    assert [(a["name"], a.get("region")) for a in asked if "deeplearning" in a["name"]] == [(DLAMI_PARAMETER, "us-east-2")]
    assert one(result, "aws:ec2/launchTemplate:LaunchTemplate").inputs["imageId"] == "ami-0123456789abcdef0"


def test_image_track_latest_lets_ec2_resolve_the_parameter_at_each_launch():
    template = one(plan_of({**TRAIN, "image": {"track": "latest"}}), "aws:ec2/launchTemplate:LaunchTemplate").inputs
    assert template["imageId"] == f"resolve:ssm:{DLAMI_PARAMETER}"


def test_image_id_pins_an_exact_ami_without_a_lookup():
    template = one(plan_of({**TRAIN, "image": {"id": "ami-0abcdef0123456789"}}),
                   "aws:ec2/launchTemplate:LaunchTemplate").inputs
    assert template["imageId"] == "ami-0abcdef0123456789"


def test_a_tracked_image_cannot_also_be_pinned():
    message = refusal({**TRAIN, "image": {"id": "ami-0abcdef0123456789", "track": "latest"}})
    assert "`image.track`" in message


def test_instance_profile_allows_ssm_session_manager():
    result = plan_of(TRAIN)
    attachment = one(result, "aws:iam/rolePolicyAttachment:RolePolicyAttachment").inputs
    assert attachment["policyArn"] == "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore"
    template = one(result, "aws:ec2/launchTemplate:LaunchTemplate").inputs
    assert template["iamInstanceProfile"] == {"arn": "arn:mock:aws:iam/instanceProfile:InstanceProfile:gpufleet-profile"}


def test_user_data_is_gzipped_cloud_config_within_16kb():
    encoded = one(plan_of(TRAIN), "aws:ec2/launchTemplate:LaunchTemplate").inputs["userData"]
    compressed = base64.b64decode(encoded)
    assert len(compressed) <= 16384
    assert gzip.decompress(compressed).decode().startswith("#cloud-config")


def test_spot_fleet_uses_price_capacity_optimized_with_rebalance():
    group = one(plan_of(TRAIN), "aws:autoscaling/group:Group").inputs
    distribution = group["mixedInstancesPolicy"]["instancesDistribution"]
    assert distribution == {"onDemandBaseCapacity": 0, "onDemandPercentageAboveBaseCapacity": 0,
                            "spotAllocationStrategy": "price-capacity-optimized"}
    assert group["capacityRebalance"] is True
    assert group["placementGroup"] == "gpufleet-pg"
    assert (group["minSize"], group["maxSize"], group["desiredCapacity"]) == (2, 2, 2)


def test_mixed_market_keeps_an_on_demand_base():
    group = one(plan_of({**TRAIN, "nodes": 4, "market": {"type": "mixed", "on_demand_base": 1}}),
                "aws:autoscaling/group:Group").inputs
    assert group["mixedInstancesPolicy"]["instancesDistribution"]["onDemandBaseCapacity"] == 1


def test_on_demand_fleet_uses_the_template_directly():
    group = one(plan_of(DEV), "aws:autoscaling/group:Group").inputs
    assert "mixedInstancesPolicy" not in group and group["capacityRebalance"] is False
    assert group["launchTemplate"] == {"id": "gpufleet-lt-id", "version": "1"}


def test_single_node_gets_no_placement_group_and_no_efa():
    result = plan_of(DEV)
    assert of_type(result, "aws:ec2/placementGroup:PlacementGroup") == []
    nics = one(result, "aws:ec2/launchTemplate:LaunchTemplate").inputs["networkInterfaces"]
    assert [n["interfaceType"] for n in nics] == ["interface"]


def test_single_efa_node_is_already_built_for_the_cluster_so_growing_touches_only_the_fleet():
    one_node, two_nodes = plan_of({**TRAIN, "nodes": 1, "fabric": "auto"}), plan_of({**TRAIN, "fabric": "auto"})
    assert one(one_node, "aws:ec2/placementGroup:PlacementGroup").inputs["strategy"] == "cluster"
    assert len(one(one_node, "aws:ec2/launchTemplate:LaunchTemplate").inputs["networkInterfaces"]) == 33
    changed = [a.name for a, b in zip(one_node.resources, two_nodes.resources, strict=True) if a.inputs != b.inputs]
    assert len(one_node.resources) == len(two_nodes.resources) and changed == ["gpufleet-nodes"]


FUTURE_BLOCK = {"type": "on-demand", "capacity_reservation_id": "cr-0abc1234", "capacity_block": True,
                "capacity_block_start": "2099-01-10T11:30:00Z", "capacity_block_end": "2099-01-12T11:30:00Z"}


def test_capacity_block_skips_the_placement_group_and_targets_the_reservation():
    spec = {**TRAIN, "market": FUTURE_BLOCK}
    result = plan_of(spec)
    assert of_type(result, "aws:ec2/placementGroup:PlacementGroup") == []
    template = one(result, "aws:ec2/launchTemplate:LaunchTemplate").inputs
    assert template["instanceMarketOptions"] == {"marketType": "capacity-block"}
    assert template["capacityReservationSpecification"] == {
        "capacityReservationTarget": {"capacityReservationId": "cr-0abc1234"}}


def test_existing_subnet_creates_no_network():
    result = plan_of({**TRAIN, "network": {"existing_subnet_id": "subnet-01234567"}})
    assert of_type(result, "aws:ec2/vpc:Vpc") == [] and of_type(result, "aws:ec2/natGateway:NatGateway") == []
    assert one(result, "aws:autoscaling/group:Group").inputs["vpcZoneIdentifiers"] == ["subnet-01234567"]
    groups = {r.name: r.inputs for r in of_type(result, "aws:ec2/securityGroup:SecurityGroup")}
    assert {group["vpcId"] for group in groups.values()} == {"vpc-of-subnet-01234567"} and "gpufleet-sg" in groups


def test_resource_count_stays_flat_and_node_count_touches_only_the_fleet():
    small, large = plan_of({**TRAIN, "nodes": 8}), plan_of({**TRAIN, "nodes": 1024})
    assert len(small.resources) == len(large.resources)
    changed = [a.name for a, b in zip(small.resources, large.resources, strict=True) if a.inputs != b.inputs]
    assert changed == ["gpufleet-nodes"]


def test_every_taggable_resource_carries_provenance_tags():
    for resource in plan_of(TRAIN).resources:
        if "tags" in resource.inputs and resource.type != "aws:autoscaling/group:Group":
            tags = resource.inputs["tags"]
            assert tags["gpufleet-stack"] == "test" and tags["gpufleet-component"] == "AwsGpuCluster", resource.name
    group_tags = {t["key"]: t for t in one(plan_of(TRAIN), "aws:autoscaling/group:Group").inputs["tags"]}
    assert group_tags["gpufleet-role"]["propagateAtLaunch"] is True


def test_plans_are_byte_identical():
    assert plan_json(plan_spec(TRAIN)) == plan_json(plan_spec(TRAIN))


def test_outputs_tell_the_user_what_comes_next():
    outputs = plan_of(TRAIN).outputs
    assert outputs["instance_type"] == "p5.48xlarge" and outputs["gpus_total"] == 16
    assert outputs["fabric"] == "efa" and outputs["placement_group"] == "gpufleet-pg"
    assert outputs["fleet_name"] == "gpufleet-nodes"
    assert outputs["connect"].startswith("aws ssm start-session --region us-east-2")
    assert "slots=8" in outputs["hostfile"]
    assert outputs["estimated_usd_per_hour"] == pytest.approx(2 * 11.5616, abs=0.01)
    assert outputs["estimated_usd_per_month"] == pytest.approx(2 * 11.5616 * 730, abs=10)


@pytest.mark.parametrize("bad, message", [
    ({"accelerator": {"gpu": "H10"}}, "`accelerator.gpu`: got 'H10'; did you mean 'H100'"),
    ({"accelerator": {"instance_type": "p5.48xl"}}, "`accelerator.instance_type`: got 'p5.48xl'"),
    ({"accelerator": {"gpu": "H100", "gpus_per_node": 4}}, "`accelerator.gpus_per_node`: got 4; H100 on aws comes with 1, 8 GPUs per node"),
    ({"nodes": 0}, "`nodes`: got 0"),
    ({"accelerator": {"instance_type": "g6e.xlarge"}, "region": "us-east-1", "zone": "use1-az4"},
     "`fabric`: got 'efa'; g6e.xlarge has no EFA support"),
    ({"access": {"ssh_cidrs": ["10.0.0.0/8", "1.2.3.4/40"]}}, "`access.ssh_cidrs[1]`: got '1.2.3.4/40'"),
    ({"access": {"ssh_cidrs": ["0.0.0.0/0"]}}, "`access.ssh_cidrs[0]`: got '0.0.0.0/0'"),
    ({"zone": "us-west-2a"}, "`zone`: got 'us-west-2a'; expected a zone of region 'us-east-2'"),
    ({"zone": "use2-az9"}, "`zone`: got 'use2-az9'; p5.48xlarge is not offered in that zone"),
    ({"colour": "red"}, "`colour`: got 'red'; unknown key"),
    ({"node": {"driver": {"branch": "535"}}}, "`node.cuda`: got '13.0'; CUDA 13.x needs driver branch 580 or newer"),
    ({"node": {"mig": {"profiles": ["3g.40gb"] * 3}}}, "`node.mig.profiles`: got ['3g.40gb', '3g.40gb', '3g.40gb']"),
])
def test_bad_input_is_refused_before_anything_is_declared(bad, message):
    assert message in refusal({**TRAIN, **bad})


def test_auto_fabric_without_efa_falls_back_to_tcp_with_a_warning():
    result = plan_of({**DEV, "nodes": 2})
    assert result.outputs["fabric"] == "tcp"
    assert any("no RDMA fabric" in w for w in result.outputs["warnings"])


def test_every_node_leaves_through_the_drain_hook_and_up_never_waits_on_scarce_capacity():
    """Every AWS node runs the watcher, which completes the hook once drained: spot, mixed, Capacity Block and plain
    on-demand nodes alike (scale-in, repair and instance refresh go through the hook too)."""
    markets = (TRAIN, {**TRAIN, "market": {"type": "mixed", "on_demand_base": 1}}, {**TRAIN, "market": FUTURE_BLOCK},
               DEV)
    for spec in markets:
        result = plan_of(spec)
        group = one(result, "aws:autoscaling/group:Group")
        assert "initialLifecycleHooks" not in group.inputs  # AWS applies those only when the group is created
        assert group.inputs["waitForCapacityTimeout"] == "0"
        expected = [{
            "autoscalingGroupName": group.name, "name": "gpufleet-drain", "region": spec["region"],
            "lifecycleTransition": "autoscaling:EC2_INSTANCE_TERMINATING", "defaultResult": "CONTINUE",
            "heartbeatTimeout": 300}]
        assert [r.inputs for r in of_type(result, "aws:autoscaling/lifecycleHook:LifecycleHook")] == expected
    assert one(plan_of(TRAIN), "aws:autoscaling/group:Group").inputs["capacityRebalance"] is True


def test_the_node_role_may_finish_only_its_own_groups_drain_hook():
    policies = [json.loads(r.inputs["policy"]) for r in of_type(plan_of(TRAIN), "aws:iam/rolePolicy:RolePolicy")]
    statement = [s for p in policies for s in p["Statement"] if "autoscaling:CompleteLifecycleAction" in s["Action"]]
    assert len(statement) == 1 and statement[0]["Resource"] == "*"
    condition = statement[0]["Condition"]["StringEquals"]
    group = one(plan_of(TRAIN), "aws:autoscaling/group:Group").inputs
    group_tags = {tag["key"]: tag["value"] for tag in group["tags"]}
    assert condition == {"autoscaling:ResourceTag/gpufleet-cluster": group_tags["gpufleet-cluster"]}


def test_an_on_demand_node_may_report_its_health_and_finish_its_hook():
    policies = [json.loads(r.inputs["policy"]) for r in of_type(plan_of(DEV), "aws:iam/rolePolicy:RolePolicy")]
    actions = {action for p in policies for s in p["Statement"] for action in
               ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])}
    assert {"autoscaling:SetInstanceHealth", "autoscaling:CompleteLifecycleAction",
            "autoscaling:RecordLifecycleActionHeartbeat"} <= actions


def test_capacity_wait_is_a_spec_field():
    group = one(plan_of({**DEV, "market": {"wait_for_capacity_timeout": "20m"}}), "aws:autoscaling/group:Group")
    assert group.inputs["waitForCapacityTimeout"] == "20m"
    assert "wait_for_capacity_timeout" in refusal({**DEV, "market": {"wait_for_capacity_timeout": "soon"}})


def test_a_future_capacity_block_starts_empty_and_is_sized_by_its_window():
    result = plan_of({**TRAIN, "market": FUTURE_BLOCK})
    group = one(result, "aws:autoscaling/group:Group").inputs
    assert (group["minSize"], group["desiredCapacity"], group["maxSize"]) == (0, 0, 2)
    assert group["waitForCapacityTimeout"] == "0"
    actions = {r.inputs["scheduledActionName"]: r.inputs for r in of_type(result, "aws:autoscaling/schedule:Schedule")}
    assert actions == {
        "gpufleet-block-start": {"autoscalingGroupName": "gpufleet-nodes", "scheduledActionName": "gpufleet-block-start",
                                 "startTime": "2099-01-10T11:30:00Z", "minSize": 2, "maxSize": 2, "desiredCapacity": 2,
                                 "region": "us-east-2"},
        "gpufleet-block-end": {"autoscalingGroupName": "gpufleet-nodes", "scheduledActionName": "gpufleet-block-end",
                               "startTime": "2099-01-12T10:50:00Z", "minSize": 0, "maxSize": 2, "desiredCapacity": 0,
                               "region": "us-east-2"},
    }


def test_a_running_capacity_block_is_sized_now_and_still_emptied_before_its_end():
    block = {**FUTURE_BLOCK, "capacity_block_start": "2020-01-01T00:00:00Z"}
    result = plan_of({**TRAIN, "market": block})
    group = one(result, "aws:autoscaling/group:Group").inputs
    assert (group["minSize"], group["desiredCapacity"]) == (2, 2)
    assert [r.inputs["scheduledActionName"] for r in of_type(result, "aws:autoscaling/schedule:Schedule")] == [
        "gpufleet-block-end"]


@pytest.mark.parametrize("market, extra, expected", [
    ({**FUTURE_BLOCK, "capacity_block_end": "2020-01-02T00:00:00Z", "capacity_block_start": "2020-01-01T00:00:00Z"},
     {}, "`market.capacity_block_end`: got '2020-01-02T00:00:00Z'; the block ends within 40 minutes or has ended"),
    ({k: v for k, v in FUTURE_BLOCK.items() if k != "capacity_block_end"}, {},
     "`market.capacity_block_end`: got nothing; required with `market.capacity_block: true`"),
    ({**FUTURE_BLOCK, "capacity_block_end": "2099-01-09T00:00:00Z"}, {},
     "`market.capacity_block_end`: got '2099-01-09T00:00:00Z'; must be after"),
    (FUTURE_BLOCK, {"placement_group": True}, "`placement_group`: got true; a Capacity Block already co-locates"),
    (FUTURE_BLOCK, {"accelerator": {"instance_type": "g6e.xlarge"}, "fabric": "auto"},
     "`market.capacity_block`: got true; Capacity Blocks do not offer g6e.xlarge"),
    (FUTURE_BLOCK, {"accelerator": {"instance_type": "p6e-gb200.36xlarge"}},
     "`accelerator.instance_type`: got 'p6e-gb200.36xlarge'; p6e-gb200.36xlarge (GB200) needs arm64 images and node "
     "software (gpufleet's are x86_64) and NVIDIA IMEX across the 72-GPU NVLink domain"),
    ({"type": "on-demand", "capacity_reservation_id": "cr-0abc1234"}, {"placement_group": True},
     "`placement_group`: got true; instances in an existing capacity reservation cannot launch into a placement group"),
    ({"type": "on-demand", "capacity_block_start": "2099-01-10T11:30:00Z"}, {},
     "`market.capacity_block_start`: got '2099-01-10T11:30:00Z'; only applies with `market.capacity_block: true`"),
])
def test_reservation_and_capacity_block_mistakes_are_refused(market, extra, expected):
    assert expected in refusal({**TRAIN, "market": market, **extra})


def test_an_odcr_gets_no_new_placement_group_but_may_reuse_the_reservations():
    odcr = {"type": "on-demand", "capacity_reservation_id": "cr-0abc1234"}
    result = plan_of({**TRAIN, "market": odcr})
    assert of_type(result, "aws:ec2/placementGroup:PlacementGroup") == []
    assert "placementGroup" not in one(result, "aws:autoscaling/group:Group").inputs
    reused = plan_of({**TRAIN, "market": odcr, "placement_group_name": "odcr-pg"})
    assert of_type(reused, "aws:ec2/placementGroup:PlacementGroup") == []
    assert one(reused, "aws:autoscaling/group:Group").inputs["placementGroup"] == "odcr-pg"


def test_rollout_is_off_by_default_and_an_instance_refresh_when_asked():
    assert "instanceRefresh" not in one(plan_of(TRAIN), "aws:autoscaling/group:Group").inputs
    group = one(plan_of({**TRAIN, "nodes": 4, "rollout": {"enabled": True, "max_unavailable": 1}}),
                "aws:autoscaling/group:Group").inputs
    assert group["instanceRefresh"]["strategy"] == "Rolling"
    assert group["instanceRefresh"]["preferences"]["minHealthyPercentage"] == 75
    assert group["instanceRefresh"]["preferences"]["skipMatching"] is True


@pytest.mark.parametrize("market", ["on-demand", "spot"])
def test_a_type_sold_only_through_capacity_blocks_is_refused_outside_one(market):
    """p6e-gb200 (catalog `capacity_blocks_only`); the rule alone, since GB200 nodes are refused before it."""
    selection = select(parse_cluster_spec({**TRAIN, "market": market}))
    blocked = replace(selection, instance=load_catalog().instance("aws", "p6e-gb200.36xlarge"))
    [problem] = only_blocks_sell_the_type(blocked)
    assert str(problem).startswith("`market.capacity_block`: got false; p6e-gb200.36xlarge is sold only through EC2 "
                                   "Capacity Blocks for ML, never on demand or on Spot")
    assert only_blocks_sell_the_type(selection) == []
    in_block = replace(blocked, spec=parse_cluster_spec({**TRAIN, "market": FUTURE_BLOCK}))
    assert only_blocks_sell_the_type(in_block) == []
