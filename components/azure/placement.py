"""Placement groups: the scale set's own (which bounds the InfiniBand partition) and an optional proximity group.

- A Uniform scale set with `singlePlacementGroup: true` holds at most 100 VMs (Azure "Virtual Machine Scale Sets and
  placement groups"; 300 after a support request, Azure "Set up InfiniBand"); with `false` it spans several placement
  groups and holds up to 1,000 VMs, but InfiniBand links do not cross placement groups. gpufleet sets it to true exactly
  when the cluster uses InfiniBand (`fabric.py`), and refuses more nodes than one placement group holds then.
- A proximity placement group is declared only when the spec sets `placement_group: true`: InfiniBand does not need
  it (the scale set already defines the fabric), and moving a scale set into or out of one needs its VMs deallocated,
  so it must not follow the node count the way the cloud-neutral default does.
"""

from __future__ import annotations

import pulumi
import pulumi_azure_native as azure_native

from ..spec import ClusterSpec
from .tagging import Tagger

PLACEMENT_GROUP_MAX_VMS = 100
SCALE_SET_MAX_VMS = 1000
PPG_TYPE = "Standard"


def wants_proximity_group(spec: ClusterSpec) -> bool:
    return spec.placement_group is True


def build_proximity_group(name: str, spec: ClusterSpec, resource_group: pulumi.Input[str], tag: Tagger,
                          opts: pulumi.ResourceOptions) -> azure_native.compute.ProximityPlacementGroup | None:
    if not wants_proximity_group(spec):
        return None
    return azure_native.compute.ProximityPlacementGroup(
        f"{name}-ppg", resource_group_name=resource_group, location=spec.region, proximity_placement_group_type=PPG_TYPE,
        tags=tag("ppg"), opts=opts)
