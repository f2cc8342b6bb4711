"""`sync`/`verify` without `--host`: the stack's running nodes are asked of the cloud CLI (stand-ins answering
recorded JSON, cli_replies/), with exact names from `pulumi stack output` when the Pulumi CLI is there, else with the
tags and labels the components put on the nodes. Every failure is one message naming `--host`, exit 2."""

from __future__ import annotations

import json

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpufleet.migrate.discover import find_nodes
from gpufleet.naming import cluster_hash
from gpufleet.spec.errors import SpecError
from gpufleet.spec.parse import parse_cluster_spec
from tests.migrate.fake_clis import fake_clis

PROJECT = "demo-project"
CLUSTERS = {
    "aws": {"cloud": "aws", "region": "us-east-1", "zone": "use1-az4", "nodes": 2,
            "accelerator": {"gpu": "T4", "gpus_per_node": 1}},
    "gcp": {"cloud": "gcp", "region": "us-central1", "zone": "us-central1-a", "nodes": 2,
            "accelerator": {"gpu": "T4", "gpus_per_node": 1}},
    "azure": {"cloud": "azure", "region": "eastus", "nodes": 2, "accelerator": {"gpu": "T4", "gpus_per_node": 1}},
}
REPLY_KEYS = ("Reservations", "Instances", "InstanceId", "State", "Name", "instance", "instanceStatus", "name",
              "status", "zone", "id", "instanceView", "statuses", "code", "resourceGroup", "tags", "fleet_name",
              "resource_group", "scale_sets", "gpufleet-stack", "gpufleet-component")
