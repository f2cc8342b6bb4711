"""AWS elastic groups as declared (components/aws/elastic.py): the group's launch template and no Auto Scaling
group, the controller's slurm.conf with CLOUD nodes and power saving, its power config naming the template, the
node's IMDS tags, the controller's scoped power policy, the elastic alerts on the monitoring server; checked like
every other plan (provider required inputs, the policy pack, cloud-init's schema and the boot order), the same spec
giving the same bytes, and the plan's power config run by the real power programs against moto's EC2."""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from gpufleet.cloud_init.power.config import CLUSTER_KEY, NODE_NAME_KEY, load_power_config
from gpufleet.policy.engine import check_plan
from tests.conftest import cached_plan, plan_spec
from tests.yaml_reader import read_yaml

from ..cloud_init.stack_configs import plan_cloud_configs
from ..cloud_init.test_boot_order import assert_no_ordering_cycle, machine
from ..elastic.documents import doc, named
from ..plan.test_required_inputs import problems_of
from ..scheduler.test_slurm_daemons import SLURM_HINT
from ..validators import cloud_config_problems, require_tool

SPEC = {"cloud": "aws", "region": "us-east-2", "zone": "us-east-2b",
        "accelerator": {"instance_type": "g6.12xlarge"}, "scheduler": {"kind": "slurm"}, "market": "spot",
        "monitoring": {"server": True}, "nodes": {"min": 1, "max": 4}, "placement_group": False, "fabric": "tcp"}
GROUPED = {"cloud": "aws", "region": "us-east-2", "zone": "us-east-2b",
           "accelerator": {"instance_type": "g6.12xlarge"}, "scheduler": {"kind": "slurm"},
           "placement_group": False, "fabric": "tcp",
           "node_groups": {"fixed": {"nodes": 1, "slurm_default": True}, "burst": {"nodes": {"min": 0, "max": 3}}}}
ASG = "aws:autoscaling/group:Group"
TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
POWER_POLICY = "gpufleet-slurm-role-power"


def user_data(raw: dict, resource: str) -> dict[str, str]:
    text = plan_cloud_configs(cached_plan(raw))[resource]
    return {f["path"]: f["content"] for f in read_yaml(text)["write_files"]}


def statements(raw: dict) -> dict[str, dict]:
    policy = json.loads(named(doc(raw))[POWER_POLICY]["inputs"]["policy"])
    return {statement["Sid"]: statement for statement in policy["Statement"]}


def test_an_elastic_group_is_its_launch_template_only_with_the_tags_the_node_reads():
    resources = named(doc(SPEC))
    assert [r for r in resources.values() if r["type"] in (ASG, "aws:autoscaling/lifecycleHook:LifecycleHook")] == []
    template = resources["gpufleet-lt"]["inputs"]
    assert template["metadataOptions"]["instanceMetadataTags"] == "enabled"  # the node reads gpufleet-slurm-node
    instance_tags = next(spec["tags"] for spec in template["tagSpecifications"] if spec["resourceType"] == "instance")
    assert {"gpufleet-slurm-controller", "gpufleet-slurm-key", CLUSTER_KEY} <= set(instance_tags)
    outputs = doc(SPEC)["outputs"]
    assert outputs["fleet_name"] is None
    assert f"Name=tag:{CLUSTER_KEY},Values={instance_tags[CLUSTER_KEY]}" in outputs["list_nodes"]


def test_the_controllers_slurm_conf_declares_cloud_nodes_and_power_saving():
    lines = user_data(SPEC, "gpufleet-slurm-controller")["/etc/slurm/slurm.conf"].splitlines()
    assert "NodeName=gpufleet-nodes-[1-4] State=CLOUD CPUs=48 RealMemory=186777 Gres=gpu:4 " \
        "Features=gpu,g6.12xlarge,tcp" in lines
    assert "SuspendExcNodes=gpufleet-nodes-[1-4]:1" in lines  # `min` is kept up by Slurm, started by the sync
    assert "ResumeProgram=/usr/local/sbin/gpufleet-slurm-resume" in lines and "SuspendTime=INFINITE" in lines
    assert "PartitionName=gpu Nodes=gpu Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO SuspendTime=600 " \
        "ResumeTimeout=900" in lines


