"""A resource group, a VNet with one node subnet, and a NAT gateway for egress; or an existing subnet.

- The VNet is `network.cidr`; the node subnet is its first half, which leaves room for a Bastion subnet later.
  The InfiniBand network reserves 172.16.0.0/16 (Azure "Set up InfiniBand"), so `rules.py` refuses an overlapping
  range.
- Nodes get no public IP. The subnet sets `defaultOutboundAccess: false` and sends egress through a NAT gateway whose
  Standard public IP is for outbound traffic only: nothing can connect in through it.
- With `network.existing_subnet_id` (an Azure subnet resource id) nothing here is created: the scale set joins that
  subnet, and the other resources go into the subnet's resource group. Its egress and address range are the owner's.
- With `network.existing_resource_group` no resource group is created: the VNet, NAT, NSG and scale set go into it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from ipaddress import IPv4Network

import pulumi
import pulumi_azure_native as azure_native

from ..spec import ClusterSpec
from .tagging import Tagger

network = azure_native.network

RDMA_RESERVED = IPv4Network("172.16.0.0/16")
AZURE_RESERVED_ADDRESSES = 5  # network, gateway, two DNS, broadcast (Azure VNet FAQ)
SMALLEST_SUBNET_PREFIX = 29
SUBNET_ID = re.compile(r"^/subscriptions/(?P<subscription>[^/]+)/resourceGroups/(?P<resource_group>[^/]+)/providers/"
                       r"Microsoft\.Network/virtualNetworks/(?P<vnet>[^/]+)/subnets/(?P<subnet>[^/]+)$", re.IGNORECASE)


@dataclass(frozen=True)
class SubnetRef:
    """The parts of an Azure subnet resource id."""

    subscription: str
    resource_group: str
    vnet: str
    subnet: str


@dataclass(frozen=True)
class NodeNetwork:
    """Where the nodes go."""

    resource_group_name: pulumi.Input[str]
    subnet_id: pulumi.Input[str]
    vnet_name: pulumi.Input[str] | None
    nat_ip: pulumi.Input[str] | None
    vnet_id: pulumi.Input[str] | None = None
    nat_id: pulumi.Input[str] | None = None


def parse_subnet_id(text: str) -> SubnetRef | None:
    match = SUBNET_ID.match(text)
    return SubnetRef(**match.groupdict()) if match else None


def node_subnet_cidr(vnet_cidr: IPv4Network) -> IPv4Network:
    """The first half of the VNet."""
    return next(vnet_cidr.subnets(prefixlen_diff=1))


def usable_addresses(subnet: IPv4Network) -> int:
    return subnet.num_addresses - AZURE_RESERVED_ADDRESSES


def build_resource_group(name: str, spec: ClusterSpec, tag: Tagger, opts: pulumi.ResourceOptions) -> pulumi.Input[str]:
    """The resource group every other resource goes into: the existing subnet's, or a new one."""
    if spec.network.existing_subnet_id:
        return parse_subnet_id(spec.network.existing_subnet_id).resource_group
    if spec.network.existing_resource_group:
        return spec.network.existing_resource_group
    group = azure_native.resources.ResourceGroup(f"{name}-rg", location=spec.region, tags=tag("rg"), opts=opts)
    return group.name


def build_network(name: str, spec: ClusterSpec, resource_group: pulumi.Input[str], nsg_id: pulumi.Input[str],
                  tag: Tagger, opts: pulumi.ResourceOptions) -> NodeNetwork:
    if spec.network.existing_subnet_id:
        return NodeNetwork(resource_group_name=resource_group, subnet_id=spec.network.existing_subnet_id,
                           vnet_name=None, nat_ip=None)
    zones = [spec.zone] if spec.zone else None
    location = spec.region
    vnet = network.VirtualNetwork(
        f"{name}-vnet", resource_group_name=resource_group, location=location,
        address_space=network.AddressSpaceArgs(address_prefixes=[str(spec.network.cidr)]), tags=tag("vnet"), opts=opts)
    nat_ip = network.PublicIPAddress(
        f"{name}-nat-ip", resource_group_name=resource_group, location=location,
        sku=network.PublicIPAddressSkuArgs(name="Standard", tier="Regional"), public_ip_allocation_method="Static",
        public_ip_address_version="IPv4", zones=zones, tags=tag("nat-ip"), opts=opts)
    nat = network.NatGateway(
        f"{name}-nat", resource_group_name=resource_group, location=location,
        sku=network.NatGatewaySkuArgs(name="Standard"), public_ip_addresses=[network.SubResourceArgs(id=nat_ip.id)],
        zones=zones, tags=tag("nat"), opts=opts)
    subnet = network.Subnet(
        f"{name}-subnet", resource_group_name=resource_group, virtual_network_name=vnet.name,
        address_prefix=str(node_subnet_cidr(spec.network.cidr)), default_outbound_access=False,
        nat_gateway=network.SubResourceArgs(id=nat.id), network_security_group=network.SubResourceArgs(id=nsg_id),
        opts=opts)
    return NodeNetwork(resource_group_name=resource_group, subnet_id=subnet.id, vnet_name=vnet.name,
                       nat_ip=nat_ip.ip_address, vnet_id=vnet.id, nat_id=nat.id)
