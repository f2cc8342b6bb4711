"""Folds refreshed `PriceRecord`s into a cloud's existing price rows, keeping the schema, and reports changes.

A refresh replaces: for every (instance type, region, market) it prices, its rows become the only rows that
price that market in that region, in every zone, whatever source the old rows came from (a zone the refresh no
longer lists loses that price). Old rows keep their other markets, with their own source and date; a row left
with no price is removed. Refreshed rows carry their own source key, which names the refresh's date, so every
row's source and date stay true. Region-wide records for a cloud whose rows are per zone (GCP machine prices,
Azure) are written to each zone the old rows list for that region.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from dataclasses import replace

from ..models import Price
from .records import PRICE_FIELDS, PriceRecord

CSV_COLUMNS = ("instance_type", "region", "zone", *PRICE_FIELDS, "source")


def combine_aws(regional: list[PriceRecord], spot: list[PriceRecord]) -> list[PriceRecord]:
    """AWS: region rows (on-demand, reserved) plus zone rows (spot, with the region's on-demand)."""
    on_demand = {(r.instance_type, r.region): r.on_demand for r in regional}
    zone_rows = [replace(r, on_demand=on_demand.get((r.instance_type, r.region))) for r in spot]
    return sorted([*regional, *zone_rows], key=lambda r: (r.instance_type, r.region, r.zone))


def spread_to_zones(records: list[PriceRecord], old: list[Price]) -> list[PriceRecord]:
    """Region-wide records become one record per zone the old rows list for that (type, region)."""
    zones: dict[tuple[str, str], set[str]] = {}
    for p in old:
        if p.zone:
            zones.setdefault((p.instance_type, p.region), set()).add(p.zone)
    result = []
    for r in records:
        targets = sorted(zones.get((r.instance_type, r.region), ())) if not r.zone else []
        result += [replace(r, zone=z) for z in targets] or [r]
    return result


def merge(old: list[Price], records: list[PriceRecord], cloud: str, source_key: str) -> tuple[list[Price], dict]:
    new = [Price(cloud=cloud, instance_type=r.instance_type, region=r.region, zone=r.zone, on_demand=r.on_demand,
                 spot=r.spot, reserved_1y=r.reserved_1y, reserved_3y=r.reserved_3y, source=source_key)
           for r in records]
    refreshed = {(r.instance_type, r.region, f) for r in records for f in PRICE_FIELDS if getattr(r, f) is not None}
    kept = []
    for p in old:
        cleared = {f: None for f in PRICE_FIELDS if (p.instance_type, p.region, f) in refreshed}
        rest = replace(p, **cleared) if cleared else p
        if any(getattr(rest, f) is not None for f in PRICE_FIELDS):
            kept.append(rest)
    rows = sorted([*kept, *new], key=lambda p: (p.instance_type, p.region, p.zone, p.source))
    return rows, report(old, rows)


def report(old: list[Price], new: list[Price]) -> dict:
    """Per (type, region, zone, market): the effective price before and after, and the change."""
    before, after = _effective(old), _effective(new)
    changes = []
    for key in sorted(set(before) | set(after)):
        a, b = before.get(key), after.get(key)
        if a == b:
            continue
        change = {"instance_type": key[0], "region": key[1], "zone": key[2], "market": key[3], "old": a, "new": b,
                  "change_pct": round(100 * (b - a) / a, 1) if a and b is not None else None}
        changes.append(change)
    return {"rows_before": len(old), "rows_after": len(new),
            "added": sum(1 for c in changes if c["old"] is None),
            "removed": sum(1 for c in changes if c["new"] is None),
            "changed": sum(1 for c in changes if c["old"] is not None and c["new"] is not None), "changes": changes}


def to_csv(rows: Iterable[Price]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for p in rows:
        writer.writerow([p.instance_type, p.region, p.zone, *(_cell(getattr(p, f)) for f in PRICE_FIELDS), p.source])
    return out.getvalue()


def _effective(rows: list[Price]) -> dict[tuple[str, str, str, str], float]:
    values: dict = {}
    for p in rows:
        for field in PRICE_FIELDS:
            value = getattr(p, field)
            if value is not None:
                key = (p.instance_type, p.region, p.zone, field)
                values[key] = max(value, values.get(key, value))
    return values


def _cell(value: float | None) -> str:
    return "" if value is None else f"{value:.6f}".rstrip("0").rstrip(".")
