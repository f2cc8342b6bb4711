"""Azure: Managed Lustre / Azure Files NFS in their own subnet, scale-set identity roles, existing resource group."""

from __future__ import annotations

from gpufleet.plan.userdata import decode_user_data
from tests.conftest import cached_plan, of_type, one, refusal

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGdwdWZsZWV0LWV4YW1wbGUtcmVwbGFjZS1tZS0wMDAw user@host"
ND = {"cloud": "azure", "region": "eastus", "zone": "1", "nodes": 2,
      "accelerator": {"instance_type": "Standard_ND96isr_H100_v5"}, "access": {"ssh_public_key": KEY}}
ACCOUNT = "/subscriptions/0/resourceGroups/data/providers/Microsoft.Storage/storageAccounts/datasets"
LUSTRE = {**ND, "storage": {"shared": {"kind": "lustre", "capacity_gib": 16384, "throughput": 250}}}
# One plan each: NFS in an existing resource group; roles on a mixed tcp cluster mounting an existing AMLFS.
NFS = {**ND, "storage": {"shared": {"kind": "nfs", "capacity_gib": 1024}},
       "network": {"existing_resource_group": "team-rg"}}
AMLFS_ID = "/subscriptions/0/resourceGroups/fs/providers/Microsoft.StorageCache/amlFilesystems/lfs"
ROLES = {**ND, "fabric": "tcp", "market": {"type": "mixed", "on_demand_base": 1},
         "access": {"ssh_public_key": KEY, "role_assignments": [{"role": "Storage Blob Data Reader", "scope": ACCOUNT}],
                    "container_registry_read": True},
         "storage": {"shared": {"kind": "lustre", "existing_id": AMLFS_ID}},
         "monitoring": {"server": False}}  # the server's own role assignments are tested with it


def custom_data(result) -> str:
    scale_set = of_type(result, "azure-native:compute:VirtualMachineScaleSet")[0]
    return decode_user_data(scale_set.inputs["virtualMachineProfile"]["osProfile"]["customData"])


def nsg_rules(result, name: str) -> dict:
    nsg = next(r for r in of_type(result, "azure-native:network:NetworkSecurityGroup") if r.name == name)
    return {rule["name"]: rule for rule in nsg.inputs["securityRules"]}


def test_lustre_is_amlfs_in_its_own_subnet_and_zone():
    result = cached_plan(LUSTRE)
    amlfs = one(result, "azure-native:storagecache:AmlFilesystem").inputs
    assert amlfs["sku"] == {"name": "AMLFS-Durable-Premium-250"} and amlfs["storageCapacityTiB"] == 16
    assert amlfs["zones"] == ["1"] and amlfs["filesystemSubnet"] == "gpufleet-fs-subnet-id"
    subnet = next(r.inputs for r in of_type(result, "azure-native:network:Subnet") if r.name == "gpufleet-fs-subnet")
    assert subnet["addressPrefix"] == "10.0.128.0/24" and subnet["natGateway"] == {"id": "gpufleet-nat-id"}
    text = custom_data(result)
    assert "GPUFLEET_SHARED_SOURCE='10.0.128.4@tcp:/lustrefs'" in text


def test_lustre_ports_only_between_the_node_subnet_and_the_filesystem_subnet():
    result = cached_plan(LUSTRE)
    fs = nsg_rules(result, "gpufleet-fs-nsg")
    assert fs["allow-clients"]["destinationPortRanges"] == ["988", "1019-1023"]
    assert fs["allow-clients"]["sourceAddressPrefixes"] == ["10.0.0.0/17", "10.0.128.0/24"]
    assert fs["deny-vnet-inbound"]["access"] == "Deny"
    nodes = nsg_rules(result, "gpufleet-nsg")
    assert nodes["allow-lustre-from-filesystem"]["sourceAddressPrefix"] == "10.0.128.0/24"
    assert set(nodes) - set(nsg_rules(cached_plan(ND), "gpufleet-nsg")) == {"allow-lustre-from-filesystem"}


def test_nfs_is_a_private_azure_files_share_with_2049_only():
    result = cached_plan(NFS)
    account = one(result, "azure-native:storage:StorageAccount").inputs
    assert (account["kind"], account["publicNetworkAccess"], account["enableHttpsTrafficOnly"]) == (
        "FileStorage", "Disabled", False)
    share = one(result, "azure-native:storage:FileShare").inputs
    assert share["enabledProtocols"] == "NFS" and share["shareQuota"] == 1024
    assert one(result, "azure-native:privatedns:PrivateZone").inputs["privateZoneName"] == "privatelink.file.core.windows.net"
    assert nsg_rules(result, "gpufleet-fs-nsg")["allow-clients"]["destinationPortRanges"] == ["2049"]
    assert "allow-lustre-from-filesystem" not in nsg_rules(result, "gpufleet-nsg")
    assert f"GPUFLEET_SHARED_SOURCE='{account['accountName']}.file.core.windows.net:/{account['accountName']}/shared'" \
        in custom_data(result)


def test_amlfs_capacity_steps_per_sku():
    assert "multiple of 8,192 GiB" in refusal({**ND, "storage": {"shared": {"kind": "lustre", "capacity_gib": 10000,
                                                                             "throughput": 250}}})


def test_role_assignments_for_each_scale_set_identity_and_admin_refusal():
    result = cached_plan(ROLES)
    assignments = of_type(result, "azure-native:authorization:RoleAssignment")
    scale_sets = of_type(result, "azure-native:compute:VirtualMachineScaleSet")
    assert len(scale_sets) == 2 and len(assignments) == 2 * len(scale_sets)
    reader = [a.inputs for a in assignments if a.inputs["scope"] == ACCOUNT]
    assert reader[0]["roleDefinitionId"].endswith("/roleDefinitions/2a2b9908-6ea1-4ae2-8e65-a410df84e7d1")
    assert reader[0]["principalType"] == "ServicePrincipal"
    assert result.outputs["node_role_assignments"][1] == "AcrPull on the subscription"
    owner = {**ND, "access": {"ssh_public_key": KEY, "role_assignments": [{"role": "Owner", "scope": ACCOUNT}]}}
    assert "access.allow_admin: true" in refusal(owner)


def test_existing_resource_group_creates_no_group():
    result = cached_plan(NFS)
    assert not of_type(result, "azure-native:resources:ResourceGroup")
    assert {r.inputs["resourceGroupName"] for r in result.resources if "resourceGroupName" in r.inputs} == {"team-rg"}


def test_new_filesystem_with_an_existing_subnet_is_refused():
    spec = {**NFS, "network": {"existing_subnet_id": "/subscriptions/0/resourceGroups/net/providers/"
                                                      "Microsoft.Network/virtualNetworks/v/subnets/gpu"}}
    assert "cannot place a new filesystem subnet" in refusal(spec)


def test_existing_amlfs_is_looked_up_and_nothing_is_created():
    result = cached_plan(ROLES)
    assert not of_type(result, "azure-native:storagecache:AmlFilesystem")
    assert not of_type(result, "azure-native:network:Subnet") or all(
        r.name != "gpufleet-fs-subnet" for r in of_type(result, "azure-native:network:Subnet"))
    assert "GPUFLEET_SHARED_SOURCE='10.1.0.4@tcp:/lustrefs'" in custom_data(result)
