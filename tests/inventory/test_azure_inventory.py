"""The generated Azure inventory, read by the real `azure.azcollection.azure_rm` plugin (`ansible-inventory --list`).

The plugin reaches Azure only through the Azure SDK (azure-mgmt-compute/-network and azure-identity, which the
`ansible` bundle does not carry) and its Uniform scale-set path calls the SDK directly, so the test feeds it host
records through its own inventory cache instead: the file is used as written plus three cache options, and the
plugin's host filters, groups and host variables run on records in the shape its `AzureHost.hostvars` builds.
Not covered offline: the ARM listing calls for the resource group and scale sets, and the Bastion/jump-host SSH.
"""

from __future__ import annotations

import hashlib
import json

import pytest
import yaml

from gpufleet.plan.cli import main
from tests.inventory.ansible_tools import ROOT, ansible_env, group_hosts, inventory_list, seed_inventory_cache
from tests.yaml_reader import read_yaml

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
    outputs = tmp / "outputs.json"
    outputs.write_text(json.dumps({"resource_group": GROUP, "scale_sets": [SCALE_SET]}))
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(ROOT)
        assert main(["inventory", STACK, "--outputs", str(outputs), "--jump-host", "azureuser@10.0.200.4",
                     "--out", str(tmp / "inventory")]) == 0
    written = tmp / "inventory" / f"{STACK}.azure_rm.yml"
    document = read_yaml(written.read_text())
    cache = tmp / "cache"
    cache.mkdir()
    cached = tmp / f"{STACK}-cached.azure_rm.yml"
    cached.write_text(yaml.safe_dump({**document, "cache": True, "cache_plugin": "ansible.builtin.jsonfile",
                                      "cache_connection": str(cache), "cache_timeout": 0}))
    hosts = tmp / "hosts.json"
    hosts.write_text(json.dumps(records()))
    env = ansible_env(tmp)
    seed_inventory_cache(PLUGIN, cached, hosts, env)
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
