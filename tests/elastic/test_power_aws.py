"""The power programs' AWS half against moto's server on loopback: the group's launch template launched through an
instant EC2 Fleet per target, each instance tagged with its Slurm node's name and the cluster's tag, the next
target tried within the same resume when one answers with a capacity error (injected in EC2's own XML by
ec2_faults.py, since moto launches whatever it is asked to), the nodes left DOWN with the cloud's error as the
reason when none is left (quota named as quota), and release terminating exactly the named nodes' instances by id,
never a busy node's, never another cluster's."""

from __future__ import annotations

import pytest

from gpufleet.cloud_init.power.aws import AwsProvider
from gpufleet.cloud_init.power.config import (
    CLUSTER_KEY,
    NODE_NAME_KEY,
    AwsApi,
    AwsGroup,
    AwsTarget,
    PowerConfig,
    PowerGroup,
)
from gpufleet.cloud_init.power.engine import release, resume
from gpufleet.cloud_init.power.metrics import PowerState

from .ec2_faults import Ec2Faults
from .fake_slurm import FakeSlurm

moto_server = pytest.importorskip("moto.server")
boto3 = pytest.importorskip("boto3")
REGION, CLUSTER, AMI = "us-east-1", "c0ffee", "ami-12c6146b"
ZONES = ("us-east-1a", "us-east-1b")


# Once per test process: moto keeps its backends in module globals, shared by every server in the process, and
# worksteal can bring a worker back to this module after another one, which set a module fixture up again into
# the same backends ("Launch template name already in use", the first setup's instances counted twice).
@pytest.fixture(scope="session")
def cloud():
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    faults = Ec2Faults(f"http://{host}:{port}")
    proxy = faults.server().start()
    ec2 = boto3.client("ec2", endpoint_url=proxy.url, region_name=REGION, aws_access_key_id="testing",
                       aws_secret_access_key="testing")
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnets = {zone: ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.0.{index}.0/24", AvailabilityZone=zone)
               ["Subnet"]["SubnetId"] for index, zone in enumerate(ZONES)}
    template = ec2.create_launch_template(LaunchTemplateName="train", LaunchTemplateData={
        "ImageId": AMI, "InstanceType": "p5.48xlarge"})["LaunchTemplate"]["LaunchTemplateId"]
    yield ec2, faults, subnets, template
    proxy.close()
    server.stop()


def config(tmp_path, subnets, template, types=("p5.48xlarge", "p5e.48xlarge")) -> PowerConfig:
    targets = tuple(AwsTarget(instance_type=kind, subnet_id=subnets[zone], availability_zone=zone)
                    for kind in types for zone in ZONES)
    group = PowerGroup(name="train", partition="train", node_prefix="train-", max_nodes=8,
                       aws=AwsGroup(launch_template_id=template, targets=targets, market="spot"))
    return PowerConfig(cloud="aws", cluster_id=CLUSTER, groups=(group,), aws=AwsApi(region=REGION),
                       state_dir=str(tmp_path / "state"), metrics_file=str(tmp_path / "metrics.prom"))


def run_resume(tmp_path, cloud, names, types=("p5.48xlarge", "p5e.48xlarge")):
    ec2, faults, subnets, template = cloud
    settings = config(tmp_path, subnets, template, types)
    slurm = FakeSlurm(names)
    provider = AwsProvider(settings, client=ec2)
    resume(settings, provider, slurm, PowerState(settings.state_dir, settings.metrics_file, ["train"]), names)
    return settings, provider, slurm


def instances_of(ec2, names):
    found = {}
    for reservation in ec2.describe_instances(Filters=[{"Name": f"tag:{NODE_NAME_KEY}", "Values": names}])[
            "Reservations"]:
        for item in reservation["Instances"]:
            if item["State"]["Name"] in ("pending", "running"):
                tags = {tag["Key"]: tag["Value"] for tag in item.get("Tags", [])}
                found[tags[NODE_NAME_KEY]] = (item["InstanceId"], item["InstanceType"],
                                              item["Placement"]["AvailabilityZone"], tags)
    return found