def test_the_power_config_names_the_template_subnet_and_market():
    files = user_data(SPEC, "gpufleet-slurm-controller")
    config = load_power_config(files["/etc/gpufleet-slurm/power.json"])
    template = named(doc(SPEC))["gpufleet-lt"]["inputs"]
    cluster_id = next(spec["tags"] for spec in template["tagSpecifications"]
                      if spec["resourceType"] == "instance")[CLUSTER_KEY]
    (group,) = config.groups
    assert (config.cloud, config.aws.region, config.cluster_id) == ("aws", "us-east-2", cluster_id)
    assert (group.node_prefix, group.min_nodes, group.max_nodes, group.aws.market) == ("gpufleet-nodes-", 1, 4, "spot")
    assert group.aws.launch_template_id == "gpufleet-lt-id"  # the mock's id for the template declared above
    assert [(t.instance_type, t.subnet_id, t.availability_zone) for t in group.aws.targets] == [
        ("g6.12xlarge", "gpufleet-subnet-id", "us-east-2b")]
    assert config.metrics_file.startswith("/var/lib/prometheus/node-exporter/")
    assert "/usr/local/sbin/gpufleet-slurm-power" in files


def test_the_controller_may_launch_from_the_template_and_terminate_only_the_clusters_instances():
    found = statements(SPEC)
    template_arn = "arn:mock:aws:ec2/launchTemplate:LaunchTemplate:gpufleet-lt"
    cluster_id = load_power_config(user_data(SPEC, "gpufleet-slurm-controller")[
        "/etc/gpufleet-slurm/power.json"]).cluster_id
    for sid in ("PowerLaunchTagged", "PowerLaunchFromTemplate"):
        assert found[sid]["Action"] == ["ec2:RunInstances"]
        assert found[sid]["Condition"]["ArnEquals"] == {"ec2:LaunchTemplate": [template_arn]}
    assert found["PowerLaunchTagged"]["Condition"]["StringEquals"] == {f"aws:RequestTag/{CLUSTER_KEY}": cluster_id}
    assert found["PowerLaunchTagged"]["Resource"] == found["PowerLaunchFromTemplate"]["NotResource"]
    assert found["PowerFleetTemplates"]["Resource"] == [template_arn]
    assert found["PowerFleetTagged"]["Condition"]["StringEquals"] == {f"aws:RequestTag/{CLUSTER_KEY}": cluster_id}
    assert found["PowerTagOnCreate"]["Condition"] == {"StringEquals": {"ec2:CreateAction": ["RunInstances",
                                                                                             "CreateFleet"]}}
    assert found["PowerNameNode"]["Condition"] == {"StringEquals": {f"ec2:ResourceTag/{CLUSTER_KEY}": cluster_id},
                                                   "ForAllValues:StringEquals": {"aws:TagKeys": [NODE_NAME_KEY]}}
    assert found["PowerTerminate"] == {"Sid": "PowerTerminate", "Effect": "Allow",
                                       "Action": ["ec2:TerminateInstances"],
                                       "Resource": "arn:*:ec2:us-east-2:*:instance/*",
                                       "Condition": {"StringEquals": {f"ec2:ResourceTag/{CLUSTER_KEY}": cluster_id}}}
    assert found["PowerPassNodeRole"]["Resource"] == "arn:mock:aws:iam/role:Role:gpufleet-role"
    assert found["PowerDescribe"]["Action"] == ["ec2:Describe*"]
    assert named(doc(SPEC))[POWER_POLICY]["inputs"]["role"] == "gpufleet-slurm-role"  # the controller's role (its name)


def test_the_policy_pack_passes_and_refuses_an_unscoped_power_grant():
    document = doc(SPEC)
    assert [v.line() for v in check_plan(document)] == []
    for sid, key in (("PowerTerminate", "Condition"), ("PowerLaunchTagged", "Condition"),
                     ("PowerTagOnCreate", "Condition")):
        broken = copy.deepcopy(document)
        policy = next(r for r in broken["resources"] if r["name"] == POWER_POLICY)["inputs"]
        parsed = json.loads(policy["policy"])
        next(s for s in parsed["Statement"] if s["Sid"] == sid).pop(key)
        policy["policy"] = json.dumps(parsed)
        assert [v.line() for v in check_plan(broken) if "aws-instance-writers-scoped" in v.line()], sid
    passes_any = copy.deepcopy(document)
    policy = next(r for r in passes_any["resources"] if r["name"] == POWER_POLICY)["inputs"]
    policy["policy"] = json.dumps({"Statement": [{"Effect": "Allow", "Action": "iam:PassRole", "Resource": "*"}]})
    assert [v.line() for v in check_plan(passes_any) if "aws-instance-writers-scoped" in v.line()]


