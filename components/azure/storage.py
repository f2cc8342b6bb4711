"""`storage.shared` on Azure: Azure Managed Lustre (AMLFS) or Azure Files NFS 4.1, in a subnet of their own.

- The filesystem subnet is the first /24 of the VNet's second half (the node subnet is the first half), egress
  through the cluster's NAT gateway (AMLFS reaches Azure services; default outbound access is off), with its own
  NSG: Lustre (988, 1019-1023/tcp) or NFS (2049/tcp) from the node subnet (and, for Lustre, from the filesystem
  subnet itself, where the servers talk to each other), and every other VNet source denied. The node NSG admits
  Lustre from the filesystem subnet (servers call clients back); see `node_storage_rules`.
- Lustre: an AMLFS-Durable-Premium-<throughput> filesystem of `capacity_gib` (whole TiB), in the nodes' zone.
- NFS: a premium FileStorage account (HTTPS-only off, which NFS needs; public network access disabled, shared keys
  off) with one NFS share, reached through a private endpoint in the filesystem subnet and the
  privatelink.file.core.windows.net zone linked to the VNet.
- `existing_id`: nothing is created; AMLFS is looked up for its MGS address (and its zone checked against `zone` at
  deploy time); an Azure Files share's address follows from its resource id. Its network is the owner's.
Azure NetApp Files is not offered: it needs a delegated subnet and a capacity pool of at least 1 TiB (a later
addition).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from ipaddress import IPv4Network

import pulumi
import pulumi_azure_native as azure_native

from ..spec import ClusterSpec
from ..spec.storage_rules import shared_capacity, shared_tier
from .tagging import Tagger

network = azure_native.network

LUSTRE_PORTS = ["988", "1019-1023"]
NFS_PORTS = ["2049"]
GIB_PER_TIB = 1024
FILESYSTEM_NAME = "lustrefs"
PRIVATE_DNS_ZONE = "privatelink.file.core.windows.net"
SHARE_NAME = "shared"
AMLFS_ID = re.compile(r"/resourceGroups/(?P<group>[^/]+)/providers/Microsoft\.StorageCache/amlFilesystems/(?P<name>[^/]+)$",
                      re.I)
SHARE_ID = re.compile(r"/storageAccounts/(?P<account>[^/]+)/fileServices/default/shares/(?P<share>[^/]+)$", re.I)


@dataclass(frozen=True)
class SharedFilesystem:
    id: pulumi.Input[str]
    source: pulumi.Output[str]
    subnet_id: pulumi.Input[str] | None


def storage_subnet_cidr(vnet_cidr: IPv4Network) -> IPv4Network:
    """The first /24 (or the whole half, in a small VNet) of the VNet's second half."""
    second_half = list(vnet_cidr.subnets(prefixlen_diff=1))[1]
    return next(second_half.subnets(new_prefix=max(24, second_half.prefixlen)))


def creates_filesystem(spec: ClusterSpec) -> bool:
    return spec.storage.shared is not None and not spec.storage.shared.existing_id


def node_storage_rules(spec: ClusterSpec, asg_id: pulumi.Input[str], priority: int) -> list[dict]:
    """Node NSG rules for Lustre: 988 and 1019-1023 from the filesystem subnet gpufleet creates, or from the VNet
    (where an existing filesystem's subnet is not known) for `existing_id`."""
    shared = spec.storage.shared
    if shared is None or shared.kind != "lustre":
        return []
    source = "VirtualNetwork" if shared.existing_id else str(storage_subnet_cidr(spec.network.cidr))
    return [{"name": "allow-lustre-from-filesystem", "priority": priority, "direction": "Inbound", "access": "Allow",
             "protocol": "Tcp", "source_port_range": "*", "destination_port_ranges": LUSTRE_PORTS,
             "source_address_prefix": source, "destination_application_security_groups": [{"id": asg_id}]}]


def filesystem_nsg_rules(spec: ClusterSpec, node_subnet: str) -> list[network.SecurityRuleArgs]:
    lustre = spec.storage.shared.kind == "lustre"
    own = str(storage_subnet_cidr(spec.network.cidr))
    sources = [node_subnet, own] if lustre else [node_subnet]
    return [
        network.SecurityRuleArgs(name="allow-clients", priority=100, direction="Inbound", access="Allow",
                                 protocol="Tcp", source_port_range="*", source_address_prefixes=sources,
                                 destination_address_prefix=own,
                                 destination_port_ranges=LUSTRE_PORTS if lustre else NFS_PORTS),
        network.SecurityRuleArgs(name="deny-vnet-inbound", priority=4000, direction="Inbound", access="Deny",
                                 protocol="*", source_port_range="*", source_address_prefix="VirtualNetwork",
                                 destination_address_prefix="*", destination_port_range="*"),
    ]


def storage_account_name(stack: str, name: str) -> str:
    """3-24 lowercase letters and digits, globally unique in practice, the same on every run."""
    return "gpuf" + hashlib.sha256(f"{stack}/{name}".encode()).hexdigest()[:20]


