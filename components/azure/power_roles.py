"""The Slurm controller's least privilege over an Azure cluster's elastic scale sets (`elastic.py` says why these
actions and these scopes): a custom role with the scale-set actions the power programs call, assigned on each elastic
scale set only, a read-only role for the asynchronous operations they follow, on the resource group, and the
network joins a scale-set VM's write is checked for, on the subnet, NSG and ASG only (UNVERIFIED on a live
subscription: which joins a capacity PATCH and an instance PUT are checked for). Role and
assignment names are GUIDs derived from the stack and component, so they never change between runs."""

from __future__ import annotations

from collections.abc import Sequence

import pulumi
import pulumi_azure_native as azure_native

from .private_vm import stable_guid

authorization = azure_native.authorization
SCALE_SET_ACTIONS = (
    "Microsoft.Compute/virtualMachineScaleSets/read",
    "Microsoft.Compute/virtualMachineScaleSets/write",
    "Microsoft.Compute/virtualMachineScaleSets/delete/action",
    "Microsoft.Compute/virtualMachineScaleSets/virtualMachines/read",
    "Microsoft.Compute/virtualMachineScaleSets/virtualMachines/write",
)
"""What `cloud_init/power/azure.py` calls on a scale set: GET it, PATCH its capacity, POST delete with instanceIds,
list and GET its instances (with `$expand=userData`), PUT an instance's user data."""
OPERATION_ACTIONS = ("Microsoft.Compute/locations/operations/read",)
"""The `Azure-AsyncOperation` status the launch follows (read-only)."""
JOIN_ACTIONS = ("Microsoft.Network/virtualNetworks/subnets/join/action",
                "Microsoft.Network/networkSecurityGroups/join/action",
                "Microsoft.Network/applicationSecurityGroups/joinIpConfiguration/action")
"""Azure Resource Manager's linked access check: a write on a scale-set VM also checks the caller's right to join the
network resources its model references (kubernetes-sigs/cloud-provider-azure#1999: an instance update refused with
LinkedAuthorizationFailed for a load balancer pool the VM references). Assigned on the cluster's subnet, NSG and the
nodes' application security group only; each scope grants only the action that applies to it."""


def grant_power_permissions(name: str, stack: str, principal: pulumi.Input[str], subscription: pulumi.Input[str],
                            resource_group: pulumi.Input[str], scale_sets: Sequence[tuple[str, pulumi.Input[str]]],
                            network_ids: Sequence[pulumi.Input[str]], opts: pulumi.ResourceOptions) -> None:
    """Children `{name}-slurm-power-role`, `-ops-role`, `-join-role`, `-grant-<key>` (one per scale set: `scale_sets`
    holds (key, id), the key naming the scale set's target, so another target's grant is never renamed),
    `-ops-grant` and `-join-<i>` (the subnet, the NSG, the nodes' ASG: `network_ids`, in that order)."""
    role = f"{name}-slurm-power"
    group_id = pulumi.Output.concat("/subscriptions/", subscription, "/resourceGroups/", resource_group)
    writer = _role(f"{role}-role", stack, name, "scale sets", SCALE_SET_ACTIONS, group_id, [group_id], opts)
    reader = _role(f"{role}-ops-role", stack, name, "operations", OPERATION_ACTIONS, group_id, [group_id], opts)
    # An existing subnet may live in another resource group: the join role must be assignable there too.
    join_scopes = pulumi.Output.all(group_id, *network_ids).apply(
        lambda ids: list(dict.fromkeys([ids[0], *filter(None, (resource_group_of(i) for i in ids[1:]))])))
    joiner = _role(f"{role}-join-role", stack, name, "network joins", JOIN_ACTIONS, group_id,
                   join_scopes, opts)
    for key, scale_set in scale_sets:
        _assign(f"{role}-grant-{key}", writer, scale_set, principal, stack, name, "one elastic scale set", opts)
    _assign(f"{role}-ops-grant", reader, group_id, principal, stack, name, "operation status, read-only", opts)
    for index, network_id in enumerate(network_ids):
        _assign(f"{role}-join-{index}", joiner, network_id, principal, stack, name, "the nodes' network", opts)


def resource_group_of(resource_id: str) -> str:
    """`/subscriptions/S/resourceGroups/G` of a resource id ("" when it has no resource group part)."""
    parts = resource_id.split("/")
    return "/".join(parts[:5]) if len(parts) >= 5 and parts[3].lower() == "resourcegroups" else ""


def _role(resource_name: str, stack: str, name: str, what: str, actions: Sequence[str], scope: pulumi.Output[str],
          assignable: pulumi.Input[Sequence[pulumi.Input[str]]],
          opts: pulumi.ResourceOptions) -> azure_native.authorization.RoleDefinition:
    """A custom role defined in the cluster's resource group, assignable there (and where the subnet lives)."""
    return authorization.RoleDefinition(
        resource_name, role_definition_id=stable_guid(stack, name, resource_name),
        role_name=f"gpufleet {stack} {name} Slurm power programs: {what}", role_type="CustomRole",
        description=f"What gpufleet's Slurm power programs of {name} ({stack}) call on its elastic {what}",
        permissions=[authorization.PermissionArgs(actions=list(actions))], assignable_scopes=assignable,
        scope=scope, opts=opts)


def _assign(resource_name: str, role: azure_native.authorization.RoleDefinition, scope: pulumi.Input[str],
            principal: pulumi.Input[str], stack: str, name: str, what: str, opts: pulumi.ResourceOptions) -> None:
    authorization.RoleAssignment(
        resource_name, scope=scope, principal_id=principal, principal_type="ServicePrincipal",
        role_assignment_name=stable_guid(stack, name, resource_name), role_definition_id=role.id,
        description=f"gpufleet {name} Slurm controller: {what}", opts=opts)
