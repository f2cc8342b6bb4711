"""The small private Linux VM both the monitoring server and the Slurm controller are: one shape, so a hardening
of one (Trusted Launch, disk encryption, no public address, key-only SSH) is the other's too.

- its own NIC on the cluster subnet, carrying the cluster's NSG and the VM's application security group, no public
  IP (reached through Azure Bastion);
- a separate managed disk (encrypted at rest with platform keys) on LUN 0, detached, not deleted, when the VM goes;
- a Key Vault with RBAC authorisation for its secrets, each granted as `Key Vault Secrets User` on the secret only;
- Trusted Launch (Secure Boot, vTPM), a system-assigned identity, Ubuntu 24.04 with SSH keys only.
"""

from __future__ import annotations

import uuid
from typing import Any

import pulumi
import pulumi_azure_native as azure_native

from .nodes import ADMIN_USER
from .tagging import Tagger

compute, network, authorization = azure_native.compute, azure_native.network, azure_native.authorization

UBUNTU = {"publisher": "Canonical", "offer": "ubuntu-24_04-lts", "sku": "server", "version": "latest"}
DATA_DEVICE = "/dev/disk/azure/scsi1/lun0"
KEY_VAULT_SECRETS_USER = "4633458b-17de-408a-b874-0445c86b69e6"
ID_NAMESPACE = uuid.UUID("6f1c5e2a-0c1d-4a59-9d0e-6a1f0b3c9e11")  # gpufleet's own: deterministic role GUIDs


def stable_guid(*parts: str) -> str:
    return str(uuid.uuid5(ID_NAMESPACE, "/".join(parts)))


def private_nic(resource_name: str, tag_role: str, region: str, resource_group: pulumi.Input[str],
                subnet_id: pulumi.Input[str], nsg_id: pulumi.Input[str], asg_id: pulumi.Input[str], tag: Tagger,
                opts: pulumi.ResourceOptions) -> azure_native.network.NetworkInterface:
    return network.NetworkInterface(
        resource_name, resource_group_name=resource_group, location=region, tags=tag(tag_role),
        network_security_group=network.NetworkSecurityGroupArgs(id=nsg_id),
        ip_configurations=[network.NetworkInterfaceIPConfigurationArgs(
            name="private", primary=True, subnet=network.SubnetArgs(id=subnet_id),
            private_ip_allocation_method="Dynamic",
            application_security_groups=[network.ApplicationSecurityGroupArgs(id=asg_id)])], opts=opts)


def data_disk(resource_name: str, tag_role: str, size_gib: int, region: str, resource_group: pulumi.Input[str],
              tag: Tagger, opts: pulumi.ResourceOptions) -> azure_native.compute.Disk:
    return compute.Disk(resource_name, resource_group_name=resource_group, location=region, disk_size_gb=size_gib,
                        sku=compute.DiskSkuArgs(name="StandardSSD_LRS"),
                        creation_data=compute.CreationDataArgs(create_option="Empty"),
                        encryption=compute.EncryptionArgs(type="EncryptionAtRestWithPlatformKey"),
                        tags=tag(tag_role), opts=opts)


def rbac_vault(resource_name: str, tag_role: str, vault_name: pulumi.Input[str], tenant_id: pulumi.Input[str],
               region: str, resource_group: pulumi.Input[str], tag: Tagger,
               opts: pulumi.ResourceOptions) -> azure_native.keyvault.Vault:
    return azure_native.keyvault.Vault(
        resource_name, resource_group_name=resource_group, location=region, tags=tag(tag_role), vault_name=vault_name,
        properties=azure_native.keyvault.VaultPropertiesArgs(
            tenant_id=tenant_id, sku=azure_native.keyvault.SkuArgs(family="A", name="standard"),
            enable_rbac_authorization=True, enable_soft_delete=True, soft_delete_retention_in_days=7),
        opts=opts)


def grant_secret(resource_name: str, secret_id: pulumi.Input[str], principal: pulumi.Input[str],
                 role_assignment_name: str, subscription_id: pulumi.Input[str],
                 opts: pulumi.ResourceOptions) -> azure_native.authorization.RoleAssignment:
    """`Key Vault Secrets User` on one secret (not the vault, not the subscription)."""
    return authorization.RoleAssignment(
        resource_name, scope=secret_id, principal_id=principal, principal_type="ServicePrincipal",
        role_assignment_name=role_assignment_name,
        role_definition_id=pulumi.Output.concat("/subscriptions/", subscription_id,
                                                "/providers/Microsoft.Authorization/roleDefinitions/",
                                                KEY_VAULT_SECRETS_USER), opts=opts)


def private_vm(resource_name: str, tags: pulumi.Input[dict[str, str]], vm_size: str, computer_name: str,
               custom_data: pulumi.Input[str], image_reference: dict[str, Any], nic_id: pulumi.Input[str],
               data_disk_id: pulumi.Input[str], ssh_public_key: str | None, region: str,
               resource_group: pulumi.Input[str], opts: pulumi.ResourceOptions) -> azure_native.compute.VirtualMachine:
    return compute.VirtualMachine(
        resource_name, resource_group_name=resource_group, location=region, tags=tags,
        hardware_profile=compute.HardwareProfileArgs(vm_size=vm_size),
        identity=compute.VirtualMachineIdentityArgs(type="SystemAssigned"),
        security_profile=compute.SecurityProfileArgs(security_type="TrustedLaunch", uefi_settings=compute.UefiSettingsArgs(
            secure_boot_enabled=True, v_tpm_enabled=True)),
        storage_profile=compute.StorageProfileArgs(
            image_reference=compute.ImageReferenceArgs(**image_reference),
            os_disk=compute.OSDiskArgs(create_option="FromImage", delete_option="Delete", disk_size_gb=30,
                                       managed_disk=compute.ManagedDiskParametersArgs(
                                           storage_account_type="StandardSSD_LRS")),
            data_disks=[compute.DataDiskArgs(lun=0, create_option="Attach", delete_option="Detach",
                                             managed_disk=compute.ManagedDiskParametersArgs(id=data_disk_id))]),
        os_profile=compute.OSProfileArgs(
            computer_name=computer_name, admin_username=ADMIN_USER, custom_data=custom_data,
            linux_configuration=compute.LinuxConfigurationArgs(
                disable_password_authentication=True, provision_vm_agent=True,
                ssh=compute.SshConfigurationArgs(public_keys=[compute.SshPublicKeyArgs(
                    path=f"/home/{ADMIN_USER}/.ssh/authorized_keys", key_data=ssh_public_key)]))),
        network_profile=compute.NetworkProfileArgs(network_interfaces=[
            compute.NetworkInterfaceReferenceArgs(id=nic_id, primary=True)]),
        opts=opts)
