"""GCP elastic groups as declared (components/gcp/elastic.py): the group's template and no instance group, the
controller's slurm.conf with CLOUD nodes and power saving, its power config naming the template in each zone, the
node's prefix metadata and cluster label, the controller's conditional role, the elastic alerts on the monitoring
server, the cost line; checked like every other plan (provider required inputs, the policy pack, cloud-init's
schema and the boot order) and, where Debian's Slurm is installed, the rendered slurm.conf run by slurmctld."""

from __future__ import annotations

import copy
import dataclasses
import os
import shutil
import subprocess
from pathlib import Path

import pulumi
import pytest

from gpufleet.cloud_init.power.config import CLUSTER_KEY, GCP_PREFIX_KEY, load_power_config
from gpufleet.policy.engine import check_plan
from tests.conftest import cached_plan
from tests.yaml_reader import read_yaml

from ..cloud_init.stack_configs import plan_cloud_configs
from ..cloud_init.test_boot_order import assert_no_ordering_cycle, machine
from ..elastic.documents import doc, named
from ..plan.test_required_inputs import problems_of
from ..scheduler.test_slurm_daemons import SLURM_HINT
from ..validators import cloud_config_problems, require_tool

HERE = Path(__file__).parent
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGdwdWZsZWV0LWV4YW1wbGUtcmVwbGFjZS1tZS0wMDAw you@example.com"
SPEC = {"cloud": "gcp", "region": "us-central1", "zone": "us-central1-b",
        "accelerator": {"instance_type": "g2-standard-8"}, "scheduler": {"kind": "slurm"},
        "monitoring": {"server": True}, "nodes": {"min": 1, "max": 4}, "placement_group": False,
        "fallback_zones": ["us-central1-a"]}
GROUPED = {"cloud": "gcp", "region": "us-central1", "zone": "us-central1-b",
           "accelerator": {"instance_type": "g2-standard-8"}, "scheduler": {"kind": "slurm"},
           "monitoring": {"server": True}, "placement_group": False,
           "node_groups": {"fixed": {"nodes": 1, "slurm_default": True}, "burst": {"nodes": {"min": 0, "max": 3}}}}
FLEET = "gcp:compute/instanceGroupManager:InstanceGroupManager"
TEMPLATE = "gcp:compute/instanceTemplate:InstanceTemplate"


def controller_files(raw: dict) -> dict[str, str]:
    user_data = named(doc(raw))["gpufleet-slurm-controller"]["inputs"]["metadata"]["user-data"]
    return {f["path"]: f["content"] for f in read_yaml(user_data)["write_files"]}


def test_an_elastic_group_is_its_template_only_labelled_and_named_for_the_power_programs():
    resources = named(doc(SPEC))
    assert [r for r in resources.values() if r["type"] == FLEET] == []
    template = resources["gpufleet-template"]["inputs"]
    prefix = template["metadata"][GCP_PREFIX_KEY]
    assert prefix.startswith("gpufleet-test-") and prefix.endswith("-nodes-")
    assert template["labels"][CLUSTER_KEY] == prefix.split("-")[-3]  # the cluster's hash ends the base name
    assert "gpufleet-slurm-controller" in template["metadata"]


def test_the_controllers_slurm_conf_declares_cloud_nodes_and_power_saving():
    conf = controller_files(SPEC)["/etc/slurm/slurm.conf"]
    lines = conf.splitlines()
    prefix = named(doc(SPEC))["gpufleet-template"]["inputs"]["metadata"][GCP_PREFIX_KEY]
    assert f"NodeName={prefix}[1-4] State=CLOUD CPUs=8 RealMemory=31129 Gres=gpu:1 Features=gpu,g2-standard-8,tcp" \
        in lines
    assert f"SuspendExcNodes={prefix}[1-4]:1" in lines  # `min` is kept up by Slurm, started by the sync
    assert "ResumeProgram=/usr/local/sbin/gpufleet-slurm-resume" in lines and "SuspendTime=INFINITE" in lines
    assert "PartitionName=gpu Nodes=gpu Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO SuspendTime=600 " \
        "ResumeTimeout=900" in lines
    assert "MaxNodeCount=4116" in lines and "Nodes=ALL" not in conf


