"""Azure rules: InfiniBand scale sets in one placement group, no VNet overlapping 172.16.0.0/16, no passwords, scale-set
writers (the Slurm controller's power programs) scoped to their scale sets."""

from __future__ import annotations

import re
from collections.abc import Iterable

from .common import ADMIN_PORTS, EXPORTER_PORTS, as_list, is_open, overlaps, port_spec_hits, truthy
from .model import Finding, Resource

VMSS = "azure-native:compute:VirtualMachineScaleSet"
VM = "azure-native:compute:VirtualMachine"
VNET = "azure-native:network:VirtualNetwork"
SUBNET = "azure-native:network:Subnet"
NSG = "azure-native:network:NetworkSecurityGroup"
SECURITY_RULE = "azure-native:network:SecurityRule"
# RDMA-capable sizes carry an `r` among their feature letters: ND96isr_H100_v5, ND96asr_v4, HB120rs_v3, NC24rs_v3.
IB_SIZE = re.compile(r"^Standard_(ND|NC|HB|HC|HX|H)\d+[a-z]*r[a-z]*(_|$)", re.IGNORECASE)
IB_RESERVED = "172.16.0.0/16"
MAX_SINGLE_PLACEMENT_GROUP = 100


def sku_name(resource: Resource) -> str:
    if resource.type == VMSS:
        return str((resource.props.get("sku") or {}).get("name") or "")
    return str((resource.props.get("hardwareProfile") or {}).get("vmSize") or "")


def is_infiniband(resource: Resource) -> bool:
    return resource.type in (VMSS, VM) and bool(IB_SIZE.match(sku_name(resource)))


def ib_single_placement_group(resource: Resource, config: dict) -> Iterable[Finding]:
    if resource.type != VMSS or not is_infiniband(resource):
        return
    if not truthy(resource.props.get("singlePlacementGroup")):
        yield Finding(f"InfiniBand scale set ({sku_name(resource)}) without singlePlacementGroup: true; nodes in "
                      "different placement groups cannot reach each other over IB", "set singlePlacementGroup: true")
    capacity = (resource.props.get("sku") or {}).get("capacity")
    if isinstance(capacity, (int, float)) and capacity > MAX_SINGLE_PLACEMENT_GROUP:
        yield Finding(f"{int(capacity)} instances in one InfiniBand scale set; a single placement group holds at "
                      f"most {MAX_SINGLE_PLACEMENT_GROUP}", "split the fleet into scale sets of at most 100")


def ib_vnet_overlap(resources: list[Resource], config: dict):
    if not any(is_infiniband(r) for r in resources):
        return
    for resource in resources:
        prefixes = []
        if resource.type == VNET:
            prefixes = as_list((resource.props.get("addressSpace") or {}).get("addressPrefixes"))
        elif resource.type == SUBNET:
            prefixes = as_list(resource.props.get("addressPrefix")) + as_list(resource.props.get("addressPrefixes"))
        bad = [p for p in prefixes if overlaps(p, IB_RESERVED)]
        if bad:
            yield resource, Finding(f"address space {', '.join(bad)} overlaps {IB_RESERVED}, which InfiniBand "
                                    "sizes use internally", "pick an address space outside 172.16.0.0/16")


def no_password_auth(resource: Resource, config: dict) -> Iterable[Finding]:
    if resource.type not in (VMSS, VM):
        return
    profile = resource.props.get("osProfile")
    if resource.type == VMSS:
        profile = (resource.props.get("virtualMachineProfile") or {}).get("osProfile")
    if not isinstance(profile, dict):
        return
    linux = profile.get("linuxConfiguration")
    if profile.get("adminPassword"):
        yield Finding("an admin password is set", "remove adminPassword; use SSH keys")
    if isinstance(linux, dict) and not truthy(linux.get("disablePasswordAuthentication")):
        yield Finding("password authentication is enabled", "set linuxConfiguration.disablePasswordAuthentication: "
                      "true")


