"""What AzureGpuCluster declares, checked on the inputs the engine would receive (camelCase)."""

from __future__ import annotations

import base64
import gzip
import hashlib

import pulumi
import pytest

from gpufleet.plan.render import plan_json
from gpufleet.plan.runner import run_program
from gpufleet.plan.stackfile import read_stack_config
from tests.conftest import cached_plan, of_type, one, plan_spec, refusal

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGdwdWZsZWV0LWV4YW1wbGUtcmVwbGFjZS1tZS0wMDAw test@example.com"
TRAIN = {"cloud": "azure", "region": "eastus", "nodes": 2, "accelerator": {"instance_type": "Standard_ND96isr_H100_v5"},
         "market": "spot", "fabric": "infiniband", "access": {"ssh_public_key": KEY}}
DEV = read_stack_config("azure-dev")["gpufleet:cluster"]  # one NC24ads_A100_v4 on demand
# Every optional Azure input at once, so that one plan serves several tests.
FULL = {**TRAIN, "zone": "2", "placement_group": True, "tags": {"team": "research"},
        "market": {"type": "spot", "spot_max_price_per_hour": 40.5},
        "image": {"id": "microsoft-dsvm:ubuntu-hpc:2404:24.04.2025010101"},
        "access": {"ssh_public_key": KEY, "ssh_cidrs": ["203.0.113.0/24"], "monitoring_cidrs": ["198.51.100.0/24"]},
        "node": {"exporters": {"dcgm": True, "node": False}}, "network": {"cidr": "10.20.0.0/20"}}
AUTO = {key: value for key, value in TRAIN.items() if key != "fabric"}  # `fabric: auto` picks TCP for one node
MIXED = {**DEV, "nodes": 5, "market": {"type": "mixed", "on_demand_base": 2}}
VMSS = "azure-native:compute:VirtualMachineScaleSet"
NSG = "azure-native:network:NetworkSecurityGroup"
SUBNET_ID = ("/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/hpc-rg/providers/"
             "Microsoft.Network/virtualNetworks/hpc-vnet/subnets/gpu")


plan_of = cached_plan
# Hex digests do not compress below half their length, so this is over Azure's 64 KB even after gzip.
INCOMPRESSIBLE = "".join(hashlib.sha256(str(i).encode()).hexdigest() for i in range(2600))


def profile(result) -> dict:
    return one(result, VMSS).inputs["virtualMachineProfile"]


def test_declares_the_whole_cluster_under_one_component():
    result = plan_of(TRAIN)
    component = one(result, "gpufleet:index:AzureGpuCluster")
    nodes_part = [r for r in result.resources if r is not component and "-monitoring-" not in r.name]
    assert sorted(r.name for r in nodes_part) == [
        "gpufleet-asg", "gpufleet-nat", "gpufleet-nat-ip", "gpufleet-nodes", "gpufleet-nsg", "gpufleet-rg",
        "gpufleet-subnet", "gpufleet-vnet"]
    assert all(r.parent == component.urn for r in result.resources if r is not component)
    assert all(r.inputs["location"] == "eastus" for r in result.resources if "location" in r.inputs)


def test_scale_set_is_one_infiniband_partition():
    vmss = one(plan_of(TRAIN), VMSS).inputs
    assert vmss["orchestrationMode"] == "Uniform"
    assert vmss["singlePlacementGroup"] is True
    assert vmss["platformFaultDomainCount"] == 1
    assert vmss["overprovision"] is False
    assert vmss["sku"] == {"name": "Standard_ND96isr_H100_v5", "tier": "Standard", "capacity": 2}
    assert vmss["upgradePolicy"] == {"mode": "Manual"}
    assert vmss["identity"] == {"type": "SystemAssigned"}
    nic = vmss["virtualMachineProfile"]["networkProfile"]["networkInterfaceConfigurations"]
    assert len(nic) == 1 and nic[0]["enableAcceleratedNetworking"] is True


