"""Role assignments for the scale sets' system-assigned identities (`access:`).

- `role_assignments`: `{role, scope}`; `role` is a built-in role name gpufleet knows (AZURE_BUILTIN_ROLES), a role
  definition GUID, or a full role definition id;
- `container_registry_read`: AcrPull on the subscription (registries often live in another resource group);
- `buckets_read`: Storage Blob Data Reader on each storage account (or container) id.
Every assignment is made for each scale set (on-demand and spot), whose identity is its own.
"""

from __future__ import annotations

import pulumi
import pulumi_azure_native as azure_native

from ..spec import ClusterSpec
from ..spec.permissions import AZURE_BUILTIN_ROLES

ACR_PULL = "AcrPull"
BLOB_READER = "Storage Blob Data Reader"


def role_grants(spec: ClusterSpec) -> list[tuple[str, str | None]]:
    """(role, scope or None for the subscription), in a fixed order."""
    grants = [(grant.role, grant.scope) for grant in spec.access.role_assignments]
    if spec.access.container_registry_read:
        grants.append((ACR_PULL, None))
    grants += [(BLOB_READER, account) for account in spec.access.buckets_read]
    return list(dict.fromkeys(grants))


def role_definition_id(role: str, subscription: str) -> str:
    if role.startswith("/"):
        return role
    guid = AZURE_BUILTIN_ROLES.get(role.lower(), role)
    return f"/subscriptions/{subscription}/providers/Microsoft.Authorization/roleDefinitions/{guid}"


def grant_roles(name: str, spec: ClusterSpec, principal_ids: list[pulumi.Output[str]],
                parent: pulumi.ComponentResource, opts: pulumi.ResourceOptions) -> list[str]:
    grants = role_grants(spec)
    if not grants:
        return []
    subscription = azure_native.authorization.get_client_config_output(
        opts=pulumi.InvokeOutputOptions(parent=parent)).subscription_id
    for set_index, principal in enumerate(principal_ids):
        for index, (role, scope) in enumerate(grants):
            azure_native.authorization.RoleAssignment(
                f"{name}-role-{set_index}-{index}", principal_id=principal, principal_type="ServicePrincipal",
                role_definition_id=subscription.apply(lambda sub, role=role: role_definition_id(role, sub)),
                scope=scope if scope else pulumi.Output.concat("/subscriptions/", subscription),
                description=f"gpufleet {name} nodes: {role}", opts=opts)
    return [f"{role} on {scope or 'the subscription'}" for role, scope in grants]
