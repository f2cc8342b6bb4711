"""How the fleet meets scarce capacity: Capacity Block windows, the capacity wait, and the drain hook.

Capacity Blocks (EC2 Auto Scaling guide "Use Capacity Blocks"): the group is created empty and two scheduled actions
size it, to `nodes` when the block starts and to 0 before it ends. AWS terminates whatever still runs in a block 30
minutes before its end, so the group scales in earlier (`BLOCK_END_MARGIN`) and every node leaves through the drain
hook instead. A start already past is not scheduled (Auto Scaling refuses start times in the past); the group is
then sized directly.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from pathlib import Path

import yaml

from ..spec.errors import Problem
from ..spec.lifecycle import parse_utc
from ..spec.model import ClusterSpec

CAPACITY_BLOCK_TYPES_FILE = Path(__file__).resolve().parents[1] / "catalog" / "data" / "aws" / "capacity_blocks.yaml"
BLOCK_END_MARGIN = timedelta(minutes=40)  # AWS starts terminating at 30 minutes; 10 more for the drain hook
TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
# Lifecycle hook on termination: every node that leaves (scale-in, rebalance, Capacity Block end, instance refresh)
# waits here until its watcher has drained it and completed the action, or until the timeout, whichever is first.
DRAIN_HOOK_NAME = "gpufleet-drain"
DRAIN_HOOK_TIMEOUT_SEC = 300  # the same five minutes Azure's terminate notification gives


@lru_cache(maxsize=1)
def capacity_block_types() -> tuple[str, ...]:
    return tuple(yaml.safe_load(CAPACITY_BLOCK_TYPES_FILE.read_text())["instance_types"])


@dataclass(frozen=True)
class ScheduledSize:
    """One scheduled action: the group's size from `start_time` (UTC) on."""

    role: str
    start_time: str
    size: int


@dataclass(frozen=True)
class FleetSizing:
    """The group's size when declared, and the scheduled actions that change it later."""

    size: int
    schedule: tuple[ScheduledSize, ...]


def fleet_sizing(spec: ClusterSpec, now: datetime | None = None) -> FleetSizing:
    """`nodes`, or for a Capacity Block the size that fits `now` plus the actions for the block's window."""
    market = spec.market
    if not market.capacity_block:
        return FleetSizing(spec.nodes, ())
    now = now or datetime.now(timezone.utc)
    start, stop = parse_utc(market.capacity_block_start), parse_utc(market.capacity_block_end) - BLOCK_END_MARGIN
    schedule = [ScheduledSize("block-end", stop.strftime(TIME_FORMAT), 0)]
    if start > now:
        schedule.insert(0, ScheduledSize("block-start", start.strftime(TIME_FORMAT), spec.nodes))
        return FleetSizing(0, tuple(schedule))
    return FleetSizing(spec.nodes, tuple(schedule))


def capacity_block_problems(spec: ClusterSpec, instance_type: str, now: datetime | None = None) -> list[Problem]:
    """A type Capacity Blocks do not offer, or a block already too close to its end to run anything."""
    if not spec.market.capacity_block:
        return []
    problems = []
    if instance_type not in capacity_block_types():
        problems.append(Problem("market.capacity_block", True, f"Capacity Blocks do not offer {instance_type}; they "
                                f"offer {', '.join(capacity_block_types())}"))
    if spec.market.capacity_block_end is not None:
        stop = parse_utc(spec.market.capacity_block_end) - BLOCK_END_MARGIN
        if stop <= (now or datetime.now(timezone.utc)):
            problems.append(Problem("market.capacity_block_end", spec.market.capacity_block_end,
                                    "the block ends within 40 minutes or has ended (AWS terminates its instances "
                                    "30 minutes before the end); reserve a new block"))
    return problems