def test_every_resource_has_what_its_sdk_requires():
    assert problems_of([(r["type"], r["name"], r["inputs"]) for r in doc(SPEC)["resources"]]) == []


def test_every_cloud_config_passes_the_schema_and_boots_without_an_ordering_cycle(tmp_path):
    configs = plan_cloud_configs(cached_plan(SPEC))
    assert sorted(machine(text) for text in configs.values()) == ["GPU node", "Slurm controller",
                                                                  "monitoring server"]
    paths = []
    for index, text in enumerate(configs.values()):
        path = tmp_path / f"config-{index}.yaml"
        path.write_text(text)
        paths.append(path)
    assert cloud_config_problems(*paths) == {}
    assert_no_ordering_cycle("aws-elastic", configs, tmp_path)
    node = next(text for text in configs.values() if machine(text) == "GPU node")
    assert "gpufleet-cloud-node.conf" in node  # the node runs as the CLOUD node its instance tag names


def test_the_same_spec_gives_the_same_controller_user_data_and_policy():
    first, second = plan_spec(SPEC), plan_spec(SPEC)  # two runs of the program, no cache
    def declared(result):
        return {r.name: r.inputs for r in result.resources
                if r.name in ("gpufleet-slurm-controller", POWER_POLICY, "gpufleet-lt")}
    assert declared(first) == declared(second)
    assert declared(first)["gpufleet-slurm-controller"]["userDataReplaceOnChange"] is True


def test_the_monitoring_server_keeps_the_power_metrics_and_loads_the_elastic_alerts():
    files = user_data(SPEC, "gpufleet-monitoring-server")
    prometheus = read_yaml(files["/etc/prometheus/prometheus.yml"])
    assert "/etc/prometheus/gpufleet-elastic-alerts.yml" in prometheus["rule_files"]
    assert "GpufleetCapacityShort" in files["/etc/prometheus/gpufleet-elastic-alerts.yml"]
    slurm = next(job for job in prometheus["scrape_configs"] if job["job_name"] == "gpufleet-slurm")
    assert "gpufleet_capacity_short" in slurm["metric_relabel_configs"][0]["regex"]


def test_a_fixed_group_beside_an_elastic_one_keeps_its_auto_scaling_group_and_dynamic_nodes():
    document = doc(GROUPED)
    assert sorted(r["name"] for r in document["resources"] if r["type"] == ASG) == ["gpufleet-fixed-nodes"]
    assert sorted(r["name"] for r in document["resources"] if r["type"] == TEMPLATE) == [
        "gpufleet-burst-lt", "gpufleet-fixed-lt"]
    conf = user_data(GROUPED, "gpufleet-slurm-controller")["/etc/slurm/slurm.conf"]
    assert "PartitionName=fixed Nodes=fixed Default=YES" in conf and "PartitionName=burst Nodes=burst Default=NO" in conf
    assert "NodeName=gpufleet-burst-[1-3] State=CLOUD" in conf and "SuspendExcNodes" not in conf
    assert document["outputs"]["node_groups"]["burst"]["fleet_name"] is None
    assert [v.line() for v in check_plan(document)] == []
    policy = json.loads(named(document)[POWER_POLICY]["inputs"]["policy"])
    launch = next(s for s in policy["Statement"] if s["Sid"] == "PowerFleetTemplates")
    assert launch["Resource"] == ["arn:mock:aws:ec2/launchTemplate:LaunchTemplate:gpufleet-burst-lt"]


