"""The generated AWS inventory, read by the real `amazon.aws.aws_ec2` plugin (`ansible-inventory --list`) from moto's
EC2 and Auto Scaling API on loopback: the stack's nodes, launched by an Auto Scaling group as AWS does (tags
propagated, `aws:autoscaling:groupName` set by the group), its monitoring server and its Slurm controller (tagged
as components/aws/slurm_controller.py declares it) come back in their groups with the Session Manager connection set; other clusters' instances, the same stack name in another project, untagged and stopped
instances do not. A stack with two node groups (tests/inventory/grouped_stacks.py), whose Auto Scaling groups carry
the tags its plan declares, lists every group's nodes in `gpu_nodes` and each group's in `node_group_<group>`, with
the group's name, type and fabric; another cluster's group of the same name stays out. With one group elastic (no
Auto Scaling group), the instances its power programs launched and named are that group's nodes."""

from __future__ import annotations

import json

import pytest
import yaml

from gpufleet.cloud_init.power.config import NODE_NAME_KEY
from gpufleet.naming import cluster_hash
from gpufleet.plan.cli import main
from gpufleet.plan.render import plan_json
from gpufleet.plan.runner import run_program
from tests.inventory.ansible_tools import ROOT, ansible_env, group_hosts, inventory_list
from tests.inventory.grouped_stacks import CLUSTERS, declared, planned, stack_config, stack_of, write_stack

# The real plugin in `ansible-inventory` subprocesses against a stand-in API on loopback (2 to 6 s of CPU a
# module): part of `.ci/run`'s slow run, so that the default run stays under a minute on 2 cores.
pytestmark = pytest.mark.slow

boto3 = pytest.importorskip("boto3")
moto_server = pytest.importorskip("moto.server")

STACK, REGION, PROJECT = "aws-dev", "us-east-1", "gpufleet"
BUCKET = "gpufleet-ssm-b0b61b-0123456789abcdef"
FLEET = "gpufleet-nodes-4f2a9c1"
AMI = "ami-12c6146b"  # one of the images moto serves
TEAM_REGION = CLUSTERS["aws"]["region"]  # the two-group stack's


def tags(role: str, cluster: str, stack: str = STACK) -> list[dict]:
    values = {"gpufleet-cluster": cluster, "gpufleet-stack": stack, "gpufleet-role": role,
              "gpufleet-component": "AwsGpuCluster", "Name": f"{stack}-gpufleet-{role}"}
    return [{"Key": key, "Value": value} for key, value in values.items()]


def run_instance(ec2, instance_type: str, instance_tags: list[dict]) -> str:
    spec = [{"ResourceType": "instance", "Tags": instance_tags}] if instance_tags else []
    [instance] = ec2.run_instances(ImageId=AMI, InstanceType=instance_type, MinCount=1, MaxCount=1,
                                   TagSpecifications=spec)["Instances"]
    return instance["InstanceId"]


def fleet(ec2, autoscaling, name: str, group_tags: list[dict], size: int, instance_type: str = "g6e.xlarge",
          zone: str = f"{REGION}a") -> list[str]:
    """A launch template and an Auto Scaling group of `size`, tags propagated at launch (as gpufleet declares)."""
    template = ec2.create_launch_template(LaunchTemplateName=f"{name}-lt", LaunchTemplateData={
        "ImageId": AMI, "InstanceType": instance_type})["LaunchTemplate"]["LaunchTemplateId"]
    autoscaling.create_auto_scaling_group(
        AutoScalingGroupName=name, MinSize=size, MaxSize=size, DesiredCapacity=size,
        LaunchTemplate={"LaunchTemplateId": template, "Version": "$Latest"}, AvailabilityZones=[zone],
        Tags=[{**tag, "PropagateAtLaunch": True, "ResourceId": name, "ResourceType": "auto-scaling-group"}
              for tag in group_tags])
    [group] = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[name])["AutoScalingGroups"]
    return [instance["InstanceId"] for instance in group["Instances"]]


