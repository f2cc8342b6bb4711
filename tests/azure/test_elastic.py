"""Azure elastic groups as declared (components/azure/elastic.py, power_roles.py): one Uniform scale set per target
(type x zone) at capacity 0 whose capacity `pulumi up` ignores, with nothing on Azure's side that deletes or replaces
a node by itself; the controller's slurm.conf with CLOUD nodes and power saving, its power config naming each scale
set by id, the custom role on those scale sets only; checked like every other plan (provider required inputs, the
policy pack, cloud-init's schema and the boot order)."""

from __future__ import annotations

import base64
import copy
import json
from functools import cache

import pulumi
import pytest

from gpufleet.cloud_init.power.config import load_power_config
from gpufleet.plan.render import plan_json
from gpufleet.plan.userdata import decode_user_data
from gpufleet.policy.engine import check_plan
from tests.conftest import cached_plan
from tests.yaml_reader import read_yaml

from ..cloud_init.stack_configs import plan_cloud_configs
from ..cloud_init.test_boot_order import assert_no_ordering_cycle, machine
from ..elastic.documents import doc, named
from ..plan.test_required_inputs import problems_of
from ..validators import cloud_config_problems

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGdwdWZsZWV0LWV4YW1wbGUtcmVwbGFjZS1tZS0wMDAw you@example.com"
SPEC = {"cloud": "azure", "region": "eastus", "zone": "1", "access": {"ssh_public_key": KEY},
        "accelerator": {"instance_type": "Standard_NC24ads_A100_v4"}, "scheduler": {"kind": "slurm"},
        "monitoring": {"server": True}, "nodes": {"min": 1, "max": 4}, "placement_group": False, "fabric": "tcp",
        "market": "spot", "fallback_zones": ["2"]}
GROUPED = {"cloud": "azure", "region": "eastus", "zone": "1", "access": {"ssh_public_key": KEY},
           "accelerator": {"instance_type": "Standard_NC24ads_A100_v4"}, "scheduler": {"kind": "slurm"},
           "monitoring": {"server": True}, "placement_group": False, "fabric": "tcp",
           "node_groups": {"fixed": {"nodes": 1, "slurm_default": True}, "burst": {"nodes": {"min": 0, "max": 3}}}}
VMSS = "azure-native:compute:VirtualMachineScaleSet"
SUBSCRIPTION, GROUP = "00000000-0000-0000-0000-000000000000", "gpufleet-rg"  # the mocks'


def controller_files(raw: dict) -> dict[str, str]:
    custom_data = named(doc(raw))["gpufleet-slurm-controller"]["inputs"]["osProfile"]["customData"]
    return {f["path"]: f["content"] for f in read_yaml(decode_user_data(custom_data))["write_files"]}


def scale_sets(document: dict) -> dict[str, dict]:
    return {r["name"]: r for r in document["resources"] if r["type"] == VMSS}


@cache
def _options(spec_json: str) -> dict[str, pulumi.ResourceOptions]:
    """Each scale set's and the controller VM's resource options, seen by a stack transformation while
    `__main__.py` runs."""
    import runpy

    from gpufleet.plan.project import find_project
    from gpufleet.plan.runner import run_program

    seen: dict[str, pulumi.ResourceOptions] = {}

    def record(args: pulumi.ResourceTransformationArgs):
        if args.type_ == VMSS or args.name == "gpufleet-slurm-controller":
            seen[args.name] = args.opts
        return None

    def program() -> None:
        pulumi.runtime.register_stack_transformation(record)
        runpy.run_path(str(find_project().program), run_name="__main__")

    run_program("test", {"gpufleet:cluster": json.loads(spec_json)}, program=program)
    return seen


def options(raw: dict) -> dict[str, pulumi.ResourceOptions]:
    return _options(json.dumps(raw, sort_keys=True))