def test_sizes_without_infiniband_span_placement_groups():
    vmss = one(plan_of(DEV), VMSS).inputs
    assert vmss["singlePlacementGroup"] is False
    assert (vmss["platformFaultDomainCount"], vmss["overprovision"]) == (1, False)


def test_spot_priority_eviction_and_uncapped_max_price():
    vm = profile(plan_of(TRAIN))
    assert (vm["priority"], vm["evictionPolicy"], vm["billingProfile"]) == ("Spot", "Delete", {"maxPrice": -1})


def test_spot_max_price_comes_from_the_spec():
    vm = profile(plan_of(FULL))
    assert (vm["priority"], vm["evictionPolicy"], vm["billingProfile"]) == ("Spot", "Delete", {"maxPrice": 40.5})


def test_on_demand_nodes_are_regular_priority():
    vm = profile(plan_of(DEV))
    assert vm["priority"] == "Regular"
    assert "evictionPolicy" not in vm and "billingProfile" not in vm


def test_mixed_market_without_infiniband_uses_two_scale_sets():
    result = plan_of(MIXED)
    sets = {r.name: r.inputs for r in of_type(result, VMSS)}
    assert set(sets) == {"gpufleet-nodes", "gpufleet-spot-nodes"}
    assert sets["gpufleet-nodes"]["sku"]["capacity"] == 2
    assert sets["gpufleet-nodes"]["virtualMachineProfile"]["priority"] == "Regular"
    assert sets["gpufleet-spot-nodes"]["sku"]["capacity"] == 3
    assert sets["gpufleet-spot-nodes"]["virtualMachineProfile"]["priority"] == "Spot"
    assert result.outputs["scale_sets"] == ["gpufleet-nodes", "gpufleet-spot-nodes"]


@pytest.mark.parametrize("spec, expected", [
    (TRAIN, {"publisher": "microsoft-dsvm", "offer": "ubuntu-hpc", "sku": "2204", "version": "resolved-at-pulumi-up"}),
    (FULL, {"publisher": "microsoft-dsvm", "offer": "ubuntu-hpc", "sku": "2404", "version": "24.04.2025010101"}),
])
def test_image_and_encrypted_premium_os_disk(spec, expected):
    storage = profile(plan_of(spec))["storageProfile"]
    assert storage["imageReference"] == expected
    assert storage["osDisk"] == {"createOption": "FromImage", "caching": "ReadWrite", "osType": "Linux",
                                 "diskSizeGB": 200, "managedDisk": {"storageAccountType": "Premium_LRS"}}


def test_ssh_keys_only_no_passwords():
    os_profile = profile(plan_of(TRAIN))["osProfile"]
    linux = os_profile["linuxConfiguration"]
    assert linux["disablePasswordAuthentication"] is True
    assert linux["ssh"]["publicKeys"] == [{"keyData": KEY, "path": "/home/azureuser/.ssh/authorized_keys"}]
    assert "adminPassword" not in os_profile and os_profile["adminUsername"] == "azureuser"


def test_no_public_ip_on_nodes_and_egress_through_nat():
    result = plan_of(TRAIN)
    nic = profile(result)["networkProfile"]["networkInterfaceConfigurations"][0]
    assert all("publicIPAddressConfiguration" not in ip for ip in nic["ipConfigurations"])
    assert [ip["subnet"] for ip in nic["ipConfigurations"]] == [{"id": "gpufleet-subnet-id"}]
    public_ips = of_type(result, "azure-native:network:PublicIPAddress")
    assert [p.name for p in public_ips] == ["gpufleet-nat-ip"]
    assert one(result, "azure-native:network:NatGateway").inputs["publicIpAddresses"] == [{"id": "gpufleet-nat-ip-id"}]
    subnet = one(result, "azure-native:network:Subnet").inputs
    assert subnet["natGateway"] == {"id": "gpufleet-nat-id"} and subnet["defaultOutboundAccess"] is False
    assert subnet["networkSecurityGroup"] == {"id": "gpufleet-nsg-id"}
    assert nic["networkSecurityGroup"] == {"id": "gpufleet-nsg-id"}


