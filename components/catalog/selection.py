"""What catalog selection hands on for one spec: the instance type, its GPU, fabric, placement and price.

A module of its own so that the rules that judge a selection (`spec.node_rules`, `spec.vgpu_rules`) and the cost of
one (`selection_cost`) can name it without importing the selector, which runs those rules.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..spec.model import ClusterSpec
from .models import GpuModel, InstanceType


@dataclass(frozen=True)
class NodePrice:
    """USD per node-hour at the cluster's zone; None where the catalog has no price."""

    on_demand: float | None
    spot: float | None


@dataclass(frozen=True)
class Selection:
    """Everything the cloud components need from the catalog for one spec."""

    spec: ClusterSpec
    instance: InstanceType
    gpu: GpuModel
    fabric: str | None
    placement_group: bool
    price: NodePrice
    warnings: tuple[str, ...]