def test_the_power_config_names_the_template_in_each_zone_in_order():
    files = controller_files(SPEC)
    config = load_power_config(files["/etc/gpufleet-slurm/power.json"])
    template = named(doc(SPEC))["gpufleet-template"]
    prefix = template["inputs"]["metadata"][GCP_PREFIX_KEY]
    (group,) = config.groups
    assert (config.cloud, config.gcp.project, group.node_prefix, group.min_nodes, group.max_nodes) == (
        "gcp", "example-project", prefix, 1, 4)
    assert [(t.zone, t.machine_type) for t in group.gcp.targets] == [("us-central1-b", "g2-standard-8"),
                                                                     ("us-central1-a", "g2-standard-8")]
    assert {t.instance_template for t in group.gcp.targets} == {"gpufleet-template-self-link"}  # the mock's
    assert config.cluster_id == template["inputs"]["labels"][CLUSTER_KEY]
    assert config.metrics_file.startswith("/var/lib/prometheus/node-exporter/")
    assert "/usr/local/sbin/gpufleet-slurm-power" in files


def test_the_controller_may_create_and_delete_only_the_groups_instances():
    resources = named(doc(SPEC))
    role = resources["gpufleet-slurm-power-role"]["inputs"]
    assert "compute.instances.create" in role["permissions"] and "compute.instances.list" not in role["permissions"]
    grant = resources["gpufleet-slurm-power-grant"]["inputs"]
    assert grant["member"] == "serviceAccount:gpufleet-test-slurm@example-project.iam.gserviceaccount.com"
    assert grant["role"].endswith(role["roleId"])
    prefix = resources["gpufleet-template"]["inputs"]["metadata"][GCP_PREFIX_KEY]
    clauses = grant["condition"]["expression"].split(" || ")
    base = "projects/example-project"
    assert clauses == [
        f'resource.name.startsWith("{base}/zones/us-central1-b/instances/{prefix}")',
        f'resource.name.startsWith("{base}/zones/us-central1-b/disks/{prefix}")',
        f'resource.name.startsWith("{base}/zones/us-central1-a/instances/{prefix}")',
        f'resource.name.startsWith("{base}/zones/us-central1-a/disks/{prefix}")',
        f'resource.name == "{base}/global/instanceTemplates/gpufleet-template"',
        f'resource.name == "{base}/regions/us-central1/subnetworks/gpufleet-subnet"']
    operations = resources["gpufleet-slurm-power-ops-role"]["inputs"]["permissions"]
    assert operations == ["compute.zoneOperations.get", "compute.zoneOperations.list"]
    act_as = resources["gpufleet-slurm-power-act-as"]["inputs"]
    assert (act_as["serviceAccountId"], act_as["role"]) == ("gpufleet-sa", "roles/iam.serviceAccountUser")


def test_the_policy_pack_passes_and_refuses_the_grant_without_its_condition():
    document = doc(SPEC)
    assert [v.line() for v in check_plan(document)] == []
    broken = copy.deepcopy(document)
    next(r for r in broken["resources"] if r["name"] == "gpufleet-slurm-power-grant")["inputs"].pop("condition")
    assert [v.line() for v in check_plan(broken) if "gcp-instance-writers-scoped" in v.line()]
    admin = copy.deepcopy(document)
    next(r for r in admin["resources"] if r["name"] == "gpufleet-slurm-power-ops-grant")["inputs"]["role"] = \
        "roles/compute.instanceAdmin.v1"
    assert [v.line() for v in check_plan(admin) if "gcp-instance-writers-scoped" in v.line()]


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
    assert_no_ordering_cycle("gcp-elastic", configs, tmp_path)
    node = next(text for text in configs.values() if machine(text) == "GPU node")
    assert "gpufleet-cloud-node.conf" in node  # the node runs as the CLOUD node its instance name names