def rules_of(result) -> dict:
    return {r["name"]: r for r in one(result, NSG).inputs["securityRules"]}


def test_nsg_keeps_ssh_closed_without_cidrs_and_denies_the_rest():
    rules = rules_of(plan_of(TRAIN))
    assert set(rules) == {"allow-cluster", "allow-exporters-vnet", "deny-all-inbound"}
    cluster = rules["allow-cluster"]
    assert cluster["sourceApplicationSecurityGroups"] == [{"id": "gpufleet-asg-id"}]
    assert cluster["destinationApplicationSecurityGroups"] == [{"id": "gpufleet-asg-id"}]
    assert (cluster["protocol"], cluster["destinationPortRange"], cluster["access"]) == ("*", "*", "Allow")
    exporters = rules["allow-exporters-vnet"]
    assert exporters["sourceAddressPrefix"] == "VirtualNetwork"
    assert exporters["destinationPortRanges"] == ["9100", "9400"]
    deny = rules["deny-all-inbound"]
    assert (deny["access"], deny["direction"], deny["priority"], deny["sourceAddressPrefix"]) == (
        "Deny", "Inbound", 4096, "*")
    allows = [r for r in rules.values() if r["access"] == "Allow"]
    assert all(r.get("sourceAddressPrefix") not in ("*", "Internet", "0.0.0.0/0") for r in allows)
    assert all(r["priority"] < deny["priority"] for r in allows)


def test_nsg_opens_ssh_and_exporters_only_to_the_given_cidrs():
    rules = rules_of(plan_of(FULL))
    ssh = rules["allow-ssh"]
    assert (ssh["sourceAddressPrefixes"], ssh["destinationPortRange"], ssh["protocol"]) == (
        ["203.0.113.0/24"], "22", "Tcp")
    monitoring = rules["allow-exporters-monitoring"]
    assert (monitoring["sourceAddressPrefixes"], monitoring["destinationPortRange"]) == (["198.51.100.0/24"], "9400")
    assert rules["allow-exporters-vnet"]["destinationPortRange"] == "9400"


def test_vnet_range_and_node_subnet():
    result = plan_of(FULL)
    vnet = one(result, "azure-native:network:VirtualNetwork").inputs
    assert vnet["addressSpace"] == {"addressPrefixes": ["10.20.0.0/20"]}
    assert one(result, "azure-native:network:Subnet").inputs["addressPrefix"] == "10.20.0.0/21"


def test_custom_data_is_base64_gzip_cloud_config_within_64kb():
    encoded = profile(plan_of(TRAIN))["osProfile"]["customData"]
    raw = base64.b64decode(encoded, validate=True)
    assert len(raw) <= 65535 and raw[:2] == b"\x1f\x8b"  # gzip, which cloud-init inflates on any datasource
    assert gzip.decompress(raw).decode().startswith("#cloud-config")


def test_zone_pins_the_scale_set_and_the_nat_gateway():
    result = plan_of(FULL)
    assert one(result, VMSS).inputs["zones"] == ["2"]
    assert one(result, "azure-native:network:NatGateway").inputs["zones"] == ["2"]
    assert one(result, "azure-native:network:PublicIPAddress").inputs["zones"] == ["2"]


def test_proximity_placement_group_only_when_asked():
    assert of_type(plan_of(TRAIN), "azure-native:compute:ProximityPlacementGroup") == []
    result = plan_of(FULL)
    ppg = one(result, "azure-native:compute:ProximityPlacementGroup")
    assert ppg.name == "gpufleet-ppg" and ppg.inputs["proximityPlacementGroupType"] == "Standard"
    assert one(result, VMSS).inputs["proximityPlacementGroup"] == {"id": "gpufleet-ppg-id"}


