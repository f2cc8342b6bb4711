"""Plans of a three-group Slurm cluster on each cloud: one fleet per group, everything else once, each group's nodes
in its own partition; checked like every other plan (provider schemas, policy pack, cloud-init schema, boot order),
and `gpufleet diff` of one group's node count touches that group's fleet only."""

from __future__ import annotations

import json
from functools import cache

import pytest

from gpufleet.groups.naming import GROUP_TAG
from gpufleet.plan.diff import diff_plans
from gpufleet.plan.render import plan_json
from gpufleet.policy.engine import check_plan
from tests.conftest import cached_plan
from tests.yaml_reader import read_yaml

from ..cloud_init.stack_configs import plan_cloud_configs
from ..cloud_init.test_boot_order import assert_no_ordering_cycle, machine
from ..plan.test_required_inputs import problems_of
from ..validators import cloud_config_problems

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGdwdWZsZWV0LWV4YW1wbGUtcmVwbGFjZS1tZS0wMDAw you@example.com"
SPECS = {
    "aws": {"cloud": "aws", "region": "us-east-2", "zone": "use2-az2", "accelerator": {"instance_type": "p5.48xlarge"},
            "node_groups": {"train": {"nodes": 2, "market": "spot", "slurm_default": True},
                            "debug": {"nodes": 1},
                            "eval": {"nodes": 2, "accelerator": {"gpu": "L40S", "gpus_per_node": 1}}}},
    "gcp": {"cloud": "gcp", "region": "us-central1", "zone": "us-central1-b",
            "accelerator": {"instance_type": "a3-megagpu-8g"},
            "node_groups": {"train": {"nodes": 2, "market": "spot", "slurm_default": True},
                            "debug": {"nodes": 1},
                            "eval": {"nodes": 2, "accelerator": {"instance_type": "g2-standard-8"}}}},
    "azure": {"cloud": "azure", "region": "eastus", "accelerator": {"instance_type": "Standard_ND96isr_H100_v5"},
              "access": {"ssh_public_key": KEY},
              "node_groups": {"train": {"nodes": 2, "market": "spot", "slurm_default": True},
                              "debug": {"nodes": 1},
                              "eval": {"nodes": 2, "accelerator": {"instance_type": "Standard_NC24ads_A100_v4"}}}},
}
FLEETS = {"aws": "aws:autoscaling/group:Group", "gcp": "gcp:compute/instanceGroupManager:InstanceGroupManager",
          "azure": "azure-native:compute:VirtualMachineScaleSet"}
ONCE = {"aws": ("aws:ec2/securityGroup:SecurityGroup", "aws:ec2/vpc:Vpc"),
        "gcp": ("gcp:serviceaccount/account:Account",), "azure": ("azure-native:network:NetworkSecurityGroup",)}
CLOUDS = sorted(SPECS)


def spec(cloud: str, **changes) -> dict:
    return {**SPECS[cloud], "scheduler": {"kind": "slurm"}, "monitoring": {"server": True}, **changes}


@cache
def _doc(spec_json: str) -> str:
    return plan_json(cached_plan(json.loads(spec_json)))


def doc(raw: dict) -> dict:
    return json.loads(_doc(json.dumps(raw, sort_keys=True)))


def of_type(document: dict, token: str) -> list[dict]:
    return [r for r in document["resources"] if r["type"] == token]


@pytest.mark.parametrize("cloud", CLOUDS)
def test_one_fleet_per_group_and_the_rest_once(cloud):
    document = doc(spec(cloud))
    fleets = sorted(r["name"] for r in of_type(document, FLEETS[cloud]))
    assert fleets == ["gpufleet-debug-nodes", "gpufleet-eval-nodes", "gpufleet-train-nodes"]
    for token in ONCE[cloud]:
        assert len([r for r in of_type(document, token) if "slurm" not in r["name"] and "monitoring" not in r["name"]
                    ]) == 1, token
    controllers = [r for r in document["resources"] if r["type"] == "gpufleet:index:SlurmController"]
    assert len(controllers) == 1
    servers = [r for r in document["resources"] if r["name"] == "gpufleet-monitoring-server"]
    assert len(servers) == 1
    groups = document["outputs"]["node_groups"]
    assert sorted(groups) == ["debug", "eval", "train"]
    assert groups["train"]["slurm_default"] is True and groups["eval"]["slurm_partition"] == "eval"
    assert document["outputs"]["nodes"] == 5 and document["outputs"]["instance_type"] == groups["train"][
        "instance_type"]
    assert [row["group"] for row in document["outputs"]["cost"]] == ["debug", "eval", "train", None]


