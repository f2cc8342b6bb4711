"""The generated Azure inventory, read by the real `azure.azcollection.azure_rm` plugin (`ansible-inventory --list`).

The plugin reaches Azure only through the Azure SDK (azure-mgmt-compute/-network and azure-identity, which the
`ansible` bundle does not carry) and its Uniform scale-set path calls the SDK directly, so the test feeds it host
records through its own inventory cache instead: the file is used as written plus three cache options, and the
plugin's host filters, groups and host variables run on records in the shape its `AzureHost.hostvars` builds.
A stack with two node groups (tests/inventory/grouped_stacks.py), its scale sets named in its `node_groups` output:
each scale set's VMs come back in `gpu_nodes` and in their group's `node_group_<group>`, with the group's name,
fabric and fleet, while another scale set whose VMs carry the same group tag stays out; without the groups' scale
sets in the outputs the inventory is refused, naming the output.
Not covered offline: the ARM listing calls for the resource group and scale sets, and the Bastion/jump-host SSH.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import yaml

from gpufleet.plan.cli import main
from tests.inventory.ansible_tools import ROOT, ansible_env, group_hosts, inventory_list, seed_inventory_cache
from tests.inventory.grouped_stacks import declared, planned, stack_of, write_stack
from tests.yaml_reader import read_yaml

# The real plugin in `ansible-inventory` subprocesses against a stand-in API on loopback (2 to 6 s of CPU a
# module): part of `.ci/run`'s slow run, so that the default run stays under a minute on 2 cores.
pytestmark = pytest.mark.slow

STACK, GROUP, SCALE_SET = "azure-dev", "gpufleet-rg1a2b3c4", "gpufleet-nodes5d6e7f8"
SUBSCRIPTION = "00000000-0000-0000-0000-000000000000"
PLUGIN = "azure.azcollection.azure_rm"


def host(name: str, size: str, tags: dict, ip: str, scale_set: str | None = None, power: str = "running") -> dict:
    kind = "virtualMachineScaleSets" if scale_set else "virtualMachines"
    path = f"{scale_set}/virtualMachines/{name.rsplit('_', 1)[-1]}" if scale_set else name
    resource_id = f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{GROUP}/providers/Microsoft.Compute/{kind}/{path}"
    hostvars = {
        "id": resource_id, "name": name, "location": "eastus", "powerstate": power, "provisioning_state": "succeeded",
        "tags": tags, "resource_group": GROUP.lower(), "virtual_machine_size": size, "computer_name": name,
        "private_ipv4_addresses": [ip], "public_ipv4_address": [], "public_ip_address": [], "public_dns_hostnames": [],
        "os_profile": {"system": "linux"}, "vmid": hashlib.md5(name.encode()).hexdigest(),  # noqa: S324 - an id
        "vmss": {"id": resource_id.rsplit("/virtualMachines/", 1)[0], "name": scale_set} if scale_set else {},
        "resource_type": f"Microsoft.Compute/{kind}", "image": {}, "plan": None, "availability_zone": None,
        "security_group": [], "security_group_id": [], "network_interface": [], "network_interface_id": [],
        "mac_address": [], "subnet": [], "network_interface_properties": [], "license_type": "Unknown",
    }
    # The inventory sets `plain_host_names`: the plugin names each host by its VM name (AzureHost, legacy_name).
    return {"default_inventory_hostname": name, "hostvars": hostvars}


def records() -> list[dict]:
    ours = {"gpufleet-stack": STACK, "gpufleet-component": "AzureGpuCluster"}
    return [
        host(f"{SCALE_SET}_0", "Standard_NC24ads_A100_v4", {**ours, "gpufleet-role": "nodes"}, "10.0.0.4", SCALE_SET),
        host(f"{SCALE_SET}_1", "Standard_NC24ads_A100_v4", {**ours, "gpufleet-role": "nodes"}, "10.0.0.5", SCALE_SET),
        host(f"{SCALE_SET}_2", "Standard_NC24ads_A100_v4", {**ours, "gpufleet-role": "nodes"}, "10.0.0.6", SCALE_SET,
             power="deallocated"),
        host("gpufleet-monitoring-server", "Standard_B2s", {**ours, "gpufleet-role": "monitoring"}, "10.0.0.10"),
        host("gpufleet-slurm-controller", "Standard_D4s_v5", {**ours, "gpufleet-role": "slurm-controller"},
             "10.0.0.11"),
        host("train-monitoring", "Standard_B2s", {**ours, "gpufleet-stack": "azure-train",
                                                  "gpufleet-role": "monitoring"}, "10.0.0.12"),
        host("other-nodes_0", "Standard_ND96asr_v4", {**ours, "gpufleet-role": "nodes"}, "10.0.0.13", "other-nodes"),
        host("jumpbox", "Standard_B1s", {}, "10.0.0.14"),
    ]


@pytest.fixture(scope="module")
def listing(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("azure-inventory")
    return listed(tmp, STACK, {"resource_group": GROUP, "scale_sets": [SCALE_SET]}, records())


def listed(tmp, stack: str, outputs: dict, hosts: list[dict]) -> tuple[dict, dict]:
    """`gpufleet inventory` of the stack with those outputs (through a jump host), and the plugin's listing of
    `hosts` with the file as written; (the document, the listing)."""
    outputs_file = tmp / "outputs.json"
    outputs_file.write_text(json.dumps(outputs))
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(ROOT)
        assert main(["inventory", stack, "--outputs", str(outputs_file), "--jump-host", "azureuser@10.0.200.4",
                     "--out", str(tmp / "inventory")]) == 0
    written = tmp / "inventory" / f"{Path(stack).name.removeprefix('Pulumi.').removesuffix('.yaml')}.azure_rm.yml"
    document = read_yaml(written.read_text())
    cache = tmp / "cache"
    cache.mkdir()
    cached = tmp / f"{written.name.removesuffix('.azure_rm.yml')}-cached.azure_rm.yml"
    cached.write_text(yaml.safe_dump({**document, "cache": True, "cache_plugin": "ansible.builtin.jsonfile",
                                      "cache_connection": str(cache), "cache_timeout": 0}))
    records_file = tmp / "hosts.json"
    records_file.write_text(json.dumps(hosts))
    env = ansible_env(tmp)
    seed_inventory_cache(PLUGIN, cached, records_file, env)
    return document, inventory_list(cached, env)


def test_the_plugin_lists_the_resource_group_of_the_scale_set(listing):
    document, _result = listing
    assert document["include_vmss_resource_groups"] == [GROUP] and document["include_vm_resource_groups"] == [GROUP]


def test_exactly_the_stacks_running_vms_come_back_in_their_groups(listing):
    _document, result = listing
    assert group_hosts(result, "gpu_nodes") == {f"{SCALE_SET}_0", f"{SCALE_SET}_1"}
    assert group_hosts(result, "monitoring_server") == {"gpufleet-monitoring-server"}
    assert group_hosts(result, "slurm_controller") == {"gpufleet-slurm-controller"}
    assert set(result["_meta"]["hostvars"]) == {f"{SCALE_SET}_0", f"{SCALE_SET}_1", "gpufleet-monitoring-server",
                                                "gpufleet-slurm-controller"}


def test_hosts_are_reached_by_private_ip_through_the_jump_host_with_the_node_facts(listing):
    _document, result = listing
    node = result["_meta"]["hostvars"][f"{SCALE_SET}_1"]
    assert (node["ansible_host"], node["ansible_user"]) == ("10.0.0.5", "azureuser")
    assert node["ansible_ssh_common_args"] == "-o ProxyJump=azureuser@10.0.200.4"
    assert (node["gpufleet_cloud"], node["gpufleet_instance_type"], node["gpufleet_fabric"],
            node["gpufleet_node_group"]) == ("azure", "Standard_NC24ads_A100_v4", "tcp", SCALE_SET)
    controller = result["_meta"]["hostvars"]["gpufleet-slurm-controller"]
    assert (controller["gpufleet_fabric"], controller["gpufleet_node_group"]) == ("none", "")


def test_without_a_jump_host_or_bastion_the_inventory_is_refused(tmp_path, capsys, monkeypatch):
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps({"resource_group": GROUP, "scale_sets": [SCALE_SET]}))
    monkeypatch.chdir(ROOT)
    assert main(["inventory", STACK, "--outputs", str(outputs), "--out", str(tmp_path / "inventory")]) == 2
    assert "Azure nodes have no public IP" in capsys.readouterr().err
    assert not (tmp_path / "inventory").exists()


def test_the_bastion_route_opens_one_tunnel_per_host_by_resource_id(tmp_path, monkeypatch):
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps({"resource_group": GROUP, "scale_sets": [SCALE_SET]}))
    monkeypatch.chdir(ROOT)
    assert main(["inventory", STACK, "--outputs", str(outputs), "--bastion", "hub-bastion",
                 "--bastion-resource-group", "hub-rg", "--out", str(tmp_path / "inventory")]) == 0
    document = read_yaml((tmp_path / "inventory" / f"{STACK}.azure_rm.yml").read_text())
    expression = document["hostvar_expressions"]["ansible_ssh_common_args"]
    assert "bastion-proxy hub-bastion hub-rg " in expression and "~ id ~" in expression


def team_records() -> list[dict]:
    """The two-group stack's VMs in its scale sets as planned (size, tags), its monitoring server, and a scale set
    that is not the stack's whose VM carries the same group tag."""
    team = planned("azure")
    found, address = [], iter(f"10.0.1.{n}" for n in range(4, 100))
    for deployed in team["outputs"]["node_groups"].values():
        for scale_set in deployed["scale_sets"]:
            planned_set = declared(team, "azure-native:compute:VirtualMachineScaleSet", scale_set)
            found += [host(f"{scale_set}_{n}", planned_set["sku"]["name"], planned_set["tags"], next(address),
                           scale_set) for n in range(planned_set["sku"]["capacity"])]
    server = declared(team, "azure-native:compute:VirtualMachine", "gpufleet-monitoring-server")
    found.append(host("gpufleet-monitoring-server", "Standard_B2s", server["tags"], next(address)))
    found.append(host("other-train-nodes_0", "Standard_ND96isr_H100_v5",
                      {"gpufleet-stack": "azure-train", "gpufleet-role": "nodes", "gpufleet-node-group": "train"},
                      next(address), "other-train-nodes"))
    return found


