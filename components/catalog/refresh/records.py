"""The parsers' common output: one cloud's prices for one instance type at one location."""

from __future__ import annotations

from dataclasses import dataclass

PRICE_FIELDS = ("on_demand", "spot", "reserved_1y", "reserved_3y")
HOURS_1Y = 8760
HOURS_3Y = 26280


@dataclass(frozen=True)
class PriceRecord:
    """USD per node-hour; zone "" for a region-wide price. None = the response did not price it."""

    instance_type: str
    region: str
    zone: str = ""
    on_demand: float | None = None
    spot: float | None = None
    reserved_1y: float | None = None
    reserved_3y: float | None = None


class RefreshError(Exception):
    """A refresh that cannot run: no network or no credentials (exit 1)."""


class ResponseShapeError(RefreshError):
    """A pricing response not in the shape its API documents: bad input, like a malformed file (exit 2)."""