def test_an_elastic_group_is_one_scale_set_per_target_at_capacity_0_that_azure_never_shrinks_or_refills():
    sets = scale_sets(doc(SPEC))
    assert sorted(sets) == ["gpufleet-nodes", "gpufleet-nodes-2-nc24ads-a100-v4"]
    for name, zone in (("gpufleet-nodes", "1"), ("gpufleet-nodes-2-nc24ads-a100-v4", "2")):
        inputs = sets[name]["inputs"]
        assert inputs["sku"] == {"capacity": 0, "name": "Standard_NC24ads_A100_v4", "tier": "Standard"}
        assert inputs["zones"] == [zone]
        assert (inputs["orchestrationMode"], inputs["overprovision"]) == ("Uniform", False)
        assert inputs["automaticRepairsPolicy"] == {"enabled": False}
        assert inputs["spotRestorePolicy"] == {"enabled": False}
        assert inputs["upgradePolicy"] == {"mode": "Manual"}
        assert options(SPEC)[name].ignore_changes == ["sku.capacity"]  # `pulumi up` never scales resumed nodes to 0
        assert inputs["vmScaleSetName"].startswith("test-gpufleet-") and len(inputs["vmScaleSetName"]) <= 64
        assert "gpufleet-slurm-controller" in inputs["tags"] and "gpufleet-slurm-key" in inputs["tags"]
    assert sets["gpufleet-nodes"]["inputs"]["vmScaleSetName"] != sets["gpufleet-nodes-2-nc24ads-a100-v4"]["inputs"]["vmScaleSetName"]


def test_fallback_types_are_their_own_scale_sets_tried_after_the_chosen_type_in_each_zone():
    raw = {**SPEC, "accelerator": {"instance_type": "Standard_NC24ads_A100_v4",
                                   "fallback_types": ["Standard_NC48ads_A100_v4"]}}
    sets = scale_sets(doc(raw))
    assert [(s["inputs"]["sku"]["name"], s["inputs"]["zones"]) for s in sets.values()] == [
        ("Standard_NC24ads_A100_v4", ["1"]), ("Standard_NC48ads_A100_v4", ["1"]),
        ("Standard_NC24ads_A100_v4", ["2"]), ("Standard_NC48ads_A100_v4", ["2"])]
    (group,) = load_power_config(controller_files(raw)["/etc/gpufleet-slurm/power.json"]).groups
    assert [(t.vm_size, t.zone) for t in group.azure.targets] == [
        ("Standard_NC24ads_A100_v4", "1"), ("Standard_NC48ads_A100_v4", "1"),
        ("Standard_NC24ads_A100_v4", "2"), ("Standard_NC48ads_A100_v4", "2")]
    conf = controller_files(raw)["/etc/slurm/slurm.conf"]
    assert "Features=gpu,Standard_NC24ads_A100_v4,Standard_NC48ads_A100_v4,tcp" in conf  # the smaller shape
    configs = {s["inputs"]["sku"]["name"]: decode_user_data(
        s["inputs"]["virtualMachineProfile"]["osProfile"]["customData"]) for s in sets.values()}
    assert "GPUFLEET_GPUS='1'" in configs["Standard_NC24ads_A100_v4"]  # each type boots the node config of its own
    assert "GPUFLEET_GPUS='2'" in configs["Standard_NC48ads_A100_v4"]  # plan (pipeline.fallback_type_plans)


def test_adding_a_fallback_type_leaves_every_other_targets_scale_set_and_grant_as_it_was():
    """A renamed scale set is a replaced one, with its running nodes: targets are named by zone and size."""
    before = named(doc(SPEC))
    raw = {**SPEC, "accelerator": {"instance_type": "Standard_NC24ads_A100_v4",
                                   "fallback_types": ["Standard_NC48ads_A100_v4"]}}
    after = named(doc(raw))
    for name in ("gpufleet-nodes", "gpufleet-nodes-2-nc24ads-a100-v4", "gpufleet-slurm-power-grant-nodes",
                 "gpufleet-slurm-power-grant-nodes-2-nc24ads-a100-v4"):
        assert after[name]["inputs"] == before[name]["inputs"], name
    assert {"gpufleet-nodes-1-nc48ads-a100-v4", "gpufleet-nodes-2-nc48ads-a100-v4"} <= set(after)


def test_the_controllers_slurm_conf_declares_cloud_nodes_and_power_saving():
    lines = controller_files(SPEC)["/etc/slurm/slurm.conf"].splitlines()
    cloud = [line for line in lines if "State=CLOUD" in line]
    assert len(cloud) == 1 and cloud[0].startswith("NodeName=gpufleet-nodes-[1-4] State=CLOUD ")
    assert "Gres=gpu:1" in cloud[0]
    assert "SuspendExcNodes=gpufleet-nodes-[1-4]:1" in lines
    assert "ResumeProgram=/usr/local/sbin/gpufleet-slurm-resume" in lines and "SuspendTime=INFINITE" in lines
    assert any(line.startswith("PartitionName=gpu Nodes=gpu Default=YES") and "SuspendTime=600" in line
               for line in lines)