@pytest.mark.parametrize(("change", "path", "said"), [
    ({"fallback_zones": ["us-east-2a"], "network": {"existing_subnet_id": "subnet-0123456789abcdef0"}}, "fallback_zones",
     "cannot add to `network.existing_subnet_id`"),
    ({"fallback_zones": ["us-east-2a", "us-east-2c", "us-east-2d"]}, "fallback_zones", "at most 2 fallback zones"),
    ({"market": {"type": "mixed", "on_demand_base": 1}}, "market.type", "one market"),
])
def test_what_aws_elastic_groups_cannot_serve_is_refused_at_its_field(change, path, said):
    from gpufleet.aws.elastic import elastic_aws_problems
    from gpufleet.pipeline import plan_node_groups
    from gpufleet.spec import parse_cluster_spec

    plans = plan_node_groups(parse_cluster_spec({**SPEC, **change}))
    problems = elastic_aws_problems(plans.groups)
    assert [p.path for p in problems] == [path]
    assert "got" in str(problems[0]) and said in str(problems[0])


def test_a_refused_elastic_spec_declares_nothing():
    from tests.conftest import refusal

    message = refusal({**SPEC, "market": {"type": "mixed", "on_demand_base": 1}})
    assert "market.type" in message and "one market" in message


ZONED = {**SPEC, "fallback_zones": ["us-east-2a", "us-east-2c"],
         "accelerator": {"instance_type": "g6.12xlarge", "fallback_types": ["g6.24xlarge"]}}


def test_each_fallback_zone_gets_a_private_subnet_and_every_type_is_tried_in_a_zone_before_the_next():
    resources = named(doc(ZONED))
    subnets = {name: r["inputs"] for name, r in resources.items() if r["type"] == "aws:ec2/subnet:Subnet"}
    assert {name: (inputs["cidrBlock"], inputs["availabilityZone"]) for name, inputs in subnets.items()} == {
        "gpufleet-subnet": ("10.0.0.0/18", "us-east-2b"), "gpufleet-nat-subnet": ("10.0.255.240/28", "us-east-2b"),
        "gpufleet-subnet-us-east-2a": ("10.0.64.0/18", "us-east-2a"),
        "gpufleet-subnet-us-east-2c": ("10.0.128.0/18", "us-east-2c")}
    assert not any(inputs["mapPublicIpOnLaunch"] for inputs in subnets.values())
    routed = {r["inputs"]["subnetId"]: r["inputs"]["routeTableId"] for r in resources.values()
              if r["type"] == "aws:ec2/routeTableAssociation:RouteTableAssociation"}
    assert routed["gpufleet-subnet-us-east-2a-id"] == routed["gpufleet-subnet-us-east-2c-id"] == \
        routed["gpufleet-subnet-id"]  # through the cluster's NAT gateway, with its S3 endpoint
    (group,) = load_power_config(user_data(ZONED, "gpufleet-slurm-controller")[
        "/etc/gpufleet-slurm/power.json"]).groups
    assert [(t.availability_zone, t.subnet_id, t.instance_type) for t in group.aws.targets] == [
        ("us-east-2b", "gpufleet-subnet-id", "g6.12xlarge"), ("us-east-2b", "gpufleet-subnet-id", "g6.24xlarge"),
        ("us-east-2a", "gpufleet-subnet-us-east-2a-id", "g6.12xlarge"),
        ("us-east-2a", "gpufleet-subnet-us-east-2a-id", "g6.24xlarge"),
        ("us-east-2c", "gpufleet-subnet-us-east-2c-id", "g6.12xlarge"),
        ("us-east-2c", "gpufleet-subnet-us-east-2c-id", "g6.24xlarge")]
    assert [v.line() for v in check_plan(doc(ZONED))] == []
    assert problems_of([(r["type"], r["name"], r["inputs"]) for r in doc(ZONED)["resources"]]) == []