def nsg_open_ingress(resource: Resource, config: dict) -> Iterable[Finding]:
    rules = []
    if resource.type == NSG:
        rules = [r for r in as_list(resource.props.get("securityRules")) if isinstance(r, dict)]
    elif resource.type == SECURITY_RULE:
        rules = [resource.props]
    for rule in rules:
        if rule.get("direction") != "Inbound" or rule.get("access") != "Allow":
            continue
        sources = as_list(rule.get("sourceAddressPrefix")) + as_list(rule.get("sourceAddressPrefixes"))
        if not any(is_open(s) for s in sources):
            continue
        specs = as_list(rule.get("destinationPortRange")) + as_list(rule.get("destinationPortRanges"))
        hits = sorted({p for s in specs or ["*"] for p in port_spec_hits(s, ADMIN_PORTS + EXPORTER_PORTS)})
        if hits:
            yield Finding(f"rule {rule.get('name')} allows the internet to port(s) {', '.join(map(str, hits))}",
                          "restrict sourceAddressPrefixes to your admin or monitoring CIDRs")


ROLE_DEFINITION = "azure-native:authorization:RoleDefinition"
ROLE_ASSIGNMENT = "azure-native:authorization:RoleAssignment"
SCALE_SET_PATH = "/providers/microsoft.compute/virtualmachinescalesets/"
SCALE_SET_WRITES = ("microsoft.compute/virtualmachinescalesets/write",
                    "microsoft.compute/virtualmachinescalesets/delete/action",
                    "microsoft.compute/virtualmachinescalesets/virtualmachines/write")
BROAD_ROLES = {"8e3af657-a8ff-443c-a75c-2fe8c4bcb635": "Owner", "b24988ac-6180-42a0-ab88-20f7382dd24c": "Contributor",
               "9980e02c-c2be-4d73-94e8-173b1dc7cf3c": "Virtual Machine Contributor"}
"""Built-in roles that write every scale set and VM in their scope (GUIDs from Azure's built-in roles list)."""


def _grants_write(action: str) -> bool:
    """Whether an action (possibly a wildcard, as Azure RBAC matches it) covers a scale-set write."""
    pattern = re.compile("^" + re.escape(action.lower()).replace(r"\*", ".*") + "$")
    return any(pattern.match(write) for write in SCALE_SET_WRITES)


def scale_set_writers_scoped(resources: list[Resource], config: dict):
    """A custom role that grows scale sets or deletes their instances (what the Slurm controller's power programs
    hold) is assigned on scale sets only, never on a resource group or subscription; and the principal holding it
    gets no Owner, Contributor or Virtual Machine Contributor anywhere."""
    writers = [r for r in resources if r.type == ROLE_DEFINITION and any(
        _grants_write(str(action)) for permission in as_list(r.props.get("permissions"))
        for action in as_list((permission or {}).get("actions")))]
    writer_ids = {ref for role in writers for ref in role.ids() | {str(role.props.get("roleDefinitionId") or "")}
                  if ref}
    scale_sets = {ref for r in resources if r.type == VMSS for ref in r.ids()}
    assignments = [r for r in resources if r.type == ROLE_ASSIGNMENT]

    def is_writer(assignment: Resource) -> bool:
        role = str(assignment.props.get("roleDefinitionId") or "")
        return role in writer_ids or role.rsplit("/", 1)[-1] in writer_ids

    holders = {str(a.props.get("principalId")) for a in assignments if is_writer(a)}
    for assignment in assignments:
        scope = str(assignment.props.get("scope") or "")
        role = str(assignment.props.get("roleDefinitionId") or "")
        if is_writer(assignment) and scope not in scale_sets and SCALE_SET_PATH not in scope.lower():
            yield assignment, Finding(f"a role that writes scale sets is assigned on {scope or 'no scope'}, not on a "
                                      "scale set: every scale set there could be grown or emptied",
                                      "assign it on each elastic scale set's id (gpufleet's elastic groups do)")
        broad = BROAD_ROLES.get(role.rsplit("/", 1)[-1].lower())
        if broad and str(assignment.props.get("principalId")) in holders:
            yield assignment, Finding(f"built-in {broad} granted on {scope or 'no scope'} to the identity that runs "
                                      "the power programs", "grant only the custom scale-set role, on the elastic "
                                      "scale sets")
