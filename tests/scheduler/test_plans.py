"""Plans of a Slurm cluster on each cloud: the controller component, what it declares and opens, the nodes' share
of it, the policy pack, and `gpufleet diff` of turning the scheduler on."""

from __future__ import annotations

import json

import pytest

from gpufleet.pipeline import plan_cluster
from gpufleet.plan.diff import diff_plans
from gpufleet.plan.stackfile import apply_overrides, read_stack_config
from gpufleet.plan.userdata import NamedInputs, node_user_data
from gpufleet.policy.engine import check_plan, mandatory
from gpufleet.scheduler.conf import SLURMCTLD_PORT, SLURMD_PORT, SRUN_PORT_RANGE, controller_files, slurm_settings
from gpufleet.spec import parse_cluster_spec
from tests.yaml_reader import read_yaml

from ..plan.plan_docs import plan_doc
from ..validators import cloud_config_problems

SLURM = "scheduler.kind=slurm"
STACKS = {"aws": "aws-train", "gcp": "gcp-train", "azure": "azure-train"}
MOCK_ADDRESS = "10.0.0.10"  # gpufleet.plan.mocks: the controller's address in a plan
SLURM_PORT_SET = {(SLURMCTLD_PORT, SLURMCTLD_PORT), (SLURMD_PORT, SLURMD_PORT), SRUN_PORT_RANGE}


def slurm_doc(cloud: str) -> dict:
    return plan_doc(STACKS[cloud], SLURM)


def resources(doc: dict, type_suffix: str) -> list[dict]:
    return [r for r in doc["resources"] if r["type"].endswith(type_suffix)]


def by_name(doc: dict, name: str) -> dict:
    return next(r for r in doc["resources"] if r["name"] == name)


def user_data(doc: dict) -> dict[str, str]:
    return node_user_data([NamedInputs(r["name"], r["inputs"]) for r in doc["resources"]])


def selection(cloud: str):
    config = apply_overrides(read_stack_config(STACKS[cloud]), [SLURM])
    return plan_cluster(parse_cluster_spec(config["gpufleet:cluster"]))


@pytest.mark.parametrize("cloud", STACKS)
def test_one_controller_component_parented_to_the_cluster(cloud):
    doc = slurm_doc(cloud)
    [controller] = resources(doc, "gpufleet:index:SlurmController")
    assert controller["name"] == "gpufleet-slurm"
    assert controller["parent"].split("::")[-2].endswith("GpuCluster") and "$gpufleet:index:" in controller["parent"]
    children = [r for r in doc["resources"] if r.get("parent", "").endswith("::gpufleet-slurm")]
    assert len(children) >= 6


@pytest.mark.parametrize("cloud", STACKS)
def test_the_controller_serves_the_rendered_config_at_its_stable_address(cloud, tmp_path):
    doc = slurm_doc(cloud)
    text = user_data(doc)["gpufleet-slurm-controller"]
    (tmp_path / "controller.yaml").write_text(text)
    assert cloud_config_problems(tmp_path / "controller.yaml") == {}
    document = read_yaml(text)
    served = {f["path"]: f["content"] for f in document["write_files"] if f["path"].startswith("/etc/slurm/")}
    plan = selection(cloud)
    expected = controller_files(slurm_settings(plan, plan.cluster_name, MOCK_ADDRESS))
    assert served == {f"/etc/slurm/{name}": content for name, content in expected.items()}
    assert f"SlurmctldHost=gpufleet-slurmctld({MOCK_ADDRESS})" in served["/etc/slurm/slurm.conf"].splitlines()
    assert document["hostname"] == "gpufleet-slurmctld"
    assert doc["outputs"]["slurm_controller_address"] == MOCK_ADDRESS
    assert doc["outputs"]["slurm_shell"]