def test_the_monitoring_server_keeps_the_power_metrics_and_loads_the_elastic_alerts():
    user_data = named(doc(SPEC))["gpufleet-monitoring-server"]["inputs"]["metadata"]["user-data"]
    files = {f["path"]: f["content"] for f in read_yaml(user_data)["write_files"]}
    prometheus = read_yaml(files["/etc/prometheus/prometheus.yml"])
    assert "/etc/prometheus/gpufleet-elastic-alerts.yml" in prometheus["rule_files"]
    assert "GpufleetCapacityShort" in files["/etc/prometheus/gpufleet-elastic-alerts.yml"]
    slurm = next(job for job in prometheus["scrape_configs"] if job["job_name"] == "gpufleet-slurm")
    assert "gpufleet_capacity_short" in slurm["metric_relabel_configs"][0]["regex"]


def test_a_fixed_group_beside_an_elastic_one_keeps_its_instance_group_and_dynamic_nodes():
    document = doc(GROUPED)
    assert sorted(r["name"] for r in document["resources"] if r["type"] == FLEET) == ["gpufleet-fixed-nodes"]
    assert sorted(r["name"] for r in document["resources"] if r["type"] == TEMPLATE) == [
        "gpufleet-burst-template", "gpufleet-fixed-template"]
    fixed = named(document)["gpufleet-fixed-template"]["inputs"]
    assert GCP_PREFIX_KEY not in fixed["metadata"] and CLUSTER_KEY not in fixed["labels"]
    conf = controller_files(GROUPED)["/etc/slurm/slurm.conf"]
    assert "PartitionName=fixed Nodes=fixed Default=YES" in conf and "PartitionName=burst Nodes=burst Default=NO" in conf
    assert "SuspendExcNodes" not in conf  # min 0: every burst node may be released
    assert document["outputs"]["node_groups"]["burst"]["fleet_name"] is None
    assert [v.line() for v in check_plan(document)] == []


def test_the_cost_shows_the_elastic_groups_idle_and_full_price():
    outputs = doc(SPEC)["outputs"]
    group, total = outputs["cost"]
    assert group["label"] == "nodes: 1-4 x g2-standard-8" and group["note"] == (
        f"idle: ${group['idle_usd_per_hour']:,.2f}/h, full: ${group['full_usd_per_hour']:,.2f}/h")
    assert group["idle_usd_per_hour"] * 4 == pytest.approx(group["full_usd_per_hour"], abs=0.02)
    assert outputs["estimated_usd_per_hour"] == total["usd_per_hour"] == group["full_usd_per_hour"]


@pytest.mark.parametrize("cloud", ["aws", "azure"])
def test_every_cloud_declares_a_range(cloud):
    from gpufleet.pipeline import check_cluster_input

    raw = {"cloud": cloud, "region": "us-east-2" if cloud == "aws" else "eastus", "nodes": {"min": 0, "max": 2},
           **({"zone": "use2-az2"} if cloud == "aws" else {"access": {"ssh_public_key": KEY}}),
           "accelerator": {"instance_type": "g6.12xlarge" if cloud == "aws" else "Standard_NC24ads_A100_v4"},
           "scheduler": {"kind": "slurm"}, "placement_group": False, "fabric": "tcp"}
    assert check_cluster_input(raw).nodes_range.max == 2


FALLBACK = {**SPEC, "accelerator": {"instance_type": "g2-standard-8", "fallback_types": ["g2-standard-12"]}}


