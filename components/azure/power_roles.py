"""The Slurm controller's least privilege over an Azure cluster's elastic scale sets (`elastic.py` says why these
actions and these scopes): a custom role with the scale-set actions the power programs call, assigned on each elastic
scale set only, and a read-only role for the asynchronous operations they follow, on the resource group. Role and
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

def grant_power_permissions(name: str, stack: str, principal: pulumi.Input[str], subscription: pulumi.Input[str],
                            resource_group: pulumi.Input[str], scale_set_ids: Sequence[pulumi.Input[str]],
                            opts: pulumi.ResourceOptions) -> None:
    """Children `{name}-slurm-power-role`, `-ops-role`, `-grant-<i>` (one per scale set) and `-ops-grant`."""
    role = f"{name}-slurm-power"
    group_id = pulumi.Output.concat("/subscriptions/", subscription, "/resourceGroups/", resource_group)
    writer = _role(f"{role}-role", stack, name, "scale sets", SCALE_SET_ACTIONS, group_id, opts)
    reader = _role(f"{role}-ops-role", stack, name, "operations", OPERATION_ACTIONS, group_id, opts)
    for index, scale_set in enumerate(scale_set_ids):
        _assign(f"{role}-grant-{index}", writer, scale_set, principal, stack, name, "one elastic scale set", opts)
    _assign(f"{role}-ops-grant", reader, group_id, principal, stack, name, "operation status, read-only", opts)


def _role(resource_name: str, stack: str, name: str, what: str, actions: Sequence[str], group_id: pulumi.Output[str],
          opts: pulumi.ResourceOptions) -> azure_native.authorization.RoleDefinition:
    """A custom role assignable in the cluster's resource group only."""
    return authorization.RoleDefinition(
        resource_name, role_definition_id=stable_guid(stack, name, resource_name),
        role_name=f"gpufleet {stack} {name} Slurm power programs: {what}", role_type="CustomRole",
        description=f"What gpufleet's Slurm power programs of {name} ({stack}) call on its elastic {what}",
        permissions=[authorization.PermissionArgs(actions=list(actions))], assignable_scopes=[group_id],
        scope=group_id, opts=opts)


def _assign(resource_name: str, role: azure_native.authorization.RoleDefinition, scope: pulumi.Input[str],
            principal: pulumi.Input[str], stack: str, name: str, what: str, opts: pulumi.ResourceOptions) -> None:
    authorization.RoleAssignment(
        resource_name, scope=scope, principal_id=principal, principal_type="ServicePrincipal",
        role_assignment_name=stable_guid(stack, name, resource_name), role_definition_id=role.id,
        description=f"gpufleet {name} Slurm controller: {what}", opts=opts)
