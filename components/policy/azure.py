"""Azure rules: InfiniBand scale sets in one placement group, no VNet overlapping 172.16.0.0/16, no passwords."""

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
