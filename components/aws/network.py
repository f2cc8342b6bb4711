"""A VPC with one private subnet in one AZ (EFA traffic cannot cross AZs) and a NAT gateway for egress; elastic
groups' fallback zones get a private subnet each, routed through the same NAT gateway.

The NAT gateway sits in a small public subnet with the only route to the internet gateway; nodes get no public
IPs. The private route table also has an S3 gateway endpoint: datasets, checkpoints, model repositories and the
node config in the cluster's region reach S3 without the NAT gateway's per-GB processing charge (gateway endpoints
are free). Existing networks:
- `network.existing_subnet_id`: nothing is created; the subnet's VPC is looked up, and at deploy time its AZ must be
  the spec's `zone` (the fleet fails with a message otherwise).
- `network.existing_vpc_id`: the VPC and its internet gateway are looked up; the two subnets (`network.cidr` must be
  a free range inside the VPC), the NAT gateway with its address, the two route tables and the S3 endpoint on the
  private one are created in it (9 resources, no VPC or internet gateway).
"""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Network

import pulumi
import pulumi_aws as aws

from ..catalog.zones import is_aws_zone_id
from ..spec import ClusterSpec
from .tagging import Tagger


@dataclass(frozen=True)
class NodeNetwork:
    """Where the nodes go."""

    vpc_id: pulumi.Input[str]
    vpc_cidr: pulumi.Input[str]
    subnet_id: pulumi.Input[str]
    public_subnet_id: pulumi.Input[str] | None = None
    """The NAT gateway's public subnet (where an opted-in internet-facing load balancer goes); None when existing."""
    vpc: aws.ec2.Vpc | None = None
    subnet: aws.ec2.Subnet | None = None
    fallback_subnets: tuple[tuple[str, aws.ec2.Subnet], ...] = ()
    """Elastic groups' `fallback_zones`: (zone as written, its private subnet), routed through the same NAT."""


def subnet_cidrs(vpc_cidr: IPv4Network) -> tuple[IPv4Network, IPv4Network]:
    """(private, public): the private subnet takes the first quarter of the VPC, the NAT subnet the last /28."""
    private = next(vpc_cidr.subnets(new_prefix=min(vpc_cidr.prefixlen + 2, 26)))
    public = IPv4Network((int(vpc_cidr.broadcast_address) - 15, 28))
    return private, public


FALLBACK_SUBNETS_MAX = 2
"""Private subnets for fallback zones: the VPC's second and third quarters (the first is the nodes' subnet, the last
holds the NAT subnet)."""


def fallback_subnet_cidr(vpc_cidr: IPv4Network, index: int) -> IPv4Network:
    """The `index`th fallback zone's private subnet: the block after the nodes' subnet, of the same size."""
    private, _ = subnet_cidrs(vpc_cidr)
    return list(vpc_cidr.subnets(new_prefix=private.prefixlen))[index + 1]


def zone_args(zone: str) -> dict:
    """AZ ids (use1-az4) are the same in every account; AZ names (us-east-1a) are not."""
    return {"availability_zone_id": zone} if is_aws_zone_id(zone) else {"availability_zone": zone}


