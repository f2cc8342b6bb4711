"""The shared filesystem's line in the cost table: $/month from its `catalog.py` row, with source and date.

Nodes are priced per hour by the GPU catalog; a filesystem is billed per provisioned GiB-month, whatever the nodes
do, so it is one extra line under the market rows, plus the total at the stack's market.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from ..spec import ClusterSpec
from ..spec.storage_rules import shared_capacity, shared_tier
from .catalog import shared_storage_cost, storage_service


def shared_storage_cost_row(spec: ClusterSpec) -> dict[str, Any] | None:
    """The created filesystem's cost (None without one, for an existing one, or for EFS which has no size)."""
    shared = spec.storage.shared
    if shared is None or shared.existing_id:
        return None
    cost = shared_storage_cost(spec.cloud, shared.kind, shared_capacity(spec), shared_tier(spec), spec.region)
    return asdict(cost) if cost else None


def storage_cost_lines(outputs: dict[str, Any]) -> list[str]:
    """Lines printed under the cost table; nothing when the stack creates no priced filesystem."""
    shared = outputs.get("shared_filesystem")
    if not shared:
        return []
    row = shared.get("cost")
    if row is None:
        note = ("an existing filesystem: not priced here" if shared.get("existing_id") else
                "billed per GiB stored (elastic): no size to price")
        return [f"+ shared filesystem ({shared.get('service')}): {note}"]
    tier = f" at {row['tier']} MB/s/TiB" if row["tier"] else ""
    what = f"+ shared filesystem: {row['service']}, {row['capacity_gib']:,} GiB{tier}: "
    if row["usd_per_month"] is None:
        return [what + "no list price for this tier in the catalog: the cost is unknown",
                f"  see {row['source']} for {row['region']}"]
    lines = [what + f"${row['usd_per_month']:,.2f}/month (${row['usd_per_hour']:,.4f}/hour)",
             f"  list price in {row['region']} from {row['source']} ({row['date']}"
             f"{'' if row['verified'] else ', not re-verified: refresh before relying on it'})"]
    nodes = outputs.get("estimated_usd_per_month")
    if nodes is not None:
        lines.append(f"  nodes at the stack's market + shared filesystem: ${nodes + row['usd_per_month']:,.2f}/month")
    return lines


def shared_filesystem_output(spec: ClusterSpec) -> dict[str, Any] | None:
    """The `shared_filesystem` stack output: what was asked for and its cost row."""
    shared = spec.storage.shared
    if shared is None:
        return None
    return {"kind": shared.kind, "service": storage_service(spec.cloud, shared.kind).service,
            "mount_path": shared.mount_path, "capacity_gib": shared_capacity(spec), "throughput": shared_tier(spec),
            "existing_id": shared.existing_id, "cost": shared_storage_cost_row(spec)}
