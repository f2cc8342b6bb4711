"""The monitoring server on Azure: one small VM in the cluster subnet, no public IP, reached through Azure Bastion.

- identity: the VM's system-assigned identity gets one custom role on the cluster's resource group with only the
  reads Azure service discovery makes (VMs, scale sets, their VMs and NICs), and `Key Vault Secrets User` on each
  of its own secrets (not the vault, not the subscription).
- secrets: a Key Vault with RBAC authorisation holds each Pulumi secret; the setup script reads them at boot with
  an IMDS token for vault.azure.net.
- disk: a separate managed disk (encrypted at rest with platform keys) on LUN 0 for Prometheus' TSDB, detached, not
  deleted, when the VM goes.
- network: the NIC carries the cluster's NSG and its own application security group. The NSG already admits the
  exporters from the VNet, so the server scrapes with no new node rule; the one new rule admits SSH from
  `access.ssh_cidrs` (the Bastion subnet) to this ASG, for `az network bastion tunnel` port forwarding.
Children are named f"{name}-monitoring-{role}" (roles: asg, nic, data, sd-role, sd-access, vault, secret-<secret
role>, secret-<secret role>-access, server).
"""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

import pulumi
import pulumi_azure_native as azure_native

from gpufleet import cloud_init

from ..catalog.selector import Selection
from ..monitoring.outputs import monitoring_outputs, stack_dashboards
from ..monitoring.scrape import azure_jobs
from ..monitoring.secrets import MonitoringPlan, plan_monitoring
from ..monitoring.server.cloud_config import ServerSettings, server_user_data
from ..outputs import exporter_jobs
from .image_version import pinned_reference
from .nodes import ADMIN_USER
from .tagging import Tagger

__all__ = ["build_monitoring_asg", "build_monitoring_server", "plan_monitoring"]

compute, network, authorization = azure_native.compute, azure_native.network, azure_native.authorization

DEFAULT_VM_SIZE = "Standard_B2s"
UBUNTU = {"publisher": "Canonical", "offer": "ubuntu-24_04-lts", "sku": "server", "version": "latest"}
DATA_DEVICE = "/dev/disk/azure/scsi1/lun0"
DISCOVERY_ACTIONS = ["Microsoft.Compute/virtualMachines/read", "Microsoft.Network/networkInterfaces/read",
                     "Microsoft.Compute/virtualMachineScaleSets/read",
                     "Microsoft.Compute/virtualMachineScaleSets/virtualMachines/read",
                     "Microsoft.Compute/virtualMachineScaleSets/virtualMachines/networkInterfaces/read"]
KEY_VAULT_SECRETS_USER = "4633458b-17de-408a-b874-0445c86b69e6"
ID_NAMESPACE = uuid.UUID("6f1c5e2a-0c1d-4a59-9d0e-6a1f0b3c9e11")  # gpufleet's own: deterministic role GUIDs


def stable_guid(*parts: str) -> str:
    return str(uuid.uuid5(ID_NAMESPACE, "/".join(parts)))


def vault_name(subscription: str, resource_group: str, stack: str, name: str) -> str:
    """3-24 characters, globally unique: a hash of where the cluster lives."""
    return "gfm" + hashlib.sha256(f"{subscription}/{resource_group}/{stack}/{name}".encode()).hexdigest()[:20]


def build_monitoring_asg(name: str, region: str, resource_group: pulumi.Input[str], monitoring: MonitoringPlan,
                         tag: Tagger, opts: pulumi.ResourceOptions) -> pulumi.Output[str] | None:
    """The server's application security group (the NSG's SSH rule needs it first), or None when off."""
    if not monitoring.enabled:
        return None
    return network.ApplicationSecurityGroup(f"{name}-monitoring-asg", resource_group_name=resource_group,
                                            location=region, tags=tag("monitoring-asg"), opts=opts).id