def team_world(ec2, autoscaling) -> dict:
    """The two-group stack's fleets, named and tagged as its plan declares, its monitoring server, and another
    cluster's fleet whose nodes carry the same group tag (`train`)."""
    team = planned("aws")

    def team_fleet(group: str, instance_type: str) -> list[str]:
        deployed = team["outputs"]["node_groups"][group]
        asg_tags = declared(team, "aws:autoscaling/group:Group", deployed["fleet_name"])["tags"]
        return fleet(ec2, autoscaling, deployed["fleet_name"], [{"Key": tag["key"], "Value": tag["value"]}
                                                                for tag in asg_tags],
                     deployed["nodes"], instance_type, f"{TEAM_REGION}a")

    other_train = [*tags("node", cluster_hash("gpufleet", PROJECT, "aws-train"), "aws-train"),
                   {"Key": "gpufleet-node-group", "Value": "train"}]
    team_hash = cluster_hash("gpufleet", PROJECT, stack_of("aws"))
    return {
        "team_train": team_fleet("train", "p5.48xlarge"),
        "team_eval": team_fleet("eval-small", "g6e.xlarge"),
        "team_monitoring": run_instance(ec2, "t3.medium", tags("monitoring", team_hash, stack_of("aws"))),
        "other_train": fleet(ec2, autoscaling, "other-train-nodes", other_train, 1, "p5.48xlarge", f"{TEAM_REGION}a"),
    }


# Once per test process: moto keeps its backends in module globals, shared by every server in the process, and
# worksteal can bring a worker back to this module after another one, which set a module fixture up again into
# the same backends ("Launch template name already in use", the first setup's instances counted twice).
@pytest.fixture(scope="session")
def aws(tmp_path_factory):
    """moto on loopback holding the stack's fleet and monitoring server, instances that are not the stack's, and
    the two-group stack's world (`team_world`)."""
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    credentials = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing", "region_name": REGION}
    ec2 = boto3.client("ec2", endpoint_url=endpoint, **credentials)
    autoscaling = boto3.client("autoscaling", endpoint_url=endpoint, **credentials)
    ours = cluster_hash("gpufleet", PROJECT, STACK)
    world = {
        **team_world(boto3.client("ec2", endpoint_url=endpoint, **{**credentials, "region_name": TEAM_REGION}),
                     boto3.client("autoscaling", endpoint_url=endpoint, **{**credentials, "region_name": TEAM_REGION})),
        "nodes": fleet(ec2, autoscaling, FLEET, tags("node", ours), 2),
        "monitoring": run_instance(ec2, "t3.medium", tags("monitoring", ours)),
        "controller": run_instance(ec2, "m7i.large", tags("slurm-controller", ours)),
        "other_controller": run_instance(ec2, "m7i.large", tags("slurm-controller", cluster_hash(
            "gpufleet", PROJECT, "aws-train"), "aws-train")),
        "other_cluster": fleet(ec2, autoscaling, "other-nodes", tags("node", cluster_hash("gpufleet", PROJECT,
                                                                                          "aws-train"), "aws-train"), 1),
        "same_stack_other_project": run_instance(ec2, "g6e.xlarge", tags("node", cluster_hash("gpufleet", "theirs",
                                                                                               STACK))),
        "untagged": run_instance(ec2, "g6e.xlarge", []),
        "stopped_node": run_instance(ec2, "g6e.xlarge", tags("node", ours)),
    }
    ec2.stop_instances(InstanceIds=[world["stopped_node"]])
    yield endpoint, world
    server.stop()


@pytest.fixture(scope="module")
def listing(aws, tmp_path_factory, monkeypatch_module):
    endpoint, _world = aws
    tmp = tmp_path_factory.mktemp("aws-inventory")
    outputs = tmp / "outputs.json"
    outputs.write_text(json.dumps({"ssm_transfer_bucket": BUCKET, "fleet_name": FLEET}))
    monkeypatch_module.chdir(ROOT)
    assert main(["inventory", STACK, "--out", str(tmp / "inventory"), "--outputs", str(outputs)]) == 0
    env = ansible_env(tmp, AWS_ENDPOINT_URL=endpoint, AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing",
                      AWS_DEFAULT_REGION=REGION)
    return inventory_list(tmp / "inventory" / f"{STACK}.aws_ec2.yml", env)


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        yield patch


