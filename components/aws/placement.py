"""A cluster placement group keeps EFA nodes on one network spine.

Skipped inside a Capacity Block: the block already fixes placement, and a placement group there causes
InsufficientInstanceCapacity (ParallelCluster PlacementGroupCapacityTypeValidator). Skipped with an existing
On-Demand Capacity Reservation too: its instances cannot launch into a group this stack just created
(ParallelCluster PlacementGroupCapacityReservationValidator); `placement_group_name` reuses the reservation's own
group instead. The selector decides whether the fleet is placed at all.
"""

from __future__ import annotations

import pulumi
import pulumi_aws as aws

from ..catalog.selector import Selection
from .tagging import Tagger

STRATEGY = "cluster"


def build_placement_group(name: str, selection: Selection, tag: Tagger,
                          opts: pulumi.ResourceOptions) -> aws.ec2.PlacementGroup | None:
    if not selection.placement_group or selection.spec.placement_group_name is not None:
        return None
    return aws.ec2.PlacementGroup(f"{name}-pg", strategy=STRATEGY, tags=tag("pg"), opts=opts)