@pytest.mark.parametrize("cloud", CLOUDS)
def test_each_groups_resources_carry_the_group(cloud):
    document = doc(spec(cloud))
    for fleet in of_type(document, FLEETS[cloud]):
        group = fleet["name"].split("-")[1]
        text = json.dumps(fleet["inputs"])
        if cloud == "gcp":  # the label is on the template; the group's nodes are named after it
            assert fleet["inputs"]["baseInstanceName"].endswith(f"-{group}")
            template = next(r for r in document["resources"] if r["name"] == f"gpufleet-{group}-template")
            assert template["inputs"]["labels"][GROUP_TAG] == group
        else:
            assert f'"{GROUP_TAG}"' in text and f'"{group}"' in text


@pytest.mark.parametrize("cloud", CLOUDS)
def test_the_controller_serves_a_partition_per_group_and_each_node_registers_in_its_own(cloud):
    configs = plan_cloud_configs(cached_plan(spec(cloud)))
    controller = next(text for text in configs.values() if machine(text) == "Slurm controller")
    files = {f["path"]: f["content"] for f in read_yaml(controller)["write_files"]}
    conf = files["/etc/slurm/slurm.conf"]
    assert "NodeSet=train Feature=train" in conf
    assert "PartitionName=train Nodes=train Default=YES" in conf and "PartitionName=eval Nodes=eval Default=NO" in conf
    assert "Nodes=ALL" not in conf and "MaxNodeCount=4112" in conf
    gpus = {"aws": 8, "gcp": 8, "azure": 8}[cloud]
    assert f"File=/dev/nvidia[0-{gpus - 1}]" in files["/etc/slurm/gres.conf"]
    nodes = {name: text for name, text in configs.items() if machine(text) == "GPU node"}
    assert len(nodes) == 3
    for name, text in nodes.items():
        group = next(g for g in ("train", "debug", "eval") if f"-{g}-" in name)
        registration = next(line for line in text.splitlines() if "GPUFLEET_SLURM_NODE_CONF" in line)
        features = registration.split("Feature=")[1].strip("'\"").split(",")
        assert group in features and not {"train", "debug", "eval"} - {group} & set(features), registration


@pytest.mark.parametrize("cloud", CLOUDS)
def test_every_resource_has_what_its_sdk_requires(cloud):
    resources = [(r["type"], r["name"], r["inputs"]) for r in doc(spec(cloud))["resources"]]
    assert problems_of(resources) == []


@pytest.mark.parametrize("cloud", CLOUDS)
def test_the_policy_pack_passes(cloud):
    assert [v.line() for v in check_plan(doc(spec(cloud)))] == []


@pytest.mark.parametrize("cloud", CLOUDS)
def test_every_rendered_cloud_config_passes_the_schema_and_boots_without_an_ordering_cycle(cloud, tmp_path):
    configs = plan_cloud_configs(cached_plan(spec(cloud)))
    assert sorted(machine(text) for text in configs.values()) == [
        "GPU node", "GPU node", "GPU node", "Slurm controller", "monitoring server"]
    paths = []
    for index, text in enumerate(configs.values()):
        path = tmp_path / f"config-{index}.yaml"
        path.write_text(text)
        paths.append(path)
    assert cloud_config_problems(*paths) == {}
    assert_no_ordering_cycle(f"{cloud}-groups", configs, tmp_path)


@pytest.mark.parametrize("cloud", CLOUDS)
def test_a_node_count_change_in_one_group_touches_only_that_groups_fleet(cloud):
    base = spec(cloud)
    head = json.loads(json.dumps(base))
    head["node_groups"]["eval"]["nodes"] = 4
    diff = diff_plans(doc(base), doc(head))
    assert diff.replaced == [] and diff.added == [] and diff.removed == [] and diff.user_data == {}
    assert [change.name for change in diff.changed] == ["gpufleet-eval-nodes"], [c.name for c in diff.changed]
    hourly = diff.cost["usd_per_hour"]
    assert hourly["base"] is None or hourly["delta"] > 0  # Azure's catalog has no ND H100 v5 spot price


@pytest.mark.parametrize("cloud", CLOUDS)
def test_each_group_keeps_the_drain_hook_repair_and_roll_out_settings(cloud):
    """What a one-group fleet has for a node's leaving and repair, every group's fleet has (`rollout` is the
    cluster's, so every group rolls out alike)."""
    document = doc(spec(cloud, rollout={"enabled": True, "max_unavailable": 1}))
    fleets = of_type(document, FLEETS[cloud])
    if cloud == "aws":
        hooks = of_type(document, "aws:autoscaling/lifecycleHook:LifecycleHook")
        assert sorted(h["inputs"]["autoscalingGroupName"] for h in hooks) == sorted(f["name"] for f in fleets)
        assert all(f["inputs"]["instanceRefresh"]["strategy"] == "Rolling" for f in fleets)
    elif cloud == "gcp":
        assert all(f["inputs"]["autoHealingPolicies"]["healthCheck"] and f["inputs"]["updatePolicy"]["type"] ==
                   "PROACTIVE" for f in fleets)
    else:
        assert all(f["inputs"]["automaticRepairsPolicy"]["enabled"] and f["inputs"]["upgradePolicy"]["mode"] ==
                   "Rolling" for f in fleets)