def test_the_power_config_names_each_scale_set_by_the_id_azure_gives_it():
    files = controller_files(SPEC)
    config = load_power_config(files["/etc/gpufleet-slurm/power.json"])
    (group,) = config.groups
    assert (config.cloud, config.azure.client_id, group.node_prefix, group.min_nodes, group.max_nodes) == (
        "azure", "", "gpufleet-nodes-", 1, 4)
    sets = scale_sets(doc(SPEC))
    base = f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{GROUP}/providers/Microsoft.Compute/virtualMachineScaleSets"
    assert [(t.scale_set_id, t.vm_size, t.zone) for t in group.azure.targets] == [
        (f"{base}/{sets[name]['inputs']['vmScaleSetName']}", "Standard_NC24ads_A100_v4", zone)
        for name, zone in (("gpufleet-nodes", "1"), ("gpufleet-nodes-2-nc24ads-a100-v4", "2"))]
    assert config.metrics_file.startswith("/var/lib/prometheus/node-exporter/")
    assert "/usr/local/sbin/gpufleet-slurm-power" in files and "/usr/local/lib/gpufleet/gpufleet_power/azure.py" in files


def test_the_controllers_identity_writes_the_elastic_scale_sets_only():
    resources = named(doc(SPEC))
    role = resources["gpufleet-slurm-power-role"]["inputs"]
    assert role["permissions"] == [{"actions": [
        "Microsoft.Compute/virtualMachineScaleSets/read", "Microsoft.Compute/virtualMachineScaleSets/write",
        "Microsoft.Compute/virtualMachineScaleSets/delete/action",
        "Microsoft.Compute/virtualMachineScaleSets/virtualMachines/read",
        "Microsoft.Compute/virtualMachineScaleSets/virtualMachines/write"]}]
    grants = {name: r["inputs"] for name, r in resources.items() if name.startswith("gpufleet-slurm-power-grant-")}
    assert sorted(grant["scope"] for grant in grants.values()) == ["gpufleet-nodes-2-nc24ads-a100-v4-id", "gpufleet-nodes-id"]
    assert {grant["roleDefinitionId"] for grant in grants.values()} == {"gpufleet-slurm-power-role-id"}
    principal = resources["gpufleet-slurm-key-access"]["inputs"]["principalId"]  # the controller VM's identity
    assert {grant["principalId"] for grant in grants.values()} == {principal}
    operations = resources["gpufleet-slurm-power-ops-role"]["inputs"]
    assert operations["permissions"] == [{"actions": ["Microsoft.Compute/locations/operations/read"]}]
    assert resources["gpufleet-slurm-power-ops-grant"]["inputs"]["scope"] == \
        f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{GROUP}"
    joins = [resources[f"gpufleet-slurm-power-join-{index}"]["inputs"] for index in range(3)]
    assert [join["scope"] for join in joins] == ["gpufleet-subnet-id", "gpufleet-nsg-id", "gpufleet-asg-id"]
    assert {join["principalId"] for join in joins} == {principal}
    assert all(action.startswith("Microsoft.Network/") and action.endswith("/action") for action in
               resources["gpufleet-slurm-power-join-role"]["inputs"]["permissions"][0]["actions"])
    assignments = [r for r in resources.values() if r["type"] == "azure-native:authorization:RoleAssignment"
                   and r["inputs"]["principalId"] == principal and "slurm-power" in r["name"]]
    assert len(assignments) == 2 + 1 + 3  # two scale sets, the operations reader, three network joins


def test_the_join_role_is_assignable_where_an_existing_subnet_lives():
    from gpufleet.azure.power_roles import resource_group_of

    subnet = "/subscriptions/S/resourceGroups/net-rg/providers/Microsoft.Network/virtualNetworks/v/subnets/s"
    assert resource_group_of(subnet) == "/subscriptions/S/resourceGroups/net-rg"
    assert resource_group_of("gpufleet-subnet-id") == ""