def test_the_plans_power_config_launches_and_names_a_node_against_moto(tmp_path):
    """The real AwsProvider, given the plan's power.json with moto's template and subnet put in, starts the
    instance from that template and names it after its Slurm node."""
    moto_server = pytest.importorskip("moto.server")
    boto3 = pytest.importorskip("boto3")
    from dataclasses import replace

    from gpufleet.cloud_init.power.aws import AwsProvider
    from gpufleet.cloud_init.power.engine import resume
    from gpufleet.cloud_init.power.metrics import PowerState

    from ..elastic.fake_slurm import FakeSlurm

    planned = load_power_config(user_data(SPEC, "gpufleet-slurm-controller")["/etc/gpufleet-slurm/power.json"])
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        ec2 = boto3.client("ec2", endpoint_url=f"http://{host}:{port}", region_name="us-east-2",
                           aws_access_key_id="testing", aws_secret_access_key="testing")
        vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
        subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.0.0/24", AvailabilityZone="us-east-2b")[
            "Subnet"]["SubnetId"]
        template = ec2.create_launch_template(LaunchTemplateName="gpufleet-lt", LaunchTemplateData={
            "ImageId": "ami-12c6146b", "InstanceType": "g6.12xlarge"})["LaunchTemplate"]["LaunchTemplateId"]
        (group,) = planned.groups
        aws_group = replace(group.aws, launch_template_id=template,
                            targets=tuple(replace(t, subnet_id=subnet) for t in group.aws.targets))
        config = replace(planned, groups=(replace(group, aws=aws_group),), state_dir=str(tmp_path / "state"),
                         metrics_file=str(tmp_path / "metrics.prom"))
        names = ["gpufleet-nodes-2"]
        resume(config, AwsProvider(config, client=ec2), FakeSlurm(names),
               PowerState(config.state_dir, config.metrics_file, [group.name]), names)
        [instance] = [item for reservation in ec2.describe_instances(Filters=[
            {"Name": f"tag:{NODE_NAME_KEY}", "Values": names}])["Reservations"] for item in reservation["Instances"]]
        tags = {tag["Key"]: tag["Value"] for tag in instance["Tags"]}
        assert (instance["InstanceType"], instance["SubnetId"]) == ("g6.12xlarge", subnet)
        assert tags[CLUSTER_KEY] == planned.cluster_id and tags[NODE_NAME_KEY] == "gpufleet-nodes-2"
    finally:
        server.stop()


def test_a_fixed_cluster_keeps_its_auto_scaling_group_and_a_controller_without_power():
    fixed = {**SPEC, "nodes": 2}
    resources = named(doc(fixed))
    assert [r["name"] for r in resources.values() if r["type"] == ASG] == ["gpufleet-nodes"]
    assert POWER_POLICY not in resources
    files = user_data(fixed, "gpufleet-slurm-controller")
    assert "/etc/gpufleet-slurm/power.json" not in files and "State=CLOUD" not in files["/etc/slurm/slurm.conf"]


@pytest.mark.slow
def test_slurmctld_runs_the_rendered_elastic_configuration(tmp_path):
    """The plan's slurm.conf, rendered for Debian's 22.05, run by slurmctld: the CLOUD nodes exist, powered down, in
    their partition (GCP's test runs the same script: tests/gcp/elastic_conf.sh)."""
    for tool in ("slurmctld", "scontrol", "sinfo", "munged"):
        require_tool(tool, SLURM_HINT)
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("needs root and unshare(1) (a private mount namespace for munged's socket)")
    from gpufleet.pipeline import plan_node_groups
    from gpufleet.scheduler.conf import cgroup_conf, gres_conf, slurm_conf
    from gpufleet.scheduler.elastic import elastic_settings
    from gpufleet.spec import parse_cluster_spec

    conf = user_data(SPEC, "gpufleet-slurm-controller")["/etc/slurm/slurm.conf"]
    plans = plan_node_groups(parse_cluster_spec(SPEC), name="gpufleet")
    settings = elastic_settings(plans, "gpufleet", "10.0.0.10")
    assert slurm_conf(settings) == conf  # what the plan ships is this rendering; Debian's Slurm needs 22.05's keys
    debian = dataclasses.replace(settings, slurm_release=(22, 5))
    (tmp_path / "slurm.conf").write_text(slurm_conf(debian).replace("/usr/local/sbin/gpufleet-slurm-", "/bin/true #"))
    (tmp_path / "cgroup.conf").write_text(cgroup_conf())
    (tmp_path / "gres.conf").write_text(gres_conf(debian))
    script = Path(__file__).parent.parent / "gcp" / "elastic_conf.sh"
    done = subprocess.run(["unshare", "-m", "bash", str(script), str(tmp_path)], capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, GPUS="4"))
    log = tmp_path / "log" / "slurmctld.log"
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}\n{log.read_text()[-3000:] if log.exists() else ''}"
    nodes = [line.split() for line in done.stdout.split("== sinfo\n")[1].splitlines() if line.strip()]
    assert nodes == [[f"gpufleet-nodes-{index}", "idle~", "gpu*"] for index in range(1, 5)]
    assert "SuspendExcNodes" in done.stdout


