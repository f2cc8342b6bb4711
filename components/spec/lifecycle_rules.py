"""Cross-field rules for reservations, Capacity Blocks, placement reuse and image tracking (one function each).

Capacity facts that need the catalog (which instance types Capacity Blocks offer) live with the AWS component.
"""

from __future__ import annotations

from .errors import MISSING, Problem
from .lifecycle import parse_utc
from .model import ClusterSpec


def capacity_block_has_a_window(spec: ClusterSpec) -> list[Problem]:
    """A block's start and end drive the fleet's schedule; without them the group would launch into nothing."""
    market = spec.market
    if not market.capacity_block:
        return [Problem(f"market.{field}", getattr(market, field), "only applies with `market.capacity_block: true`")
                for field in ("capacity_block_start", "capacity_block_end") if getattr(market, field) is not None]
    problems = [Problem(f"market.{field}", MISSING, "required with `market.capacity_block: true`: the block's "
                        f"{field.rsplit('_', 1)[1]} time in UTC, as the Capacity Block console shows it, e.g. "
                        "'2026-12-10T11:30:00Z'")
                for field in ("capacity_block_start", "capacity_block_end") if getattr(market, field) is None]
    if not problems and parse_utc(market.capacity_block_end) <= parse_utc(market.capacity_block_start):
        problems.append(Problem("market.capacity_block_end", market.capacity_block_end,
                                f"must be after `market.capacity_block_start` ({market.capacity_block_start})"))
    return problems


def no_placement_group_in_a_capacity_block(spec: ClusterSpec) -> list[Problem]:
    """A Capacity Block already places its instances together; a placement group there fails every launch."""
    if not spec.market.capacity_block:
        return []
    problems = []
    if spec.placement_group:
        problems.append(Problem("placement_group", True, "a Capacity Block already co-locates its instances, and a "
                                "placement group makes its launches fail (InsufficientInstanceCapacity); drop "
                                "`placement_group`"))
    if spec.placement_group_name is not None:
        problems.append(Problem("placement_group_name", spec.placement_group_name, "a Capacity Block needs no "
                                "placement group; drop `placement_group_name`"))
    return problems


def reservation_keeps_its_own_placement(spec: ClusterSpec) -> list[Problem]:
    """An existing On-Demand Capacity Reservation cannot move into a placement group this stack creates."""
    market = spec.market
    if market.capacity_reservation_id is None or market.capacity_block or spec.cloud != "aws":
        return []
    if spec.placement_group and spec.placement_group_name is None:
        return [Problem("placement_group", True, "instances in an existing capacity reservation cannot launch into "
                        "a placement group this stack creates (InsufficientInstanceCapacity); name the "
                        "reservation's own cluster placement group in `placement_group_name`, or drop "
                        "`placement_group`")]
    return []


def placement_group_name_fits(spec: ClusterSpec) -> list[Problem]:
    name = spec.placement_group_name
    if name is None:
        return []
    if spec.cloud != "aws":
        return [Problem("placement_group_name", name, "only applies on aws")]
    if spec.placement_group is False:
        return [Problem("placement_group_name", name, "contradicts `placement_group: false`; drop one of them")]
    return []


def pinned_image_is_not_tracked(spec: ClusterSpec) -> list[Problem]:
    if spec.image.id is not None and spec.image.track == "latest":
        return [Problem("image.track", "latest", "`image.id` pins one exact image; drop `image.track` or `image.id`")]
    return []


def rollout_fits_the_fleet(spec: ClusterSpec) -> list[Problem]:
    rollout = spec.rollout
    if rollout.enabled and rollout.max_unavailable > spec.nodes:
        return [Problem("rollout.max_unavailable", rollout.max_unavailable,
                        f"at most `nodes` ({spec.nodes}) can be replaced at a time")]
    return []


LIFECYCLE_RULES = (
    capacity_block_has_a_window,
    no_placement_group_in_a_capacity_block,
    reservation_keeps_its_own_placement,
    placement_group_name_fits,
    pinned_image_is_not_tracked,
    rollout_fits_the_fleet,
)