def test_the_policy_pack_passes_and_refuses_a_broader_grant():
    document = doc(SPEC)
    assert [v.line() for v in check_plan(document)] == []
    rule = "azure-scale-set-writers-scoped"
    on_group = copy.deepcopy(document)
    named(on_group)["gpufleet-slurm-power-grant-nodes"]["inputs"]["scope"] = \
        f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{GROUP}"
    assert [v.line() for v in check_plan(on_group) if rule in v.line()]
    contributor = copy.deepcopy(document)
    named(contributor)["gpufleet-slurm-power-grant-nodes-2-nc24ads-a100-v4"]["inputs"]["roleDefinitionId"] = (
        f"/subscriptions/{SUBSCRIPTION}/providers/Microsoft.Authorization/roleDefinitions/"
        "9980e02c-c2be-4d73-94e8-173b1dc7cf3c")  # Virtual Machine Contributor
    assert [v.line() for v in check_plan(contributor) if rule in v.line()]
    wildcard = copy.deepcopy(document)
    named(wildcard)["gpufleet-slurm-power-ops-role"]["inputs"]["permissions"] = [{"actions": ["Microsoft.Compute/*"]}]
    assert [v.line() for v in check_plan(wildcard) if rule in v.line()]


def test_every_resource_has_what_its_sdk_requires():
    assert problems_of([(r["type"], r["name"], r["inputs"]) for r in doc(SPEC)["resources"]]) == []


def test_every_cloud_config_passes_the_schema_and_boots_without_an_ordering_cycle(tmp_path):
    configs = plan_cloud_configs(cached_plan(SPEC))
    assert sorted(machine(text) for text in configs.values()) == ["GPU node", "GPU node", "Slurm controller",
                                                                  "monitoring server"]
    paths = []
    for index, text in enumerate(configs.values()):
        path = tmp_path / f"config-{index}.yaml"
        path.write_text(text)
        paths.append(path)
    assert cloud_config_problems(*paths) == {}
    assert_no_ordering_cycle("azure-elastic", configs, tmp_path)
    node = next(text for text in configs.values() if machine(text) == "GPU node")
    assert "gpufleet-cloud-node.conf" in node  # slurmd runs as the CLOUD node the instance's user data names
    files = {f["path"]: f["content"] for f in read_yaml(node)["write_files"]}
    name_script = files["/usr/local/lib/gpufleet/slurm/node-name"]
    assert "compute/userData" in name_script and "gpufleet-slurm-node=" in name_script
    assert "metadata/instance/compute/tagsList" in files["/usr/local/lib/gpufleet/slurm/join"]


def test_the_monitoring_server_loads_the_elastic_alerts():
    custom_data = named(doc(SPEC))["gpufleet-monitoring-server"]["inputs"]["osProfile"]["customData"]
    files = {f["path"]: f["content"] for f in read_yaml(decode_user_data(custom_data))["write_files"]}
    prometheus = read_yaml(files["/etc/prometheus/prometheus.yml"])
    assert "/etc/prometheus/gpufleet-elastic-alerts.yml" in prometheus["rule_files"]
    assert "GpufleetCapacityShort" in files["/etc/prometheus/gpufleet-elastic-alerts.yml"]


def test_a_fixed_group_beside_an_elastic_one_keeps_its_scale_set_as_it_was():
    document = doc(GROUPED)
    sets = scale_sets(document)
    assert sorted(sets) == ["gpufleet-burst-nodes", "gpufleet-fixed-nodes"]
    fixed = sets["gpufleet-fixed-nodes"]
    assert fixed["inputs"]["sku"]["capacity"] == 1 and fixed["inputs"]["automaticRepairsPolicy"]["enabled"] is True
    assert "vmScaleSetName" not in fixed["inputs"] and not options(GROUPED)["gpufleet-fixed-nodes"].ignore_changes
    assert options(GROUPED)["gpufleet-burst-nodes"].ignore_changes == ["sku.capacity"]
    burst = sets["gpufleet-burst-nodes"]["inputs"]
    assert burst["sku"]["capacity"] == 0 and burst["zones"] == ["1"]
    conf = controller_files(GROUPED)["/etc/slurm/slurm.conf"]
    assert "PartitionName=fixed Nodes=fixed Default=YES" in conf and "PartitionName=burst Nodes=burst Default=NO" in conf
    assert "SuspendExcNodes" not in conf
    grants = [r for r in document["resources"] if r["name"].startswith("gpufleet-slurm-power-grant-")]
    assert [g["inputs"]["scope"] for g in grants] == ["gpufleet-burst-nodes-id"]
    assert [v.line() for v in check_plan(document)] == []


