"""GPU network layout from the instance's catalog row (never its name): which VPCs, subnets and NICs a node needs.

- No RDMA fabric (A2, G2, or `fabric: tcp`): one gVNIC NIC on the primary VPC.
- `tcpx` (A3 High, 4 GPU NICs) and `tcpxo` (A3 Mega, 8): the primary NIC plus one gVNIC NIC per GPU NIC, each on a
  VPC of its own with MTU `gpu_nic_mtu` (8244) and an internal-traffic firewall (cluster-toolkit `multivpc`).
- `roce` (A3 Ultra, A4): `host_nics` (2) gVNIC NICs on two VPCs, then one RoCE VPC created with the zone's
  `<zone>-vpc-roce` network profile, `gpu_nics` (8) subnets and one MRDMA NIC per subnet. Firewall rules do not
  apply to RDMA traffic and Google refuses them on a RoCE VPC (cluster-toolkit `modules/network/vpc` precondition),
  so that VPC must have none.
Sources: shared/reference/networking-aws-azure-gcp.md 3.1 and 5 (rows 13-14).

The layout follows the selection's fabric, which the selector derives from the machine type, not the node count: a
single A3/A4 node already has its GPU NICs, so growing it changes only the group's target size (otherwise the instance
template would be replaced and, with OPPORTUNISTIC updates, the first node would keep one NIC).
"""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Network

from ..catalog.models import InstanceType

GVNIC = "GVNIC"
MRDMA = "MRDMA"
DEFAULT_MTU = 1460  # GCP's default VPC MTU
GPU_FABRICS = ("tcpx", "tcpxo")
RDMA_FABRIC = "roce"
# GPU VPC subnets come from the first of these ranges that does not overlap the primary network. A /19 holds
# 8,188 addresses (GCP reserves 4 per subnet), more than the 4,096 nodes a spec may ask for.
GPU_CIDR_POOLS = (IPv4Network("172.16.0.0/12"), IPv4Network("192.168.0.0/16"), IPv4Network("10.0.0.0/8"))
GPU_SUBNET_PREFIX = 19


@dataclass(frozen=True)
class VpcPlan:
    """One VPC the cluster creates; `role` is its child name suffix (`net`, `net-1`, `gpu-net-0`, `rdma-net`)."""

    role: str
    kind: str  # "host" (gVNIC, carries the node's IP and egress), "gpu" (TCPX/TCPXO), "rdma" (RoCE)
    mtu: int
    subnet_roles: tuple[str, ...]
    nic_type: str
    firewall_allowed: bool
    network_profile: bool = False  # created with the zone's RDMA (RoCE) network profile


@dataclass(frozen=True)
class NicSlot:
    """One network interface of the instance template, in NIC order."""

    vpc_role: str
    subnet_role: str
    nic_type: str


def vpc_layout(instance: InstanceType, fabric: str | None) -> list[VpcPlan]:
    """The VPCs a node of `instance` needs when the cluster uses `fabric` (None: TCP over the primary NIC)."""
    host_mtu = int(instance.extra.get("host_nic_mtu", DEFAULT_MTU))
    primary = VpcPlan("net", "host", host_mtu, ("subnet",), GVNIC, True)
    if fabric is None:
        return [primary]
    if not instance.gpu_nics or not instance.gpu_nic_mtu:
        raise ValueError(f"catalog row {instance.name} has fabric {fabric!r} but no gpu_nics/gpu_nic_mtu; fix "
                         "components/catalog/data/gcp/instances.yaml")
    if fabric in GPU_FABRICS:
        return [primary, *(VpcPlan(f"gpu-net-{i}", "gpu", instance.gpu_nic_mtu, (f"gpu-subnet-{i}",), GVNIC, True)
                           for i in range(instance.gpu_nics))]
    if fabric == RDMA_FABRIC:
        hosts = [primary, *(VpcPlan(f"net-{i}", "host", host_mtu, (f"subnet-{i}",), GVNIC, True)
                            for i in range(1, int(instance.extra.get("host_nics", 1))))]
        rdma = VpcPlan("rdma-net", "rdma", instance.gpu_nic_mtu,
                       tuple(f"rdma-subnet-{i}" for i in range(instance.gpu_nics)), MRDMA, False, network_profile=True)
        return [*hosts, rdma]
    raise ValueError(f"catalog row {instance.name}: fabric {fabric!r} is not a GCP fabric; expected one of "
                     f"{', '.join((*GPU_FABRICS, RDMA_FABRIC))}")


def nic_layout(vpcs: list[VpcPlan]) -> list[NicSlot]:
    """One NIC per subnet, in VPC order: nic0 is the primary (gVNIC), MRDMA NICs come last."""
    return [NicSlot(vpc.role, subnet, vpc.nic_type) for vpc in vpcs for subnet in vpc.subnet_roles]


def subnet_cidrs(primary: IPv4Network, vpcs: list[VpcPlan]) -> dict[str, IPv4Network]:
    """{subnet role: range}: the primary subnet takes `primary`; every other subnet a /19 that overlaps nothing."""
    roles = [subnet for vpc in vpcs for subnet in vpc.subnet_roles]
    ranges = {roles[0]: primary}
    free = (block for pool in GPU_CIDR_POOLS for block in pool.subnets(new_prefix=GPU_SUBNET_PREFIX)
            if not block.overlaps(primary))
    for role in roles[1:]:
        ranges[role] = next(free)
    return ranges