@pytest.mark.parametrize("cloud", STACKS)
def test_the_munge_key_is_a_masked_secret_and_never_in_user_data(cloud):
    doc = slurm_doc(cloud)
    key_inputs = {"aws": ("aws:ssm/parameter:Parameter", "value"),
                  "gcp": ("gcp:secretmanager/secretVersion:SecretVersion", "secretData"),
                  "azure": ("azure-native:keyvault:Secret", "properties")}[cloud]
    [key] = [r for r in resources(doc, key_inputs[0]) if "slurm" in r["name"]]
    assert key["inputs"][key_inputs[1]] == "[secret]"
    if cloud == "aws":
        assert key["inputs"]["type"] == "SecureString"
    assert all("munge.key" not in text or "secret" in text for text in user_data(doc).values())


def test_aws_controller_is_private_with_imdsv2_and_encrypted_disks():
    doc = slurm_doc("aws")
    instance = by_name(doc, "gpufleet-slurm-controller")["inputs"]
    assert "associatePublicIpAddress" not in instance
    assert instance["metadataOptions"]["httpTokens"] == "required"
    assert instance["rootBlockDevice"]["encrypted"] is True
    assert by_name(doc, "gpufleet-slurm-state")["inputs"]["encrypted"] is True
    assert by_name(doc, "gpufleet-slurm-state")["inputs"]["size"] == 20
    assert "subnetId" in by_name(doc, "gpufleet-slurm-nic")["inputs"]


def test_aws_opens_only_slurm_ports_and_only_between_controller_and_nodes():
    doc = slurm_doc("aws")
    # The monitoring server's scrape of the controller (the train stack has one) is tests/scheduler/test_metrics_plans.
    rules = [r["inputs"] for r in resources(doc, "SecurityGroupIngressRule")
             if "slurm" in r["name"] and "monitoring" not in r["name"]]
    assert {(r["fromPort"], r["toPort"]) for r in rules} == SLURM_PORT_SET
    assert all("referencedSecurityGroupId" in r and "cidrIpv4" not in r for r in rules)
    assert len(rules) == 4


def test_aws_nodes_read_their_key_only_and_learn_the_controller_from_instance_tags():
    doc = slurm_doc("aws")
    policy = json.loads(by_name(doc, "gpufleet-role-slurm-key")["inputs"]["policy"])
    [statement] = policy["Statement"]
    assert statement["Action"] == ["ssm:GetParameter"] and len(statement["Resource"]) == 1
    template = resources(doc, "LaunchTemplate")[0]["inputs"]
    assert template["metadataOptions"]["instanceMetadataTags"] == "enabled"
    instance_tags = next(t["tags"] for t in template["tagSpecifications"] if t["resourceType"] == "instance")
    assert instance_tags["gpufleet-slurm-controller"] == MOCK_ADDRESS
    assert instance_tags["gpufleet-slurm-key"] == "/gpufleet/aws-train/gpufleet/slurm/munge-key"


def test_gcp_controller_rule_admits_slurm_from_the_node_account_only():
    doc = slurm_doc("gcp")
    rule = by_name(doc, "gpufleet-slurm-fw")["inputs"]
    assert rule["allows"] == [{"ports": ["6817", "60001-63000"], "protocol": "tcp"}]
    assert "sourceRanges" not in rule and rule["sourceServiceAccounts"] and rule["targetServiceAccounts"]
    instance = by_name(doc, "gpufleet-slurm-controller")["inputs"]
    assert all("accessConfigs" not in nic for nic in instance["networkInterfaces"])
    assert instance["networkInterfaces"][0]["networkIp"] == MOCK_ADDRESS
    template = resources(doc, "compute/instanceTemplate:InstanceTemplate")[0]["inputs"]
    assert template["metadata"]["gpufleet-slurm-controller"] == MOCK_ADDRESS
    assert template["metadata"]["gpufleet-slurm-key"].endswith("/secrets/gpufleet-gcp-train-slurm-munge-key")
    members = [r["inputs"] for r in resources(doc, "SecretIamMember") if "slurm" in r.get("parent", "")]
    assert {m["role"] for m in members} == {"roles/secretmanager.secretAccessor"} and len(members) == 2