def test_the_same_spec_declares_the_same_bytes():
    from gpufleet.plan.runner import run_program

    runs = [plan_json(run_program("test", {"gpufleet:cluster": SPEC})) for _ in range(2)]
    assert runs[0] == runs[1]
    assert json.loads(runs[0])["resources"] == doc(SPEC)["resources"]


def test_an_elastic_controller_is_replaced_when_its_user_data_changes_and_a_fixed_one_is_not():
    elastic = options(SPEC)["gpufleet-slurm-controller"]
    assert (elastic.replace_on_changes, elastic.delete_before_replace) == (["osProfile.customData"], True)
    fixed = options({**SPEC, "nodes": 2, "fallback_zones": []})["gpufleet-slurm-controller"]
    assert not fixed.replace_on_changes and fixed.delete_before_replace


def test_a_fixed_controller_is_declared_as_before():
    fixed = named(doc({**SPEC, "nodes": 2, "fallback_zones": [], "market": "on-demand"}))
    assert "gpufleet-slurm-power-role" not in fixed
    custom_data = fixed["gpufleet-slurm-controller"]["inputs"]["osProfile"]["customData"]
    files = {f["path"] for f in read_yaml(decode_user_data(custom_data))["write_files"]}
    assert "/etc/gpufleet-slurm/power.json" not in files
    assert "State=CLOUD" not in controller_files({**SPEC, "nodes": 2, "fallback_zones": []})["/etc/slurm/slurm.conf"]


@pytest.mark.parametrize(("change", "path"), [
    ({"market": {"type": "mixed", "on_demand_base": 1}}, "market.type"),
    ({"rollout": {"enabled": True, "max_unavailable": 1}}, "rollout.enabled"),
])
def test_what_an_azure_elastic_group_cannot_be_is_refused_at_its_field(change, path):
    from gpufleet.azure.elastic import elastic_azure_problems
    from gpufleet.pipeline import plan_node_groups
    from gpufleet.spec import parse_cluster_spec

    plans = plan_node_groups(parse_cluster_spec({**SPEC, **change}))
    assert [p.path for p in elastic_azure_problems(plans.groups)] == [path]


def test_the_plans_power_config_drives_the_power_programs_against_a_loopback_resource_manager(tmp_path):
    """The power.json the plan ships, pointed at the loopback Azure Resource Manager (tests/elastic/fake_azure.py):
    the scale-set ids it names are ones the programs grow and name instances in; the first zone is short, so the
    resume lands in the fallback zone's scale set."""
    import dataclasses

    from gpufleet.cloud_init.power.azure import AzureProvider
    from gpufleet.cloud_init.power.engine import resume
    from gpufleet.cloud_init.power.metrics import PowerState

    from ..elastic.fake_azure import FakeAzure
    from ..elastic.fake_slurm import FakeSlurm

    shipped = load_power_config(controller_files(SPEC)["/etc/gpufleet-slurm/power.json"])
    (group,) = shipped.groups
    first, second = (target.scale_set_id for target in group.azure.targets)
    short = first.rsplit("/", 1)[-1]
    fake = FakeAzure({t.scale_set_id: t.vm_size for t in group.azure.targets},
                     lambda name, attempt: ("capacity", "ZonalAllocationFailed") if name == short else None)
    server = fake.server().start()
    try:
        config = dataclasses.replace(
            shipped, azure=dataclasses.replace(shipped.azure, management_url=server.url, metadata_url=server.url),
            state_dir=str(tmp_path / "state"), metrics_file=str(tmp_path / "metrics.prom"))
        slurm = FakeSlurm(["gpufleet-nodes-1"])
        resume(config, AzureProvider(config, poll_s=0.01), slurm,
               PowerState(config.state_dir, config.metrics_file, [group.name]), ["gpufleet-nodes-1"])
    finally:
        server.close()
    assert slurm.updates == []
    assert fake.sets[first.lower()]["capacity"] == 0 and fake.sets[second.lower()]["capacity"] == 1
    (vm,) = fake.sets[second.lower()]["instances"].values()
    assert base64.b64decode(vm["properties"]["userData"]).decode() == "gpufleet-slurm-node=gpufleet-nodes-1\n"