def test_existing_subnet_creates_no_network_and_uses_its_resource_group():
    result = plan_of({**TRAIN, "network": {"existing_subnet_id": SUBNET_ID}})
    for token in ("azure-native:resources:ResourceGroup", "azure-native:network:VirtualNetwork",
                  "azure-native:network:NatGateway", "azure-native:network:PublicIPAddress",
                  "azure-native:network:Subnet"):
        assert of_type(result, token) == [], token
    vmss = one(result, VMSS).inputs
    assert vmss["resourceGroupName"] == "hpc-rg"
    ip = vmss["virtualMachineProfile"]["networkProfile"]["networkInterfaceConfigurations"][0]["ipConfigurations"][0]
    assert ip["subnet"] == {"id": SUBNET_ID}
    assert one(result, NSG).inputs["resourceGroupName"] == "hpc-rg"
    assert any("existing subnet" in w for w in result.outputs["warnings"])


@pytest.mark.parametrize("spec, small_nodes, large_nodes", [(TRAIN, 2, 100), (AUTO, 1, 2), (MIXED, 5, 1000)])
def test_resource_count_stays_flat_and_node_count_touches_only_capacity(spec, small_nodes, large_nodes):
    """InfiniBand: up to the most one placement group holds (a single ND node already gets one placement group, see
    test_builders, so growing from one changes nothing else either). Without InfiniBand: up to the most one scale set
    holds (1000, not 1024: Azure's limit, refused above). A single ND node with `fabric: auto` already boots with the
    InfiniBand node setup, so growing it changes neither customData nor the placement group."""
    small, big = plan_of({**spec, "nodes": small_nodes}), plan_of({**spec, "nodes": large_nodes})
    assert [r.name for r in small.resources] == [r.name for r in big.resources]
    for a, b in zip(small.resources, big.resources, strict=True):
        if a.type == VMSS:
            assert {**a.inputs, "sku": None} == {**b.inputs, "sku": None}, a.name
            assert {**a.inputs["sku"], "capacity": None} == {**b.inputs["sku"], "capacity": None}
        else:
            assert a.inputs == b.inputs, a.name


def test_every_taggable_resource_carries_provenance_tags():
    for resource in plan_of(FULL).resources:
        if resource.type.startswith("azure-native:"):
            tags = resource.inputs.get("tags")
            if resource.type == "azure-native:network:Subnet" or resource.type.startswith("azure-native:authorization:"):
                assert tags is None  # subnets, role definitions and role assignments take no tags
                continue
            assert tags["gpufleet-component"] == "AzureGpuCluster" and tags["team"] == "research", resource.name


def test_plans_are_byte_identical():
    assert plan_json(plan_spec(TRAIN)) == plan_json(plan_of(TRAIN))


def test_outputs_tell_the_user_what_comes_next():
    outputs = plan_of(TRAIN).outputs
    assert outputs["instance_type"] == "Standard_ND96isr_H100_v5" and outputs["gpus_total"] == 16
    assert outputs["fabric"] == "infiniband" and outputs["single_placement_group"] is True
    assert outputs["infiniband_gbps_per_node"] == 3200
    assert outputs["list_nodes"].startswith("az vmss nic list --resource-group gpufleet-rg --vmss-name gpufleet-nodes")
    assert outputs["hostfile"].endswith("| sed 's/$/ slots=8/' > hostfile")
    assert "az network bastion ssh" in outputs["connect"] and "az vmss list-instances" in outputs["connect"]


