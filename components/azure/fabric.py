"""The InfiniBand partition of an ND cluster, derived from the size's catalog row (never its name).

Azure wires every GPU of an ND size to its own InfiniBand HCA (ND A100 v4: 200 Gb/s HDR, ND H100/H200 v5: 400 Gb/s
NDR). The links of two VMs can talk only when both VMs carry the same partition key, which Azure gives every VM of one
scale set with `singlePlacementGroup: true` (Azure "Set up InfiniBand"; NVIDIA/nccl-tests#36). Nothing in the scale
set's network profile names the HCAs: they appear in the guest as mlx5_ib0..7 and the HPC image's NCCL setup uses them.
The RDMA network reserves 172.16.0.0/16, so the VNet must not overlap it (`network.py`).

The partition is decided by the size and `fabric`, not by the node count: a one-node ND cluster still gets one placement
group, so that growing it to two nodes changes only the capacity (Azure cannot turn `singlePlacementGroup` back on).
The selector's `fabric: auto` follows the size too, so every node of a partition gets the InfiniBand node setup and
growing never changes the customData (with `upgradePolicy: Manual` old nodes would keep the old one).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..catalog.models import InstanceType
from ..spec import ClusterSpec

INFINIBAND = "infiniband"


@dataclass(frozen=True)
class InfinibandPartition:
    """The IB links every node of the scale set brings to the partition."""

    links: int
    gbps_per_link: int

    @property
    def gbps_per_node(self) -> int:
        return self.links * self.gbps_per_link


def infiniband_partition(spec: ClusterSpec, instance: InstanceType) -> InfinibandPartition | None:
    """The partition the scale set forms, or None for sizes without InfiniBand and for `fabric: tcp`."""
    if instance.fabric != INFINIBAND or spec.fabric == "tcp":
        return None
    if not instance.infiniband_gbps:
        raise ValueError(f"catalog row {instance.name} has fabric infiniband but no infiniband_gbps; fix "
                         "components/catalog/data/azure/instances.yaml")
    return InfinibandPartition(links=instance.gpus, gbps_per_link=instance.infiniband_gbps)


def accelerated_networking(instance: InstanceType) -> bool:
    """Whether the size supports Accelerated Networking (SR-IOV on the Ethernet NIC), from the catalog row."""
    return bool(instance.extra.get("accelerated_networking", False))
