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
from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_azure_native as azure_native

from gpufleet import cloud_init

from ..groups.plans import NodeGroupPlans
from ..monitoring.outputs import monitoring_outputs, stack_dashboards
from ..monitoring.scrape import azure_jobs, slurm_controller_job
from ..monitoring.secrets import MonitoringPlan, plan_monitoring
from ..monitoring.server.cloud_config import ServerSettings, server_user_data
from ..outputs import exporter_jobs
from .image_version import pinned_reference
from .nodes import ADMIN_USER
from .private_vm import (
    DATA_DEVICE,
    UBUNTU,
    data_disk,
    grant_secret,
    private_nic,
    private_vm,
    rbac_vault,
    stable_guid,
)
from .tagging import Tagger

__all__ = ["build_monitoring_asg", "build_monitoring_server", "plan_monitoring"]

network, authorization = azure_native.network, azure_native.authorization

DEFAULT_VM_SIZE = "Standard_B2s"
DISCOVERY_ACTIONS = ["Microsoft.Compute/virtualMachines/read", "Microsoft.Network/networkInterfaces/read",
                     "Microsoft.Compute/virtualMachineScaleSets/read",
                     "Microsoft.Compute/virtualMachineScaleSets/virtualMachines/read",
                     "Microsoft.Compute/virtualMachineScaleSets/virtualMachines/networkInterfaces/read"]

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


def build_monitoring_server(name: str, plans: NodeGroupPlans, monitoring: MonitoringPlan,
                            resource_group: pulumi.Input[str], subnet_id: pulumi.Input[str],
                            nsg_id: pulumi.Input[str], asg_id: pulumi.Output[str] | None,
                            scale_sets: list[pulumi.Output[str]], tag: Tagger,
                            opts: pulumi.ResourceOptions, slurm_address: pulumi.Input[str] | None = None,
                            scale_set_groups: Sequence[str | None] = ()) -> dict[str, Any]:
    """The server and its outputs when `monitoring.server` is on; the dashboards and rules outputs always.
    `slurm_address`: the Slurm controller's, scraped for Slurm metrics (the NSG admits this server's ASG only).
    `scale_set_groups`: each scale set's node group, for the `node_group` label (a cluster of node groups)."""
    outputs = monitoring_outputs(plans)
    if not monitoring.enabled or asg_id is None:
        return outputs
    spec, stack, role = plans.first.spec, pulumi.get_stack(), f"{name}-monitoring"
    client = authorization.get_client_config_output(opts=pulumi.InvokeOutputOptions(parent=opts.parent))
    scope = pulumi.Output.concat("/subscriptions/", client.subscription_id, "/resourceGroups/", resource_group)
    nic = private_nic(f"{role}-nic", "monitoring-nic", spec.region, resource_group, subnet_id, nsg_id, asg_id, tag, opts)
    data = data_disk(f"{role}-data", "monitoring-data", spec.monitoring.data_disk_gib, spec.region, resource_group, tag,
                     opts)
    vault = rbac_vault(f"{role}-vault", "monitoring-vault", pulumi.Output.all(client.subscription_id, resource_group).apply(
        lambda values: vault_name(values[0], values[1], stack, name)), client.tenant_id, spec.region, resource_group,
        tag, opts)
    secrets = {secret_role: azure_native.keyvault.Secret(
        f"{role}-secret-{secret_role}", resource_group_name=resource_group, vault_name=vault.name,
        secret_name=f"gpufleet-{secret_role}", properties=azure_native.keyvault.SecretPropertiesArgs(value=value),
        tags=tag(f"monitoring-secret-{secret_role}"), opts=opts)
        for secret_role, value in sorted(monitoring.secrets.items())}
    refs = {secret_role: pulumi.Output.concat("https://", vault.name, ".vault.azure.net/secrets/gpufleet-",
                                              secret_role) for secret_role in secrets}
    jobs = pulumi.Output.all(client.subscription_id, resource_group, *scale_sets).apply(  # as the stack exports them
        lambda values: azure_jobs(values[0], values[1], list(values[2:]), exporter_jobs(spec), scale_set_groups))
    if slurm_address is not None:
        elastic = any(plan.spec.nodes_range is not None for plan in plans.groups)  # then the elastic alerts load too
        jobs = pulumi.Output.all(jobs, slurm_address).apply(
            lambda values: [*values[0], slurm_controller_job(values[1], elastic)])
    custom_data = pulumi.Output.all(jobs, pulumi.Output.all(**refs) if refs else {}).apply(
        lambda values: cloud_init.encode_user_data(server_user_data(
            spec.monitoring, values[0], stack_dashboards(plans),
            ServerSettings("azure", DATA_DEVICE, dict(values[1]))), "azure"))
    server = private_vm(
        f"{role}-server", tag("monitoring"), spec.monitoring.instance_type or DEFAULT_VM_SIZE,
        f"{stack}-{name}-monitoring"[:63], custom_data,
        pinned_reference(UBUNTU, spec.region, "pinned", pulumi.InvokeOutputOptions(parent=opts.parent)), nic.id, data.id,
        spec.access.ssh_public_key, spec.region, resource_group,
        # The image version pinned when the server was created stays: a newer Ubuntu release found by a later `up`
        # must not replace a running server (its data disk keeps Prometheus' history either way).
        pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
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
        grant_secret(f"{role}-secret-{secret_role}-access", secret.id, principal,
                     stable_guid(stack, name, f"monitoring-secret-{secret_role}-access"), client.subscription_id, opts)
    return {
        **outputs,
        "monitoring_server_id": server.id,
        "grafana_port_forward": pulumi.Output.concat(
            "az network bastion tunnel --name <bastion-name> --resource-group <bastion-resource-group> ",
            "--target-resource-id ", server.id, " --resource-port 22 --port 2222 & ",
            f"ssh -N -L 3000:localhost:3000 -p 2222 {ADMIN_USER}@127.0.0.1  # then open http://localhost:3000"),
    }