def test_a_fallback_type_gets_its_own_template_and_is_tried_before_the_next_zone():
    """g2-standard-12 (one L4, more CPUs and memory) has its own node config in its own template; a resume tries
    each type in the group's zone, then each in the fallback zone; the controller's role names both templates, and
    slurm.conf declares the smaller shape."""
    resources = named(doc(FALLBACK))
    templates = {name: r["inputs"] for name, r in resources.items() if r["type"] == TEMPLATE}
    assert sorted(templates) == ["gpufleet-g2-standard-12-template", "gpufleet-template"]
    fallback, chosen = templates["gpufleet-g2-standard-12-template"], templates["gpufleet-template"]
    assert (fallback["machineType"], chosen["machineType"]) == ("g2-standard-12", "g2-standard-8")
    assert fallback["metadata"][GCP_PREFIX_KEY] == chosen["metadata"][GCP_PREFIX_KEY]
    assert fallback["labels"][CLUSTER_KEY] == chosen["labels"][CLUSTER_KEY]
    assert fallback["metadata"]["user-data"] != chosen["metadata"]["user-data"]  # each type's node config
    files = controller_files(FALLBACK)
    (group,) = load_power_config(files["/etc/gpufleet-slurm/power.json"]).groups
    assert [(t.zone, t.machine_type, t.instance_template) for t in group.gcp.targets] == [
        ("us-central1-b", "g2-standard-8", "gpufleet-template-self-link"),
        ("us-central1-b", "g2-standard-12", "gpufleet-g2-standard-12-template-self-link"),
        ("us-central1-a", "g2-standard-8", "gpufleet-template-self-link"),
        ("us-central1-a", "g2-standard-12", "gpufleet-g2-standard-12-template-self-link")]
    clauses = resources["gpufleet-slurm-power-grant"]["inputs"]["condition"]["expression"].split(" || ")
    base = "projects/example-project/global/instanceTemplates"
    assert [c for c in clauses if "instanceTemplates" in c] == [
        f'resource.name == "{base}/gpufleet-template"', f'resource.name == "{base}/gpufleet-g2-standard-12-template"']
    prefix = chosen["metadata"][GCP_PREFIX_KEY]
    assert f"NodeName={prefix}[1-4] State=CLOUD CPUs=8 RealMemory=31129 Gres=gpu:1 " \
        "Features=gpu,g2-standard-8,g2-standard-12,tcp" in files["/etc/slurm/slurm.conf"].splitlines()
    assert [v.line() for v in check_plan(doc(FALLBACK))] == []


def test_a_fallback_type_of_another_gpu_is_refused_at_its_entry():
    from gpufleet.pipeline import check_cluster_input
    from gpufleet.spec.errors import SpecError

    with pytest.raises(SpecError) as refused:
        check_cluster_input({**SPEC, "accelerator": {"instance_type": "g2-standard-8",
                                                     "fallback_types": ["a2-highgpu-1g"]}})
    assert [p.path for p in refused.value.problems] == ["accelerator.fallback_types[0]"]


@pytest.mark.slow
def test_slurmctld_runs_the_rendered_elastic_configuration(tmp_path):
    """The plan's slurm.conf, rendered for Debian's 22.05 (`cloud_reg_addrs`, `PrivateData=cloud`), run by slurmctld:
    the CLOUD nodes exist, powered down, in their partition."""
    for tool in ("slurmctld", "scontrol", "sinfo", "munged"):
        require_tool(tool, SLURM_HINT)
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("needs root and unshare(1) (a private mount namespace for munged's socket)")
    from gpufleet.pipeline import plan_node_groups
    from gpufleet.scheduler.conf import cgroup_conf, gres_conf, slurm_conf
    from gpufleet.scheduler.elastic import elastic_settings
    from gpufleet.spec import parse_cluster_spec

    conf = controller_files(SPEC)["/etc/slurm/slurm.conf"]
    prefix = named(doc(SPEC))["gpufleet-template"]["inputs"]["metadata"][GCP_PREFIX_KEY]
    plans = plan_node_groups(parse_cluster_spec(SPEC), name="gpufleet")
    settings = elastic_settings(plans, "gpufleet", "10.0.0.10", lambda plan: prefix)
    assert slurm_conf(settings) == conf  # what the plan ships is this rendering; Debian's Slurm needs 22.05's keys
    debian = dataclasses.replace(settings, slurm_release=(22, 5))
    (tmp_path / "slurm.conf").write_text(slurm_conf(debian).replace("/usr/local/sbin/gpufleet-slurm-", "/bin/true #"))
    (tmp_path / "cgroup.conf").write_text(cgroup_conf())
    (tmp_path / "gres.conf").write_text(gres_conf(debian))
    done = subprocess.run(["unshare", "-m", "bash", str(HERE / "elastic_conf.sh"), str(tmp_path)],
                          capture_output=True, text=True, timeout=120, env=dict(os.environ, GPUS="1"))
    log = (tmp_path / "log" / "slurmctld.log")
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}\n{log.read_text()[-3000:] if log.exists() else ''}"
    nodes = [line.split() for line in done.stdout.split("== sinfo\n")[1].splitlines() if line.strip()]
    assert nodes == [[f"{prefix}{index}", "idle~", "gpu*"] for index in range(1, 5)]
    assert "cloud_reg_addrs" in done.stdout and "SuspendExcNodes" in done.stdout