def build_shared_storage(name: str, stack: str, spec: ClusterSpec, resource_group: pulumi.Input[str],
                         vnet_name: pulumi.Input[str] | None, vnet_id: pulumi.Input[str] | None, node_subnet: str,
                         nat_id: pulumi.Input[str] | None, tag: Tagger,
                         opts: pulumi.ResourceOptions) -> SharedFilesystem | None:
    shared = spec.storage.shared
    if shared is None:
        return None
    if shared.existing_id:
        return _existing(shared.kind, shared.existing_id, spec.zone, opts)
    nsg = network.NetworkSecurityGroup(f"{name}-fs-nsg", resource_group_name=resource_group, location=spec.region,
                                       security_rules=filesystem_nsg_rules(spec, node_subnet), tags=tag("fs-nsg"),
                                       opts=opts)
    subnet = network.Subnet(f"{name}-fs-subnet", resource_group_name=resource_group, virtual_network_name=vnet_name,
                            address_prefix=str(storage_subnet_cidr(spec.network.cidr)), default_outbound_access=False,
                            network_security_group=network.SubResourceArgs(id=nsg.id),
                            nat_gateway=network.SubResourceArgs(id=nat_id) if nat_id else None, opts=opts)
    if shared.kind == "lustre":
        filesystem = azure_native.storagecache.AmlFilesystem(
            f"{name}-amlfs", resource_group_name=resource_group, location=spec.region,
            sku=azure_native.storagecache.SkuNameArgs(name=f"AMLFS-Durable-Premium-{shared_tier(spec)}"),
            storage_capacity_ti_b=shared_capacity(spec) / GIB_PER_TIB, filesystem_subnet=subnet.id,
            zones=[spec.zone] if spec.zone else None,
            maintenance_window=azure_native.storagecache.AmlFilesystemMaintenanceWindowArgs(
                day_of_week="Sunday", time_of_day_utc="02:00"),
            tags=tag("amlfs"), opts=opts)
        source = filesystem.client_info.apply(lambda info: f"{mgs_address(info)}@tcp:/{FILESYSTEM_NAME}")
        return SharedFilesystem(id=filesystem.id, source=source, subnet_id=subnet.id)
    return _azure_files(name, stack, spec, resource_group, vnet_id, subnet, tag, opts)


def _azure_files(name: str, stack: str, spec: ClusterSpec, resource_group: pulumi.Input[str],
                 vnet_id: pulumi.Input[str] | None, subnet: network.Subnet, tag: Tagger,
                 opts: pulumi.ResourceOptions) -> SharedFilesystem:
    storage = azure_native.storage
    account_name = storage_account_name(stack, name)
    account = storage.StorageAccount(
        f"{name}-files", account_name=account_name, resource_group_name=resource_group, location=spec.region,
        kind="FileStorage", sku=storage.SkuArgs(name="Premium_LRS"), enable_https_traffic_only=False,
        public_network_access="Disabled", allow_blob_public_access=False, allow_shared_key_access=False,
        minimum_tls_version="TLS1_2", tags=tag("files"), opts=opts)
    share = storage.FileShare(f"{name}-files-share", account_name=account.name, resource_group_name=resource_group,
                              share_name=SHARE_NAME, enabled_protocols="NFS", root_squash="RootSquash",
                              share_quota=shared_capacity(spec), opts=opts)
    endpoint = network.PrivateEndpoint(
        f"{name}-files-endpoint", resource_group_name=resource_group, location=spec.region,
        subnet=network.SubnetArgs(id=subnet.id),
        private_link_service_connections=[network.PrivateLinkServiceConnectionArgs(
            name="files", private_link_service_id=account.id, group_ids=["file"])],
        tags=tag("files-endpoint"), opts=opts)
    zone = azure_native.privatedns.PrivateZone(f"{name}-files-dns", resource_group_name=resource_group,
                                               private_zone_name=PRIVATE_DNS_ZONE, location="global",
                                               tags=tag("files-dns"), opts=opts)
    azure_native.privatedns.VirtualNetworkLink(
        f"{name}-files-dns-link", resource_group_name=resource_group, private_zone_name=zone.name, location="global",
        virtual_network=azure_native.privatedns.SubResourceArgs(id=vnet_id), registration_enabled=False,
        tags=tag("files-dns-link"), opts=opts)
    dns_group = network.PrivateDnsZoneGroup(
        f"{name}-files-dns-group", resource_group_name=resource_group, private_endpoint_name=endpoint.name,
        private_dns_zone_configs=[network.PrivateDnsZoneConfigArgs(name="file", private_dns_zone_id=zone.id)],
        opts=opts)
    # Known names; tied to the share and the DNS record so the nodes boot only once the address resolves privately.
    address = f"{account_name}.file.core.windows.net:/{account_name}/{SHARE_NAME}"
    source = pulumi.Output.all(share.id, dns_group.id).apply(lambda _: address)
    return SharedFilesystem(id=share.id, source=source, subnet_id=subnet.id)


def mgs_address(info) -> str:
    """The MGS address from AMLFS client info: a typed result, or a plain mapping where the SDK leaves one."""
    if isinstance(info, dict):
        return info.get("mgs_address") or info["mgsAddress"]
    return info.mgs_address


def _existing(kind: str, existing_id: str, zone: str | None, opts: pulumi.ResourceOptions) -> SharedFilesystem:
    if kind == "nfs":
        parts = SHARE_ID.search(existing_id).groupdict()
        address = f"{parts['account']}.file.core.windows.net:/{parts['account']}/{parts['share']}"
        return SharedFilesystem(id=existing_id, source=pulumi.Output.from_input(address), subnet_id=None)
    parts = AMLFS_ID.search(existing_id).groupdict()
    found = azure_native.storagecache.get_aml_filesystem_output(
        aml_filesystem_name=parts["name"], resource_group_name=parts["group"],
        opts=pulumi.InvokeOutputOptions(parent=opts.parent))

    def checked(values: list) -> str:
        info, zones = values
        if zone and zones and zone not in zones:
            raise pulumi.RunError(f"`storage.shared.existing_id`: {parts['name']} is in zone(s) {', '.join(zones)} "
                                  f"but the nodes are in zone {zone}: use a filesystem in the nodes' zone")
        return f"{mgs_address(info)}@tcp:/{FILESYSTEM_NAME}"

    return SharedFilesystem(id=existing_id, source=pulumi.Output.all(found.client_info, found.zones).apply(checked),
                            subnet_id=None)