def test_exactly_the_stacks_instances_come_back_in_their_groups(aws, listing):
    _endpoint, world = aws
    assert group_hosts(listing, "gpu_nodes") == set(world["nodes"])
    assert group_hosts(listing, "monitoring_server") == {world["monitoring"]}
    assert group_hosts(listing, "slurm_controller") == {world["controller"]}
    every_host = set(listing["_meta"]["hostvars"])
    assert every_host == {*world["nodes"], world["monitoring"], world["controller"]}


def test_every_host_is_reached_through_session_manager_with_the_stacks_bucket(aws, listing):
    _endpoint, world = aws
    for host in (*world["nodes"], world["monitoring"], world["controller"]):
        hostvars = listing["_meta"]["hostvars"][host]
        assert hostvars["ansible_connection"] == "amazon.aws.aws_ssm"
        assert hostvars["ansible_aws_ssm_instance_id"] == host
        assert hostvars["ansible_aws_ssm_bucket_name"] == BUCKET
        assert hostvars["ansible_aws_ssm_region"] == REGION


def test_nodes_carry_cloud_instance_type_fabric_and_node_group(aws, listing):
    _endpoint, world = aws
    node = listing["_meta"]["hostvars"][world["nodes"][0]]
    assert (node["gpufleet_cloud"], node["gpufleet_instance_type"], node["gpufleet_fabric"],
            node["gpufleet_node_group"]) == ("aws", "g6e.xlarge", "tcp", FLEET)
    server = listing["_meta"]["hostvars"][world["monitoring"]]
    assert (server["gpufleet_instance_type"], server["gpufleet_fabric"], server["gpufleet_node_group"]) == (
        "t3.medium", "none", "")



@pytest.fixture(scope="module")
def team_listing(aws, tmp_path_factory, monkeypatch_module):
    """The two-group stack's inventory, with its planned outputs as the deployed stack's."""
    endpoint, _world = aws
    tmp = tmp_path_factory.mktemp("aws-team-inventory")
    outputs = tmp / "outputs.json"
    outputs.write_text(json.dumps({**planned("aws")["outputs"], "ssm_transfer_bucket": BUCKET}))
    monkeypatch_module.chdir(ROOT)
    assert main(["inventory", str(write_stack(tmp, "aws")), "--out", str(tmp / "inventory"), "--outputs",
                 str(outputs)]) == 0
    env = ansible_env(tmp, AWS_ENDPOINT_URL=endpoint, AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing",
                      AWS_DEFAULT_REGION=TEAM_REGION)
    return inventory_list(tmp / "inventory" / f"{stack_of('aws')}.aws_ec2.yml", env)


def test_each_node_group_is_a_group_and_every_groups_nodes_are_gpu_nodes(aws, team_listing):
    _endpoint, world = aws
    assert group_hosts(team_listing, "node_group_train") == set(world["team_train"])
    assert group_hosts(team_listing, "node_group_eval_small") == set(world["team_eval"])
    assert group_hosts(team_listing, "gpu_nodes") == {*world["team_train"], *world["team_eval"]}
    assert group_hosts(team_listing, "monitoring_server") == {world["team_monitoring"]}
    # Another cluster's group of the same name, and the aws-dev stack's instances, stay out.
    assert set(team_listing["_meta"]["hostvars"]) == {*world["team_train"], *world["team_eval"],
                                                      world["team_monitoring"]}