def test_azure_train_stack_plans_and_says_the_spot_price_is_unknown():
    result = run_program("azure-train", read_stack_config("azure-train"))
    vmss = one(result, VMSS).inputs
    assert vmss["sku"] == {"name": "Standard_ND96isr_H100_v5", "tier": "Standard", "capacity": 2}
    assert vmss["singlePlacementGroup"] is True and vmss["virtualMachineProfile"]["priority"] == "Spot"
    assert result.outputs["estimated_usd_per_hour"] is None
    assert any("no spot price for Standard_ND96isr_H100_v5" in w for w in result.outputs["warnings"])


def test_azure_dev_stack_is_one_single_gpu_node_on_demand():
    result = plan_of(DEV)
    vmss = one(result, VMSS).inputs
    assert vmss["sku"]["capacity"] == 1 and vmss["virtualMachineProfile"]["priority"] == "Regular"
    assert result.outputs["gpus_per_node"] == 1 and result.outputs["estimated_usd_per_hour"] == pytest.approx(3.67)


@pytest.mark.parametrize("bad, message", [
    ({"nodes": 101}, "`nodes`: got 101; InfiniBand links (Standard_ND96isr_H100_v5) form only inside one placement group"),
    ({"nodes": 1001, "fabric": "tcp"}, "`nodes`: got 1001; one Azure scale set holds at most 1000 VMs"),
    ({"accelerator": {"instance_type": "Standard_NC24ads_A100_v4"}},
     "`fabric`: got 'infiniband'; Standard_NC24ads_A100_v4 has no INFINIBAND support"),
    ({"region": "brazilsouth"}, "`region`: got 'brazilsouth'; Standard_ND96isr_H100_v5 is not offered there"),
    ({"root_disk_gib": 5000}, "`root_disk_gib`: got 5000; Azure OS disks are at most 4095 GiB"),
    ({"market": {"type": "spot", "spot_max_price_per_hour": 40.123456}},
     "`market.spot_max_price_per_hour`: got 40.123456; Azure takes a max price with at most 5 decimal places"),
    ({"zone": "4"}, "`zone`: got '4'; expected an Azure zone number"),
    ({"access": {}}, "`access.ssh_public_key`: got None; required on azure"),
    ({"nodes": 4, "market": {"type": "mixed", "on_demand_base": 1}},
     "`market.type`: got 'mixed'; on azure a mixed market needs two scale sets"),
    ({"fabric": "auto", "nodes": 4, "market": {"type": "mixed", "on_demand_base": 1}},
     "InfiniBand links (Standard_ND96isr_H100_v5) do not cross scale sets"),
    ({"network": {"cidr": "172.16.0.0/20"}}, "`network.cidr`: got '172.16.0.0/20'; overlaps 172.16.0.0/16"),
    ({"network": {"cidr": "172.0.0.0/8"}}, "`network.cidr`: got '172.0.0.0/8'; overlaps 172.16.0.0/16"),
    ({"network": {"cidr": "10.0.0.0/29"}, "nodes": 1}, "`network.cidr`: got '10.0.0.0/29'; too small"),
    ({"network": {"cidr": "10.0.0.0/26"}, "nodes": 40}, "fewer than `nodes` (40)"),
    ({"network": {"existing_subnet_id": "subnet-0123"}}, "`network.existing_subnet_id`: got 'subnet-0123'"),
    ({"image": {"id": "ami-0123"}}, "`image.id`: got 'ami-0123'; expected a marketplace URN"),
    ({"tags": {"cost/center": "x"}}, "`tags.cost/center`: got 'cost/center'; Azure tag names may not contain"),
    ({"market": {"type": "on-demand", "capacity_reservation_id": "cr-1"}},
     "`market.capacity_reservation_id`: got 'cr-1'; not supported on azure yet"),
    ({"accelerator": {"instance_type": "Standard_NV36ads_A10_v5"}, "fabric": "auto"},
     "`accelerator`: got 'Standard_NV36ads_A10_v5'; this size needs NVIDIA's GRID (vGPU) driver, which gpufleet "
     "does not install, nor does the HPC image; pick an NC or ND size with NVIDIA's datacenter driver"),
    ({"accelerator": {"instance_type": "Standard_ND96isr_MI300X_v5"}, "region": "northeurope"},
     "`accelerator`: got 'Standard_ND96isr_MI300X_v5'; this size carries AMD GPUs (ROCm driver), which gpufleet's "
     "node software does not install, nor does the HPC image; pick an NC or ND size with NVIDIA's datacenter driver"),
    ({"node": {"nccl": {"env": {"NCCL_BIG": INCOMPRESSIBLE}}}},
     "gzip-compressed bytes of azure user data'; azure allows at most 65535 gzip-compressed bytes"),
])
def test_bad_input_is_refused_before_anything_is_declared(bad, message):
    text = refusal({**TRAIN, **bad})
    assert message in text
    assert text.count("problem(s)") == 1, text  # one message, never a SpecError wrapped in another