def build_network(name: str, spec: ClusterSpec, existing_subnet_id: pulumi.Input[str] | None, tag: Tagger,
                  opts: pulumi.ResourceOptions, fallback_zones: tuple[str, ...] = ()) -> NodeNetwork:
    """Every resource and lookup names the spec's region: the stack's provider config (profile, roles, default
    tags) stays in force, whichever region the cluster is in. `fallback_zones`: the elastic groups' other zones, a
    private subnet each (`{name}-subnet-<zone>`, refused with an existing subnet by `elastic.py`)."""
    region = spec.region
    invoke = pulumi.InvokeOutputOptions(parent=opts.parent)
    if existing_subnet_id is not None:
        subnet = aws.ec2.get_subnet_output(id=existing_subnet_id, region=region, opts=invoke)
        subnet_id = pulumi.Output.all(subnet.id, subnet.availability_zone, subnet.availability_zone_id).apply(
            lambda found: checked_subnet_zone(found[0], spec.zone, found[1], found[2], found[0]))
        return NodeNetwork(vpc_id=subnet.vpc_id, vpc_cidr=subnet.cidr_block, subnet_id=subnet_id)
    private_cidr, public_cidr = subnet_cidrs(spec.network.cidr)
    vpc_resource = None
    if spec.network.existing_vpc_id:
        vpc = aws.ec2.get_vpc_output(id=spec.network.existing_vpc_id, region=region, opts=invoke)
        igw = None
        gateway_id = aws.ec2.get_internet_gateway_output(filters=[aws.ec2.GetInternetGatewayFilterArgs(
            name="attachment.vpc-id", values=[spec.network.existing_vpc_id])], region=region,
            opts=invoke).internet_gateway_id
    else:
        vpc = vpc_resource = aws.ec2.Vpc(f"{name}-vpc", cidr_block=str(spec.network.cidr), enable_dns_hostnames=True,
                                         enable_dns_support=True, tags=tag("vpc"), region=region, opts=opts)
        igw = aws.ec2.InternetGateway(f"{name}-igw", vpc_id=vpc.id, tags=tag("igw"), region=region, opts=opts)
        gateway_id = igw.id
    public = aws.ec2.Subnet(f"{name}-nat-subnet", vpc_id=vpc.id, cidr_block=str(public_cidr), region=region,
                            map_public_ip_on_launch=False, tags=tag("nat-subnet"), opts=opts, **zone_args(spec.zone))
    private = aws.ec2.Subnet(f"{name}-subnet", vpc_id=vpc.id, cidr_block=str(private_cidr), region=region,
                             map_public_ip_on_launch=False, tags=tag("subnet"), opts=opts, **zone_args(spec.zone))
    nat_ip = aws.ec2.Eip(f"{name}-nat-ip", domain="vpc", tags=tag("nat-ip"), region=region, opts=opts)
    nat = aws.ec2.NatGateway(f"{name}-nat", allocation_id=nat_ip.id, subnet_id=public.id, tags=tag("nat"),
                             region=region,
                             opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
                                 depends_on=[igw] if igw else [])))
    _route_all(name, "nat-routes", vpc, public, {"gateway_id": gateway_id}, tag, region, opts)
    routes = _route_all(name, "routes", vpc, private, {"nat_gateway_id": nat.id}, tag, region, opts)
    # The endpoint adds its prefix-list route to the table itself; the table's inline routes leave it alone
    # (terraform-provider-aws flattenRoutes skips `vpce-` routes).
    aws.ec2.VpcEndpoint(f"{name}-s3-endpoint", vpc_id=vpc.id, service_name=f"com.amazonaws.{region}.s3",
                        vpc_endpoint_type="Gateway", route_table_ids=[routes.id], tags=tag("s3-endpoint"),
                        region=region, opts=opts)
    fallbacks = []
    for index, zone in enumerate(fallback_zones):
        subnet = aws.ec2.Subnet(f"{name}-subnet-{zone}", vpc_id=vpc.id, region=region, map_public_ip_on_launch=False,
                                cidr_block=str(fallback_subnet_cidr(spec.network.cidr, index)),
                                tags=tag(f"subnet-{zone}"), opts=opts, **zone_args(zone))
        aws.ec2.RouteTableAssociation(f"{name}-routes-{zone}-assoc", route_table_id=routes.id, subnet_id=subnet.id,
                                      region=region, opts=opts)
        fallbacks.append((zone, subnet))
    return NodeNetwork(vpc_id=vpc.id, vpc_cidr=vpc.cidr_block, subnet_id=private.id, public_subnet_id=public.id,
                       vpc=vpc_resource, subnet=private, fallback_subnets=tuple(fallbacks))


def checked_subnet_zone(subnet_id: str, zone: str | None, az_name: str, az_id: str, found_id: str) -> str:
    """The subnet id, once its AZ is known to be the spec's zone (by name or by id); else a deploy-time error."""
    if zone and zone not in (az_name, az_id):
        raise pulumi.RunError(f"`network.existing_subnet_id`: subnet {subnet_id} is in {az_name} ({az_id}) but "
                              f"`zone` is {zone}; EFA and the placement group need the nodes in the subnet's AZ: set "
                              f"zone: {az_id} or choose a subnet in {zone}")
    return found_id


def _route_all(name: str, role: str, vpc, subnet: aws.ec2.Subnet, target: dict, tag: Tagger,
               region: str, opts: pulumi.ResourceOptions) -> aws.ec2.RouteTable:
    """A route table sending everything outside the VPC to `target`, associated with `subnet`."""
    table = aws.ec2.RouteTable(f"{name}-{role}", vpc_id=vpc.id, tags=tag(role), region=region, opts=opts,
                               routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", **target)])
    aws.ec2.RouteTableAssociation(f"{name}-{role}-assoc", route_table_id=table.id, subnet_id=subnet.id,
                                  region=region, opts=opts)
    return table