AZURE_VM = ("/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/gpufleet-rg8d2f1c/providers/"
            "Microsoft.Compute/virtualMachineScaleSets/gpufleet-nodes4a7e2b/virtualMachines/0")


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A Pulumi project folder with one stack file per cloud; the tests run inside it."""
    (tmp_path / "Pulumi.yaml").write_text(f"name: {PROJECT}\nruntime: python\n")
    for cloud, cluster in CLUSTERS.items():
        (tmp_path / f"Pulumi.{cloud}-train.yaml").write_text(yaml.safe_dump({"config": {"gpufleet:cluster": cluster}}))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def discover(monkeypatch, fakes, cloud: str, replies: dict, clis=("aws", "gcloud", "az", "pulumi"), base_path=None,
             zone=None):
    for key, value in fakes.env(replies, clis, base_path).items():
        monkeypatch.setenv(key, value)
    return find_nodes(f"{cloud}-train", parse_cluster_spec(CLUSTERS[cloud]), zone)


def test_aws_nodes_by_the_fleet_pulumi_exported(project, monkeypatch):
    fakes = fake_clis(project / "fakes")
    found = discover(monkeypatch, fakes, "aws", {
        "pulumi stack output": {"file": "pulumi-stack-output-aws.json"},
        "aws ec2 describe-instances": {"file": "aws-describe-instances.json"}})
    assert found.hosts == ("i-0aaaaaaaaaaaaaaa1", "i-0ccccccccccccccc3")
    assert fakes.folders()[0] == str(project)  # pulumi names the stack within its project
    assert fakes.calls() == [
        ["pulumi", "stack", "output", "--json", "--non-interactive", "--stack", "aws-train"],
        ["aws", "ec2", "describe-instances", "--region", "us-east-1", "--filters",
         "Name=tag:aws:autoscaling:groupName,Values=gpufleet-fleet-3f2a9c1",
         "Name=instance-state-name,Values=running", "--output", "json"]]


def test_aws_nodes_by_gpufleet_tags_without_pulumi(project, monkeypatch):
    fakes = fake_clis(project / "fakes")
    found = discover(monkeypatch, fakes, "aws", {"aws ec2 describe-instances": {"file": "aws-describe-instances.json"}},
                     clis=("aws",))
    assert found.hosts == ("i-0aaaaaaaaaaaaaaa1", "i-0ccccccccccccccc3")
    assert fakes.calls() == [
        ["aws", "ec2", "describe-instances", "--region", "us-east-1", "--filters",
         f"Name=tag:gpufleet-cluster,Values={cluster_hash('gpufleet', PROJECT, 'aws-train')}",
         "Name=tag:gpufleet-component,Values=AwsGpuCluster", "Name=tag:gpufleet-role,Values=node",
         "Name=tag:gpufleet-stack,Values=aws-train", "Name=instance-state-name,Values=running", "--output", "json"]]


def test_pulumi_that_cannot_read_the_stack_falls_back_to_tags(project, monkeypatch, capsys):
    fakes = fake_clis(project / "fakes")
    found = discover(monkeypatch, fakes, "aws", {
        "pulumi stack output": {"rc": 255, "stderr": "error: no stack named 'aws-train' found\n"},
        "aws ec2 describe-instances": {"file": "aws-describe-instances-one.json"}})
    assert found.hosts == ("i-0fffffffffffffff6",)
    assert "no stack named 'aws-train' found" in capsys.readouterr().err
    assert "Name=tag:gpufleet-role,Values=node" in fakes.calls()[1]


def test_gcp_nodes_by_the_managed_group_pulumi_exported(project, monkeypatch):
    fakes = fake_clis(project / "fakes")
    found = discover(monkeypatch, fakes, "gcp", {
        "pulumi stack output": {"file": "pulumi-stack-output-gcp.json"},
        "gcloud compute instance-groups managed list-instances": {"file": "gcloud-managed-list-instances.json"}})
    assert found.hosts == ("gpufleet-gcp-train-1a2b3c-x7k2",)  # the STAGING one is not up yet
    assert found.zone == "us-central1-a"
    assert fakes.calls()[1] == ["gcloud", "compute", "instance-groups", "managed", "list-instances",
                                "gpufleet-group-0c4d1e7", "--zone", "us-central1-a", "--format=json"]


def test_gcp_nodes_by_gpufleet_labels_without_pulumi(project, monkeypatch):
    from gpufleet.gcp.nodes import base_instance_name

    fakes = fake_clis(project / "fakes")
    found = discover(monkeypatch, fakes, "gcp", {"gcloud compute instances list": {"file": "gcloud-instances-list.json"}},
                     clis=("gcloud",))
    assert found.hosts == ("gpufleet-gcp-train-1a2b3c-4m9q", "gpufleet-gcp-train-1a2b3c-x7k2")
    prefix = base_instance_name("gcp-train", "gpufleet", cluster_hash("gpufleet", PROJECT, "gcp-train"))
    assert fakes.calls() == [[
        "gcloud", "compute", "instances", "list", "--zones=us-central1-a",
        "--filter=labels.gpufleet-component=gcpgpucluster AND labels.gpufleet-role=node AND "
        f"labels.gpufleet-stack=gcp-train AND name ~ ^{prefix}- AND status=RUNNING", "--format=json"]]


def test_azure_nodes_from_the_scale_sets_pulumi_exported(project, monkeypatch):
    fakes = fake_clis(project / "fakes")
    found = discover(monkeypatch, fakes, "azure", {
        "pulumi stack output": {"file": "pulumi-stack-output-azure.json"},
        "az vmss list-instances": {"file": "az-vmss-list-instances.json"}})
    assert found.hosts == (AZURE_VM,)  # instance 1 is deallocated
    assert fakes.calls()[1] == ["az", "vmss", "list-instances", "--resource-group", "gpufleet-rg8d2f1c", "--name",
                                "gpufleet-nodes4a7e2b", "--expand", "instanceView", "--output", "json"]


def test_azure_nodes_by_gpufleet_tags_without_pulumi(project, monkeypatch):
    fakes = fake_clis(project / "fakes")
    found = discover(monkeypatch, fakes, "azure", {"az vmss list-instances": {"file": "az-vmss-list-instances.json"},
                                                   "az vmss list": {"file": "az-vmss-list.json"}}, clis=("az",))
    assert found.hosts == (AZURE_VM,)
    assert fakes.calls() == [  # `web` carries the stack tag but is not gpufleet's
        ["az", "vmss", "list", "--output", "json"],
        ["az", "vmss", "list-instances", "--resource-group", "gpufleet-rg8d2f1c", "--name", "gpufleet-nodes4a7e2b",
         "--expand", "instanceView", "--output", "json"]]


@pytest.mark.parametrize(("cloud", "clis", "replies", "expected"), [
    ("aws", ("aws",), {"aws ec2 describe-instances": {"file": "aws-describe-instances-none.json"}},
     "no running node of stack `aws-train` found by `aws ec2 describe-instances"),
    ("aws", (), {}, "`aws` is not installed here"),
    ("gcp", (), {}, "`gcloud` is not installed here"),
    ("azure", (), {}, "`az` is not installed here"),
    ("aws", ("aws",), {"aws ec2": {"rc": 253, "stderr": "\nUnable to locate credentials. You can configure "
                                   "credentials by running \"aws configure\".\n"}},
     "failed (exit 253: Unable to locate credentials."),
    ("gcp", ("gcloud",), {"gcloud compute": {"rc": 1, "stderr": "ERROR: (gcloud.compute.instances.list) You do not "
                                             "currently have an active account selected.\n"}},
     "You do not currently have an active account selected."),
    ("azure", ("az",), {"az vmss list": {"file": "gcloud-instances-list.json"}}, "no running node of stack"),
    ("azure", ("az",), {"az vmss list": {"rc": 0}}, "no running node of stack `azure-train`"),
])
def test_every_failure_is_one_message_naming_host(project, monkeypatch, cloud, clis, replies, expected):
    fakes = fake_clis(project / "fakes")
    empty = project / "empty-bin"  # none of the real CLIs, wherever this machine has them
    empty.mkdir()
    with pytest.raises(SpecError) as raised:
        discover(monkeypatch, fakes, cloud, replies, clis=clis, base_path=str(empty))
    message = str(raised.value)
    assert expected in message and "`--host`" in message
    assert len(raised.value.problems) == 1


def test_the_cli_exits_2_with_the_message(project, monkeypatch, capsys):
    from gpufleet.migrate.manifest import write_manifest
    from gpufleet.plan.cli import main
    from tests.migrate.manifests import manifest as a_manifest

    manifest = project / "manifest.json"
    write_manifest(a_manifest("t4"), manifest)
    fakes = fake_clis(project / "fakes")
    # PATH holds ssh and rsync (never run) and no `aws`, whatever this machine has installed.
    own_tools = project / "ssh-and-rsync"
    own_tools.mkdir()
    for tool in ("ssh", "rsync"):
        (own_tools / tool).write_text("#!/bin/sh\nexit 97\n")
        (own_tools / tool).chmod(0o755)
    for key, value in fakes.env({}, (), str(own_tools)).items():
        monkeypatch.setenv(key, value)
    assert main(["migrate", "verify", "aws-train", "--manifest", str(manifest)]) == 2
    err = capsys.readouterr().err
    assert "`aws` is not installed here" in err and "`--host`" in err and "Traceback" not in err, err


def test_gcp_zone_given_wins(project, monkeypatch):
    fakes = fake_clis(project / "fakes")
    found = discover(monkeypatch, fakes, "gcp", {"gcloud compute instances list": {"file": "gcloud-instances-list.json"}},
                     clis=("gcloud",), zone="us-central1-b")
    assert found.zone == "us-central1-b" and "--zones=us-central1-b" in fakes.calls()[0]


def test_a_stack_file_outside_any_project_asks_no_pulumi(tmp_path, monkeypatch):
    """Without a project, a stack name could be another project's: pulumi is not asked, and the AWS filter has no
    cluster hash (it needs the project's name)."""
    folder = tmp_path / "loose"
    folder.mkdir()
    stack = folder / "Pulumi.aws-train.yaml"
    stack.write_text(yaml.safe_dump({"config": {"gpufleet:cluster": CLUSTERS["aws"]}}))
    monkeypatch.chdir(folder)
    fakes = fake_clis(tmp_path / "fakes")
    for key, value in fakes.env({"aws ec2 describe-instances": {"file": "aws-describe-instances-one.json"}}).items():
        monkeypatch.setenv(key, value)
    assert find_nodes(str(stack), parse_cluster_spec(CLUSTERS["aws"])).hosts == ("i-0fffffffffffffff6",)
    assert [call[0] for call in fakes.calls()] == ["aws"]
    assert not any("gpufleet-cluster" in arg for arg in fakes.calls()[0])


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(REPLY_KEYS), inner,
                                                                                max_size=5), max_leaves=12)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cloud=st.sampled_from(sorted(CLUSTERS)), outputs=JSON, reply=JSON)
def test_any_reply_gives_nodes_or_one_message(project, monkeypatch, cloud, outputs, reply):
    """Whatever JSON the CLIs answer (another version's shape, a proxy's page), the result is node names or one
    message naming `--host`, never a traceback."""
    import subprocess

    import gpufleet.migrate.discover as discover_module

    def answer(command, cwd, check):
        value = outputs if command[0] == "pulumi" else reply
        return subprocess.CompletedProcess(command, 0, json.dumps(value), "")

    monkeypatch.setattr(discover_module, "_run", answer)
    monkeypatch.setattr(discover_module.shutil, "which", lambda name: f"/usr/bin/{name}")
    try:
        found = find_nodes(f"{cloud}-train", parse_cluster_spec(CLUSTERS[cloud]))
    except SpecError as err:
        assert len(err.problems) == 1 and "`--host`" in str(err)
    else:
        assert found.hosts and all(isinstance(host, str) and host for host in found.hosts)