@pytest.fixture(autouse=True)
def clean_faults(cloud):
    _, faults, *_ = cloud
    faults.errors.clear()
    faults.refusals.clear()
    faults.calls.clear()


def test_a_resume_launches_the_groups_template_and_names_each_instance(tmp_path, cloud):
    ec2, faults, subnets, template = cloud
    names = ["train-1", "train-2"]
    _, _, slurm = run_resume(tmp_path, cloud, names)
    found = instances_of(ec2, names)
    assert sorted(found) == names
    for _, kind, zone, tags in found.values():
        assert (kind, zone) == ("p5.48xlarge", ZONES[0])
        assert tags[CLUSTER_KEY] == CLUSTER and tags["gpufleet-slurm-group"] == "train"
    assert faults.calls == [("p5.48xlarge", ZONES[0])]  # one fleet for both nodes
    assert slurm.updates == []
    fleets = ec2.describe_fleets()["Fleets"]
    assert {spec["LaunchTemplateSpecification"]["LaunchTemplateId"] for fleet in fleets
            for spec in fleet["LaunchTemplateConfigs"]} == {template}
    assert all(fleet["Type"] == "instant" for fleet in fleets)


def test_a_capacity_error_falls_back_to_the_next_zone_then_the_fallback_type(tmp_path, cloud):
    ec2, faults, *_ = cloud
    faults.errors[("p5.48xlarge", ZONES[0])] = "InsufficientInstanceCapacity"
    faults.errors[("p5.48xlarge", ZONES[1])] = "InsufficientInstanceCapacity"
    _, _, slurm = run_resume(tmp_path, cloud, ["train-3"])
    assert faults.calls == [("p5.48xlarge", ZONES[0]), ("p5.48xlarge", ZONES[1]), ("p5e.48xlarge", ZONES[0])]
    [(_, kind, zone, _)] = instances_of(ec2, ["train-3"]).values()
    assert (kind, zone) == ("p5e.48xlarge", ZONES[0])
    assert slurm.updates == []
    metrics = (tmp_path / "metrics.prom").read_text()
    assert 'gpufleet_capacity_short{group="train",reason="capacity"} 0' in metrics


def test_nothing_left_leaves_the_nodes_down_with_the_clouds_error_named_as_quota(tmp_path, cloud):
    ec2, faults, *_ = cloud
    faults.errors[("p5.48xlarge", ZONES[0])] = "InsufficientInstanceCapacity"
    faults.errors[("p5.48xlarge", ZONES[1])] = "VcpuLimitExceeded"
    _, _, slurm = run_resume(tmp_path, cloud, ["train-4", "train-5"], types=("p5.48xlarge",))
    assert instances_of(ec2, ["train-4", "train-5"]) == {}
    reason = "gpufleet quota: VcpuLimitExceeded on p5.48xlarge us-east-1b (2 of 2 targets failed)"
    assert slurm.updates == [(("train-4", "train-5"), "DOWN", reason),
                             (("train-4", "train-5"), "POWER_DOWN_FORCE", reason)]
    metrics = (tmp_path / "metrics.prom").read_text()
    assert 'gpufleet_capacity_short{group="train",reason="quota"} 1' in metrics
    assert 'gpufleet_power_resume_failures_total{group="train",reason="quota"} 2' in metrics


def test_a_refused_call_is_an_error_not_capacity(tmp_path, cloud):
    _, faults, *_ = cloud
    faults.refusals[("p5.48xlarge", ZONES[0])] = (403, "UnauthorizedOperation")
    faults.refusals[("p5.48xlarge", ZONES[1])] = (403, "UnauthorizedOperation")
    _, _, slurm = run_resume(tmp_path, cloud, ["train-6"], types=("p5.48xlarge",))
    assert slurm.updates[0] == (("train-6",), "DOWN", "gpufleet error: UnauthorizedOperation on p5.48xlarge "
                                                       "us-east-1b (2 of 2 targets failed)")
    assert 'gpufleet_capacity_short{group="train",reason="error"} 1' in (tmp_path / "metrics.prom").read_text()


