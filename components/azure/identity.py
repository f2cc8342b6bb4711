"""The nodes' managed identity: system-assigned, with no role assignments.

Nothing on a node needs Azure RBAC: the boot scripts read only the Instance Metadata Service (IMDS) and Scheduled
Events, which need no identity. The identity exists so that a user can grant the nodes exactly what their jobs need
(e.g. `Storage Blob Data Reader` on one storage account) with `az role assignment create --assignee
<principalId>` instead of putting keys on the nodes. gpufleet assigns no role itself.

System-assigned rather than user-assigned: it is deleted with the scale set and adds no resource.
"""

from __future__ import annotations

import pulumi_azure_native as azure_native

IDENTITY_TYPE = "SystemAssigned"


def scale_set_identity() -> azure_native.compute.VirtualMachineScaleSetIdentityArgs:
    return azure_native.compute.VirtualMachineScaleSetIdentityArgs(type=IDENTITY_TYPE)