def test_azure_nsg_opens_slurm_ports_between_the_two_security_groups_only():
    doc = slurm_doc("azure")
    nsg = resources(doc, "network:NetworkSecurityGroup")[0]["inputs"]
    slurm_rules = {r["name"]: r for r in nsg["securityRules"] if "slurm" in r["name"]}
    assert slurm_rules.pop("allow-slurm-metrics")["destinationPortRange"] == "9100"  # test_metrics_plans.py
    assert set(slurm_rules) == {"allow-slurm-nodes", "allow-slurm-controller", "allow-ssh-slurm"}
    assert slurm_rules["allow-slurm-nodes"]["destinationPortRanges"] == ["6818", "60001-63000"]
    assert slurm_rules["allow-slurm-controller"]["destinationPortRanges"] == ["6817", "60001-63000"]
    assert slurm_rules["allow-ssh-slurm"]["sourceAddressPrefixes"] == ["203.0.113.0/24"]  # access.ssh_cidrs (Bastion)
    assert slurm_rules["allow-ssh-slurm"]["destinationPortRange"] == "22"
    assert all("sourceAddressPrefix" not in r and "sourceAddressPrefixes" not in r
               for name, r in slurm_rules.items() if name != "allow-ssh-slurm")
    nic = by_name(doc, "gpufleet-slurm-nic")["inputs"]
    assert all("publicIPAddress" not in c for c in nic["ipConfigurations"])
    scale_set = resources(doc, "compute:VirtualMachineScaleSet")[0]["inputs"]
    assert scale_set["tags"]["gpufleet-slurm-controller"] == MOCK_ADDRESS
    assignments = [r for r in resources(doc, "RoleAssignment") if "slurm-key" in r["name"]]
    assert len(assignments) == 2


def test_azure_controller_boots_the_ubuntu_version_pinned_at_up_as_the_monitoring_server_does():
    controller = by_name(slurm_doc("azure"), "gpufleet-slurm-controller")["inputs"]
    assert controller["storageProfile"]["imageReference"] == {
        "publisher": "Canonical", "offer": "ubuntu-24_04-lts", "sku": "server", "version": "resolved-at-pulumi-up"}


@pytest.mark.parametrize("cloud", STACKS)
def test_slurm_plans_pass_the_policy_pack(cloud):
    assert mandatory(check_plan(slurm_doc(cloud))) == []


@pytest.mark.parametrize("cloud", STACKS)
def test_turning_the_scheduler_on_adds_the_controller_and_replaces_no_node_group(cloud):
    base, head = plan_doc(STACKS[cloud]), slurm_doc(cloud)
    diff = diff_plans(base, head)
    added = {c["name"] for c in diff.added}
    assert {"gpufleet-slurm", "gpufleet-slurm-controller", "gpufleet-slurm-state"} <= added
    assert diff.removed == []
    replaced = {c.type for c in diff.replaced}
    assert not replaced & {"aws:autoscaling/group:Group", "azure-native:compute:VirtualMachineScaleSet",
                           "gcp:compute/instanceGroupManager:InstanceGroupManager"}
    assert diff.user_data, "the nodes' user data changes (slurmd, TaskProlog, drain), and the diff says so"


@pytest.mark.parametrize("cloud", STACKS)
def test_a_node_count_change_of_a_slurm_cluster_touches_only_the_fleet(cloud):
    """The controller's files never name the node count (`MaxNodeCount` is the spec's bound), so its user data, and
    with it the controller VM, stay as they are."""
    diff = diff_plans(slurm_doc(cloud), plan_doc(STACKS[cloud], SLURM, "nodes=5"))
    assert diff.replaced == [] and diff.added == [] and diff.removed == [] and diff.user_data == {}
    assert {c.type for c in diff.changed} <= {"aws:autoscaling/group:Group",
                                             "gcp:compute/instanceGroupManager:InstanceGroupManager",
                                             "azure-native:compute:VirtualMachineScaleSet"}, diff.changed