def test_release_terminates_the_named_idle_nodes_by_id_and_never_a_busy_one(tmp_path, cloud):
    ec2, faults, subnets, template = cloud
    names = ["train-7", "train-8"]
    settings, provider, _ = run_resume(tmp_path, cloud, names)
    started = instances_of(ec2, names)
    other = ec2.run_instances(ImageId=AMI, MinCount=1, MaxCount=1, InstanceType="p5.48xlarge", TagSpecifications=[{
        "ResourceType": "instance", "Tags": [{"Key": CLUSTER_KEY, "Value": "another-cluster"},
                                             {"Key": NODE_NAME_KEY, "Value": "train-7"}]}])["Instances"][0]
    slurm = FakeSlurm(names, busy=("train-8",))
    release(settings, provider, slurm, PowerState(settings.state_dir, settings.metrics_file, ["train"]), names)
    states = {item["InstanceId"]: item["State"]["Name"] for reservation in ec2.describe_instances()["Reservations"]
              for item in reservation["Instances"]}
    assert states[started["train-7"][0]] == "terminated"
    assert states[started["train-8"][0]] == "running"  # runs a job
    assert states[other["InstanceId"]] == "running"  # the same node name in another cluster
    assert 'gpufleet_power_nodes_released_total{group="train"} 1' in (tmp_path / "metrics.prom").read_text()


def test_a_second_resume_of_a_node_with_an_instance_launches_nothing(tmp_path, cloud):
    ec2, faults, *_ = cloud
    run_resume(tmp_path, cloud, ["train-1"])  # train-1 was started by the first test or just now
    calls = list(faults.calls)
    run_resume(tmp_path, cloud, ["train-1"])
    assert faults.calls == calls
    assert len(instances_of(ec2, ["train-1"])) == 1


def test_a_fallback_target_launches_from_its_own_template(tmp_path, cloud):
    """A fallback type's target names its own launch template (its node config names its type): the fleet that
    starts the node after the first type's capacity error is made from that template, the first from the group's."""
    ec2, faults, subnets, template = cloud
    own = ec2.create_launch_template(LaunchTemplateName="train-p5e", LaunchTemplateData={
        "ImageId": AMI, "InstanceType": "p5e.48xlarge"})["LaunchTemplate"]["LaunchTemplateId"]
    faults.errors[("p5.48xlarge", ZONES[0])] = "InsufficientInstanceCapacity"
    targets = (AwsTarget(instance_type="p5.48xlarge", subnet_id=subnets[ZONES[0]], availability_zone=ZONES[0]),
               AwsTarget(instance_type="p5e.48xlarge", subnet_id=subnets[ZONES[0]], availability_zone=ZONES[0],
                         launch_template_id=own))
    group = PowerGroup(name="train", partition="train", node_prefix="train-", max_nodes=8,
                       aws=AwsGroup(launch_template_id=template, targets=targets, market="spot"))
    settings = PowerConfig(cloud="aws", cluster_id=CLUSTER, groups=(group,), aws=AwsApi(region=REGION),
                           state_dir=str(tmp_path / "state"), metrics_file=str(tmp_path / "metrics.prom"))
    before = {fleet["FleetId"] for fleet in ec2.describe_fleets()["Fleets"]}
    names = ["train-7"]
    resume(settings, AwsProvider(settings, client=ec2), FakeSlurm(names),
           PowerState(settings.state_dir, settings.metrics_file, ["train"]), names)
    assert faults.calls == [("p5.48xlarge", ZONES[0]), ("p5e.48xlarge", ZONES[0])]
    [(_, kind, _, _)] = instances_of(ec2, names).values()
    assert kind == "p5e.48xlarge"
    made = [fleet for fleet in ec2.describe_fleets()["Fleets"] if fleet["FleetId"] not in before]
    assert [spec["LaunchTemplateSpecification"]["LaunchTemplateId"] for fleet in made
            for spec in fleet["LaunchTemplateConfigs"]] == [own]