def _controller_options(raw: dict) -> pulumi.ResourceOptions:
    """The Slurm controller VM's resource options, seen by a stack transformation while `__main__.py` runs."""
    import runpy

    from gpufleet.plan.project import find_project
    from gpufleet.plan.runner import run_program

    seen: dict[str, pulumi.ResourceOptions] = {}

    def record(args: pulumi.ResourceTransformationArgs):
        if args.name == "gpufleet-slurm-controller":
            seen["options"] = args.opts
        return None

    def program() -> None:
        pulumi.runtime.register_stack_transformation(record)
        runpy.run_path(str(find_project().program), run_name="__main__")

    run_program("test", {"gpufleet:cluster": raw}, program=program)
    return seen["options"]


def test_an_elastic_controller_is_replaced_when_its_user_data_changes_and_a_fixed_one_is_not():
    elastic = _controller_options(SPEC)
    assert (elastic.replace_on_changes, elastic.delete_before_replace) == (["metadata"], True)
    fixed = _controller_options({**SPEC, "nodes": 2, "fallback_zones": []})
    assert not fixed.replace_on_changes and not fixed.delete_before_replace


def test_nodes_in_every_zone_a_resume_tries_are_scraped_listed_and_reached(tmp_path):
    """A node started in a fallback zone is discovered by the monitoring server, listed by `list_nodes` and reached
    by `connect`: the commands run in bash against a stand-in gcloud that answers one node in us-central1-a."""
    user_data = named(doc(SPEC))["gpufleet-monitoring-server"]["inputs"]["metadata"]["user-data"]
    files = {f["path"]: f["content"] for f in read_yaml(user_data)["write_files"]}
    prometheus = read_yaml(files["/etc/prometheus/prometheus.yml"])
    discovered = {job["job_name"]: [sd["zone"] for sd in job["gce_sd_configs"]]
                  for job in prometheus["scrape_configs"] if "gce_sd_configs" in job}
    assert discovered == {"gpufleet-dcgm": ["us-central1-b", "us-central1-a"],
                          "gpufleet-node": ["us-central1-b", "us-central1-a"]}
    outputs = doc(SPEC)["outputs"]
    gcloud = tmp_path / "gcloud"
    gcloud.write_text('#!/bin/sh\necho "$@" >> "$(dirname "$0")/calls"\n'
                      'case "$*" in *"value(name,zone.basename())"*) echo "node-1 us-central1-a";; '
                      '*networkIP*) echo 10.0.0.7;; esac\n')
    gcloud.chmod(0o755)
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin"}
    listed = subprocess.run(["bash", "-c", outputs["list_nodes"]], env=env, capture_output=True, text=True,
                            timeout=30)
    assert listed.stdout == "10.0.0.7\n", listed.stderr
    subprocess.run(["bash", "-c", outputs["connect"]], env=env, check=True, timeout=30)
    calls = (tmp_path / "calls").read_text().splitlines()
    assert all("--zones us-central1-b,us-central1-a " in call for call in calls[:2])
    assert calls[-1] == "compute ssh --tunnel-through-iap node-1 --zone us-central1-a"