def test_every_problem_is_reported_at_once():
    bad = {**TRAIN, "access": {}, "network": {"cidr": "172.16.0.0/16"}, "region": "brazilsouth"}
    with pytest.raises(pulumi.RunError) as caught:
        run_program("test", {"gpufleet:cluster": bad})
    text = str(caught.value)
    assert "3 problem(s)" in text
    assert "`access.ssh_public_key`" in text and "`network.cidr`" in text and "`region`" in text


def test_unhealthy_nodes_are_replaced_from_their_own_health_endpoint():
    vmss = one(plan_of(TRAIN), VMSS).inputs
    [extension] = vmss["virtualMachineProfile"]["extensionProfile"]["extensions"]
    assert (extension["publisher"], extension["type"], extension["typeHandlerVersion"]) == (
        "Microsoft.ManagedServices", "ApplicationHealthLinux", "2.0")
    assert extension["settings"] == {"protocol": "http", "port": 9408, "requestPath": "/health",
                                     "intervalInSeconds": 30, "numberOfProbes": 4}
    assert vmss["automaticRepairsPolicy"] == {"enabled": True, "gracePeriod": "PT60M", "repairAction": "Replace"}


def test_spot_scale_sets_restore_evicted_nodes_and_on_demand_ones_need_not():
    assert one(plan_of(TRAIN), VMSS).inputs["spotRestorePolicy"] == {"enabled": True, "restoreTimeout": "PT1H"}
    assert "spotRestorePolicy" not in one(plan_of(DEV), VMSS).inputs
    sets = {r.name: r.inputs for r in of_type(plan_of(MIXED), VMSS)}
    assert "spotRestorePolicy" in sets["gpufleet-spot-nodes"] and "spotRestorePolicy" not in sets["gpufleet-nodes"]


def test_terminate_notices_are_enabled_on_every_market_for_the_watcher_to_acknowledge():
    """On-demand training nodes drain on scale-in, delete and repair too: the watcher runs on every node."""
    for spec in (TRAIN, DEV):
        assert profile(plan_of(spec))["scheduledEventsProfile"] == {
            "terminateNotificationProfile": {"enable": True, "notBeforeTimeout": "PT5M"}}


def test_rollout_makes_the_upgrade_policy_rolling_in_batches():
    vmss = one(plan_of({**TRAIN, "nodes": 4, "rollout": {"enabled": True, "max_unavailable": 1}}), VMSS).inputs
    assert vmss["upgradePolicy"]["mode"] == "Rolling"
    assert vmss["upgradePolicy"]["rollingUpgradePolicy"]["maxBatchInstancePercent"] == 25


def test_a_floating_marketplace_image_is_named_in_a_warning_only_with_track_latest():
    assert any("image is `latest`" in w for w in plan_of({**TRAIN, "image": {"track": "latest"}}).outputs["warnings"])
    assert not any("image is `latest`" in w for w in plan_of(TRAIN).outputs["warnings"])
    assert not any("image is `latest`" in w for w in plan_of(FULL).outputs["warnings"])