@pytest.fixture(scope="module")
def team(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("azure-team-inventory")
    return listed(tmp, str(write_stack(tmp, "azure")), planned("azure")["outputs"], team_records())


def test_each_node_group_is_a_group_and_every_groups_nodes_are_gpu_nodes(team):
    _document, result = team
    fleets = {group: value["scale_sets"] for group, value in planned("azure")["outputs"]["node_groups"].items()}
    train = {f"{scale_set}_{n}" for scale_set in fleets["train"] for n in range(2)}
    small = {f"{scale_set}_0" for scale_set in fleets["eval-small"]}
    assert len(train) == 2 and len(small) == 1
    assert group_hosts(result, "node_group_train") == train
    assert group_hosts(result, "node_group_eval_small") == small
    assert group_hosts(result, "gpu_nodes") == train | small
    assert group_hosts(result, "monitoring_server") == {"gpufleet-monitoring-server"}
    assert set(result["_meta"]["hostvars"]) == train | small | {"gpufleet-monitoring-server"}


def test_each_node_carries_its_own_groups_name_fabric_and_fleet(team):
    _document, result = team
    hostvars = result["_meta"]["hostvars"]
    [train_set] = planned("azure")["outputs"]["node_groups"]["train"]["scale_sets"]
    [small_set] = planned("azure")["outputs"]["node_groups"]["eval-small"]["scale_sets"]
    node = hostvars[f"{train_set}_1"]
    assert (node["gpufleet_node_group"], node["gpufleet_instance_type"], node["gpufleet_fabric"],
            node["gpufleet_fleet"]) == ("train", "Standard_ND96isr_H100_v5", "infiniband", train_set)
    node = hostvars[f"{small_set}_0"]
    assert (node["gpufleet_node_group"], node["gpufleet_instance_type"], node["gpufleet_fabric"],
            node["gpufleet_fleet"]) == ("eval-small", "Standard_NC24ads_A100_v4", "tcp", small_set)
    server = hostvars["gpufleet-monitoring-server"]
    assert (server["gpufleet_node_group"], server["gpufleet_fabric"], server["gpufleet_fleet"]) == ("", "none", "")


@pytest.mark.parametrize(("outputs", "path"), [
    ({"resource_group": GROUP, "scale_sets": ["gpufleet-train-nodes"]}, "`outputs.node_groups`"),
    ({"resource_group": GROUP, "scale_sets": ["gpufleet-train-nodes"],
      "node_groups": {"train": {"scale_sets": ["gpufleet-train-nodes"]}}}, "`outputs.node_groups.eval-small.scale_sets`"),
    ({"resource_group": GROUP, "scale_sets": ["gpufleet-train-nodes"],
      "node_groups": {"train": {"scale_sets": ["gpufleet-train-nodes"]}, "eval-small": "gpufleet-eval-small-nodes"}},
     "`outputs.node_groups.eval-small.scale_sets`"),
])
def test_a_grouped_stack_without_its_groups_scale_sets_in_the_outputs_is_refused(tmp_path, capsys, monkeypatch,
                                                                                 outputs, path):
    outputs_file = tmp_path / "outputs.json"
    outputs_file.write_text(json.dumps(outputs))
    monkeypatch.chdir(ROOT)
    assert main(["inventory", str(write_stack(tmp_path, "azure")), "--outputs", str(outputs_file),
                 "--jump-host", "azureuser@10.0.200.4", "--out", str(tmp_path / "inventory")]) == 2
    error = capsys.readouterr().err
    assert path in error and f"pulumi stack output --json -s {stack_of('azure')}" in error
    assert not (tmp_path / "inventory").exists()