def test_each_node_carries_its_own_groups_name_type_fabric_and_fleet(aws, team_listing):
    _endpoint, world = aws
    fleets = {group: value["fleet_name"] for group, value in planned("aws")["outputs"]["node_groups"].items()}
    hostvars = team_listing["_meta"]["hostvars"]
    for host in world["team_train"]:
        assert (hostvars[host]["gpufleet_node_group"], hostvars[host]["gpufleet_instance_type"],
                hostvars[host]["gpufleet_fabric"], hostvars[host]["gpufleet_fleet"]) == (
            "train", "p5.48xlarge", "efa", fleets["train"])
    [small] = world["team_eval"]
    assert (hostvars[small]["gpufleet_node_group"], hostvars[small]["gpufleet_instance_type"],
            hostvars[small]["gpufleet_fabric"], hostvars[small]["gpufleet_fleet"]) == (
        "eval-small", "g6e.xlarge", "tcp", fleets["eval-small"])
    server = hostvars[world["team_monitoring"]]
    assert (server["gpufleet_node_group"], server["gpufleet_fabric"], server["gpufleet_fleet"]) == ("", "none", "")


def elastic_team_config() -> dict:
    """The two-group stack with `eval-small` elastic (Slurm on): no Auto Scaling group for it."""
    config = stack_config("aws")
    cluster = config["gpufleet:cluster"]
    cluster["scheduler"] = {"kind": "slurm"}
    cluster["node_groups"]["eval-small"]["nodes"] = {"min": 0, "max": 2}
    return config


@pytest.fixture(scope="module")
def elastic_listing(aws, tmp_path_factory, monkeypatch_module):
    """The stack's inventory once `eval-small` is elastic: an instance launched from its template by the power
    programs (the template's tags, the node-name and group tags ResumeProgram writes) beside the fixed group's."""
    endpoint, world = aws
    tmp = tmp_path_factory.mktemp("aws-elastic-inventory")
    monkeypatch_module.chdir(ROOT)
    document = json.loads(plan_json(run_program(stack_of("aws"), elastic_team_config())))
    assert document["outputs"]["node_groups"]["eval-small"]["fleet_name"] is None
    template = declared(document, "aws:ec2/launchTemplate:LaunchTemplate", "gpufleet-eval-small-lt")
    node_tags = next(spec["tags"] for spec in template["tagSpecifications"] if spec["resourceType"] == "instance")
    ec2 = boto3.client("ec2", endpoint_url=endpoint, aws_access_key_id="testing", aws_secret_access_key="testing",
                       region_name=TEAM_REGION)
    elastic_node = run_instance(ec2, "g6e.xlarge", [
        {"Key": key, "Value": value} for key, value in {**node_tags, NODE_NAME_KEY: "gpufleet-eval-small-1",
                                                        "gpufleet-slurm-group": "eval-small"}.items()])
    path = tmp / f"Pulumi.{stack_of('aws')}.yaml"
    path.write_text(yaml.safe_dump({"config": elastic_team_config()}, sort_keys=False))
    outputs = tmp / "outputs.json"
    outputs.write_text(json.dumps({**document["outputs"], "ssm_transfer_bucket": BUCKET}))
    assert main(["inventory", str(path), "--out", str(tmp / "inventory"), "--outputs", str(outputs)]) == 0
    env = ansible_env(tmp, AWS_ENDPOINT_URL=endpoint, AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing",
                      AWS_DEFAULT_REGION=TEAM_REGION)
    listing = inventory_list(tmp / "inventory" / f"{stack_of('aws')}.aws_ec2.yml", env)
    ec2.terminate_instances(InstanceIds=[elastic_node])
    return listing, elastic_node


def test_an_elastic_groups_nodes_are_gpu_nodes_without_an_auto_scaling_group(aws, elastic_listing):
    _endpoint, world = aws
    listing, elastic_node = elastic_listing
    assert group_hosts(listing, "node_group_eval_small") == {elastic_node}  # the old fixed fleet's node is not
    assert group_hosts(listing, "gpu_nodes") == {*world["team_train"], elastic_node}
    assert listing["_meta"]["hostvars"][elastic_node]["gpufleet_node_group"] == "eval-small"