@pytest.mark.parametrize(("statement", "caught"), [
    ({"Effect": "Allow", "Action": "ec2:*", "Resource": "*"}, True),
    ({"Effect": "Allow", "NotAction": ["iam:*"], "Resource": "*"}, True),
    ({"Effect": "Allow", "Action": "ec2:Terminate*", "Resource": "*",
      "Condition": {"StringEquals": {"ec2:ResourceTag/gpufleet-cluster": "abc123"}}}, False),
    ({"Effect": "Allow", "Action": "ec2:CreateFleet", "Resource": "arn:aws:ec2:us-east-2:1:launch-template/*"}, True),
    ({"Effect": "Allow", "Action": "ec2:CreateFleet", "Resource": "arn:aws:ec2:us-east-2:1:launch-template/lt-1"},
     False),
    ({"Effect": "Allow", "Action": "iam:PassRole", "Resource": "arn:aws:iam::1:role/gpufleet-*"}, True),
    ({"Effect": "Deny", "Action": "ec2:*", "Resource": "*"}, False),
    ({"Effect": "Allow", "Action": ["s3:GetObject", "ec2:DescribeInstances"], "Resource": "*"}, False),
])
def test_the_rule_reads_wildcards_not_actions_and_conditions(statement, caught):
    from gpufleet.policy.aws_iam import instance_writers_scoped
    from gpufleet.policy.model import Resource

    policy = Resource("aws:iam/rolePolicy:RolePolicy", {"policy": json.dumps({"Statement": [statement]})})
    assert bool(list(instance_writers_scoped(policy, {}))) is caught


FALLBACK = {**SPEC, "accelerator": {"instance_type": "g6.12xlarge", "fallback_types": ["g6.24xlarge"]}}


def test_a_fallback_type_gets_its_own_launch_template_named_by_its_target_and_the_power_policy():
    """g6.24xlarge (four L4 like g6.12xlarge, twice the CPUs and memory) boots its own node config from its own
    template; the power config's second target names it, and the controller may launch from both templates only."""
    resources = named(doc(FALLBACK))
    templates = {name: r["inputs"] for name, r in resources.items() if r["type"] == TEMPLATE}
    assert sorted(templates) == ["gpufleet-g6.24xlarge-lt", "gpufleet-lt"]
    chosen, fallback = templates["gpufleet-lt"], templates["gpufleet-g6.24xlarge-lt"]
    assert (chosen["instanceType"], fallback["instanceType"]) == ("g6.12xlarge", "g6.24xlarge")
    assert chosen["userData"] != fallback["userData"]  # each type's node config
    assert chosen["tagSpecifications"] == fallback["tagSpecifications"]  # the same cluster, controller and group tags
    (group,) = load_power_config(user_data(FALLBACK, "gpufleet-slurm-controller")[
        "/etc/gpufleet-slurm/power.json"]).groups
    assert group.aws.launch_template_id == "gpufleet-lt-id"
    assert [(t.instance_type, t.launch_template_id) for t in group.aws.targets] == [
        ("g6.12xlarge", ""), ("g6.24xlarge", "gpufleet-g6.24xlarge-lt-id")]
    policy = json.loads(resources[POWER_POLICY]["inputs"]["policy"])
    launch = next(s for s in policy["Statement"] if s["Sid"] == "PowerLaunchTagged")
    assert launch["Condition"]["ArnEquals"]["ec2:LaunchTemplate"] == [
        "arn:mock:aws:ec2/launchTemplate:LaunchTemplate:gpufleet-g6.24xlarge-lt",
        "arn:mock:aws:ec2/launchTemplate:LaunchTemplate:gpufleet-lt"]
    assert [v.line() for v in check_plan(doc(FALLBACK))] == []
