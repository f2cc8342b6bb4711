"""Checks a refresh must pass before anything is written: no price of zero or below, and no new price that moves
more than a factor from the price it replaces or from the same type's price in the other regions.

A 100x typo ($5,504/h for p5.48xlarge) is caught by both; a real cut (55.04 -> 40) passes. Comparisons use the
price selection would use for the region (the highest of its rows), the same number `gpufleet select` ranks by.
"""

from __future__ import annotations

from collections.abc import Iterable
from statistics import median

from ..models import Price
from .records import PRICE_FIELDS, PriceRecord

DEFAULT_OUTLIER_FACTOR = 3.0


def not_positive(records: Iterable[PriceRecord]) -> list[str]:
    """One line per refreshed price of zero or below, naming the row."""
    return [f"{r.instance_type} {r.region} {r.zone or '(region-wide)'} {field.replace('_', '-')}: ${value:g}/h is not "
            "a price (zero or below)"
            for r in records for field in PRICE_FIELDS if (value := getattr(r, field)) is not None and value <= 0]


def outliers(old: list[Price], merged: list[Price], source_key: str, factor: float) -> list[str]:
    """Refreshed prices more than `factor` from the price they replace, or from the median of the other regions."""
    before, after = _regional(old), _regional(merged)
    lines = []
    for (name, region, field), value in sorted(_regional([p for p in merged if p.source == source_key]).items()):
        where = f"{name} {region} {field.replace('_', '-')} ${value:g}/h"
        previous = before.get((name, region, field))
        if previous and not 1 / factor <= value / previous <= factor:
            lines.append(f"{where} is {value / previous:.2f}x the previous ${previous:g}/h")
        others = [v for (n, r, f), v in after.items() if (n, f) == (name, field) and r != region]
        if len(others) >= 2 and not 1 / factor <= value / median(others) <= factor:
            lines.append(f"{where} is {value / median(others):.2f}x the median ${median(others):g}/h of "
                         f"{len(others)} other regions")
    return lines


def _regional(rows: Iterable[Price]) -> dict[tuple[str, str, str], float]:
    values: dict[tuple[str, str, str], float] = {}
    for p in rows:
        for field in PRICE_FIELDS:
            value = getattr(p, field)
            if value is not None and value > 0:
                key = (p.instance_type, p.region, field)
                values[key] = max(value, values.get(key, value))
    return values