@pytest.mark.slow
def test_slurmctld_runs_the_rendered_elastic_configuration(tmp_path):
    """The Azure plan's slurm.conf, rendered for Debian's 22.05, run by slurmctld (tests/gcp/elastic_conf.sh): the
    CLOUD nodes exist, powered down, in their partition."""
    import dataclasses
    import os
    import shutil
    import subprocess
    from pathlib import Path

    from gpufleet.pipeline import plan_node_groups
    from gpufleet.scheduler.conf import cgroup_conf, gres_conf, slurm_conf
    from gpufleet.scheduler.elastic import elastic_settings
    from gpufleet.spec import parse_cluster_spec

    from ..scheduler.test_slurm_daemons import SLURM_HINT
    from ..validators import require_tool

    for tool in ("slurmctld", "scontrol", "sinfo", "munged"):
        require_tool(tool, SLURM_HINT)
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("needs root and unshare(1) (a private mount namespace for munged's socket)")
    conf = controller_files(SPEC)["/etc/slurm/slurm.conf"]
    settings = elastic_settings(plan_node_groups(parse_cluster_spec(SPEC), name="gpufleet"), "gpufleet", "10.0.0.10")
    assert slurm_conf(settings) == conf  # what the plan ships is this rendering
    debian = dataclasses.replace(settings, slurm_release=(22, 5))
    (tmp_path / "slurm.conf").write_text(slurm_conf(debian).replace("/usr/local/sbin/gpufleet-slurm-", "/bin/true #"))
    (tmp_path / "cgroup.conf").write_text(cgroup_conf())
    (tmp_path / "gres.conf").write_text(gres_conf(debian))
    script = Path(__file__).parents[1] / "gcp" / "elastic_conf.sh"
    done = subprocess.run(["unshare", "-m", "bash", str(script), str(tmp_path)], capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, GPUS="1"))
    log = tmp_path / "log" / "slurmctld.log"
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}\n{log.read_text()[-3000:] if log.exists() else ''}"
    nodes = [line.split() for line in done.stdout.split("== sinfo\n")[1].splitlines() if line.strip()]
    assert nodes == [[f"gpufleet-nodes-{index}", "idle~", "gpu*"] for index in range(1, 5)]


def test_an_infiniband_group_takes_no_fallback_type_on_azure():
    """Each scale set is its own InfiniBand partition. The catalog has no second InfiniBand size with the same GPU
    today, so the spec rules already refuse every such fallback; this guards the day it has one."""
    import dataclasses

    from gpufleet.azure.elastic import elastic_azure_problems
    from gpufleet.pipeline import plan_node_groups
    from gpufleet.spec import parse_cluster_spec

    raw = {**SPEC, "accelerator": {"instance_type": "Standard_ND96isr_H100_v5"}, "fabric": "infiniband",
           "placement_group": True, "fallback_zones": [], "nodes": {"min": 0, "max": 2}}
    (plan,) = plan_node_groups(parse_cluster_spec(raw)).groups
    assert elastic_azure_problems([plan]) == []
    with_fallback = dataclasses.replace(plan, fallbacks=("Standard_ND96isr_H100_v5",))
    assert [p.path for p in elastic_azure_problems([with_fallback])] == ["accelerator.fallback_types"]


def test_pulumi_up_refuses_a_mixed_elastic_group_at_its_field_and_declares_nothing():
    from gpufleet.plan.mocks import PlanMocks, RecordingMonitor
    from gpufleet.plan.runner import run_program

    monitor = RecordingMonitor(PlanMocks())
    with pytest.raises(pulumi.RunError) as caught:
        run_program("test", {"gpufleet:cluster": {**SPEC, "market": {"type": "mixed", "on_demand_base": 1}}},
                    monitor=monitor)
    assert "`market.type`" in str(caught.value) and "on demand or spot" in str(caught.value)
    assert [r.name for r in monitor.declared.values() if r.custom] == []