def build_monitoring_server(name: str, selection: Selection, monitoring: MonitoringPlan,
                            resource_group: pulumi.Input[str], subnet_id: pulumi.Input[str],
                            nsg_id: pulumi.Input[str], asg_id: pulumi.Output[str] | None,
                            scale_sets: list[pulumi.Output[str]], tag: Tagger,
                            opts: pulumi.ResourceOptions) -> dict[str, Any]:
    """The server and its outputs when `monitoring.server` is on; the dashboards and rules outputs always."""
    outputs = monitoring_outputs(selection)
    if not monitoring.enabled or asg_id is None:
        return outputs
    spec, stack, role = selection.spec, pulumi.get_stack(), f"{name}-monitoring"
    client = authorization.get_client_config_output(opts=pulumi.InvokeOutputOptions(parent=opts.parent))
    scope = pulumi.Output.concat("/subscriptions/", client.subscription_id, "/resourceGroups/", resource_group)
    nic = network.NetworkInterface(
        f"{role}-nic", resource_group_name=resource_group, location=spec.region, tags=tag("monitoring-nic"),
        network_security_group=network.NetworkSecurityGroupArgs(id=nsg_id),
        ip_configurations=[network.NetworkInterfaceIPConfigurationArgs(
            name="private", primary=True, subnet=network.SubnetArgs(id=subnet_id),
            private_ip_allocation_method="Dynamic",
            application_security_groups=[network.ApplicationSecurityGroupArgs(id=asg_id)])], opts=opts)
    data = compute.Disk(f"{role}-data", resource_group_name=resource_group, location=spec.region,
                        disk_size_gb=spec.monitoring.data_disk_gib, sku=compute.DiskSkuArgs(name="StandardSSD_LRS"),
                        creation_data=compute.CreationDataArgs(create_option="Empty"),
                        encryption=compute.EncryptionArgs(type="EncryptionAtRestWithPlatformKey"),
                        tags=tag("monitoring-data"), opts=opts)
    vault = azure_native.keyvault.Vault(
        f"{role}-vault", resource_group_name=resource_group, location=spec.region, tags=tag("monitoring-vault"),
        vault_name=pulumi.Output.all(client.subscription_id, resource_group).apply(
            lambda values: vault_name(values[0], values[1], stack, name)),
        properties=azure_native.keyvault.VaultPropertiesArgs(
            tenant_id=client.tenant_id, sku=azure_native.keyvault.SkuArgs(family="A", name="standard"),
            enable_rbac_authorization=True, enable_soft_delete=True, soft_delete_retention_in_days=7),
        opts=opts)
    secrets = {secret_role: azure_native.keyvault.Secret(
        f"{role}-secret-{secret_role}", resource_group_name=resource_group, vault_name=vault.name,
        secret_name=f"gpufleet-{secret_role}", properties=azure_native.keyvault.SecretPropertiesArgs(value=value),
        tags=tag(f"monitoring-secret-{secret_role}"), opts=opts)
        for secret_role, value in sorted(monitoring.secrets.items())}
    refs = {secret_role: pulumi.Output.concat("https://", vault.name, ".vault.azure.net/secrets/gpufleet-",
                                              secret_role) for secret_role in secrets}
    jobs = pulumi.Output.all(client.subscription_id, resource_group, *scale_sets).apply(  # as the stack exports them
        lambda values: azure_jobs(values[0], values[1], list(values[2:]), exporter_jobs(spec)))
    custom_data = pulumi.Output.all(jobs, pulumi.Output.all(**refs) if refs else {}).apply(
        lambda values: cloud_init.encode_user_data(server_user_data(
            spec.monitoring, values[0], stack_dashboards(selection),
            ServerSettings("azure", DATA_DEVICE, dict(values[1]))), "azure"))
    server = compute.VirtualMachine(
        f"{role}-server", resource_group_name=resource_group, location=spec.region, tags=tag("monitoring"),
        hardware_profile=compute.HardwareProfileArgs(vm_size=spec.monitoring.instance_type or DEFAULT_VM_SIZE),
        identity=compute.VirtualMachineIdentityArgs(type="SystemAssigned"),
        security_profile=compute.SecurityProfileArgs(security_type="TrustedLaunch", uefi_settings=compute.UefiSettingsArgs(
            secure_boot_enabled=True, v_tpm_enabled=True)),
        storage_profile=compute.StorageProfileArgs(
            image_reference=compute.ImageReferenceArgs(**pinned_reference(
                UBUNTU, spec.region, "pinned", pulumi.InvokeOutputOptions(parent=opts.parent))),
            os_disk=compute.OSDiskArgs(create_option="FromImage", delete_option="Delete", disk_size_gb=30,
                                       managed_disk=compute.ManagedDiskParametersArgs(
                                           storage_account_type="StandardSSD_LRS")),
            data_disks=[compute.DataDiskArgs(lun=0, create_option="Attach", delete_option="Detach",
                                             managed_disk=compute.ManagedDiskParametersArgs(id=data.id))]),
        os_profile=compute.OSProfileArgs(
            computer_name=f"{stack}-{name}-monitoring"[:63], admin_username=ADMIN_USER, custom_data=custom_data,
            linux_configuration=compute.LinuxConfigurationArgs(
                disable_password_authentication=True, provision_vm_agent=True,
                ssh=compute.SshConfigurationArgs(public_keys=[compute.SshPublicKeyArgs(
                    path=f"/home/{ADMIN_USER}/.ssh/authorized_keys", key_data=spec.access.ssh_public_key)]))),
        network_profile=compute.NetworkProfileArgs(network_interfaces=[
            compute.NetworkInterfaceReferenceArgs(id=nic.id, primary=True)]),
        # The image version pinned when the server was created stays: a newer Ubuntu release found by a later `up`
        # must not replace a running server (its data disk keeps Prometheus' history either way).
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
            depends_on=list(secrets.values()), ignore_changes=["storageProfile.imageReference"])))
    principal = server.identity.apply(lambda identity: identity.principal_id if identity else None)
    discovery = authorization.RoleDefinition(
        f"{role}-sd-role", role_definition_id=stable_guid(stack, name, "monitoring-sd-role"), scope=scope,
        role_name=f"gpufleet {stack} {name} monitoring discovery", role_type="CustomRole",
        description="Reads what Prometheus' Azure service discovery lists: VMs, scale sets and their NICs",
        permissions=[authorization.PermissionArgs(actions=DISCOVERY_ACTIONS)], assignable_scopes=[scope], opts=opts)
    authorization.RoleAssignment(
        f"{role}-sd-access", role_assignment_name=stable_guid(stack, name, "monitoring-sd-access"), scope=scope,
        role_definition_id=discovery.id, principal_id=principal, principal_type="ServicePrincipal", opts=opts)
    for secret_role, secret in secrets.items():
        authorization.RoleAssignment(
            f"{role}-secret-{secret_role}-access", scope=secret.id, principal_id=principal,
            principal_type="ServicePrincipal",
            role_assignment_name=stable_guid(stack, name, f"monitoring-secret-{secret_role}-access"),
            role_definition_id=pulumi.Output.concat("/subscriptions/", client.subscription_id,
                                                    "/providers/Microsoft.Authorization/roleDefinitions/",
                                                    KEY_VAULT_SECRETS_USER), opts=opts)
    return {
        **outputs,
        "monitoring_server_id": server.id,
        "grafana_port_forward": pulumi.Output.concat(
            "az network bastion tunnel --name <bastion-name> --resource-group <bastion-resource-group> ",
            "--target-resource-id ", server.id, " --resource-port 22 --port 2222 & ",
            f"ssh -N -L 3000:localhost:3000 -p 2222 {ADMIN_USER}@127.0.0.1  # then open http://localhost:3000"),
    }

