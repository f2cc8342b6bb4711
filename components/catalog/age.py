"""How old the catalog's prices are. Every plan shows the age and warns past `STALE_AFTER_DAYS`.

`today` is always passed in (the plan passes `date.today()`), so output is deterministic under test.
"""

from __future__ import annotations

from datetime import date

from .loader import Catalog, load_catalog
from .models import PriceSource

STALE_AFTER_DAYS = 30


def oldest_source(catalog: Catalog | None = None, cloud: str | None = None) -> PriceSource | None:
    """The price source (of `cloud`, or of every cloud) whose prices can be the oldest: an undated source without a
    bound first, then by date or earliest possible date; None without prices."""
    catalog = catalog or load_catalog()
    used = {(p.cloud, p.source) for p in catalog.raw_prices if cloud is None or p.cloud == cloud}
    sources = [s for s in (catalog.source_of_key(c, key) for c, key in sorted(used)) if s is not None]
    return min(sources, key=lambda s: (s.age_basis, bool(s.snapshot_date)), default=None)


def snapshot_date(catalog: Catalog | None = None, cloud: str | None = None) -> date | None:
    """The date the oldest prices are from, or the earliest they can be from; None without prices or any date."""
    oldest = oldest_source(catalog, cloud)
    return oldest.earliest if oldest else None


def catalog_age_days(today: date, catalog: Catalog | None = None, cloud: str | None = None) -> int | None:
    """Days from the oldest price snapshot (or the earliest it can be from) to `today`; None when the catalog has no
    prices or no date is known."""
    oldest = oldest_source(catalog, cloud)
    return oldest.age_days(today) if oldest else None


def catalog_age_line(today: date, catalog: Catalog | None = None, cloud: str | None = None) -> str:
    """One line for the plan: the snapshot date and the age, e.g. "catalog prices for aws from 2026-06-30 (155 days
    old)"; an undated snapshot says so, with the most its age can be."""
    catalog = catalog or load_catalog()
    oldest = oldest_source(catalog, cloud)
    where = f" for {cloud}" if cloud else ""
    if oldest is None:
        return f"catalog has no prices{where}"
    return f"catalog prices{where} {_when(oldest, today)}"


def catalog_age_warning(today: date, catalog: Catalog | None = None, cloud: str | None = None) -> str | None:
    """A warning when the prices are (or can be) older than `STALE_AFTER_DAYS`, or have no date at all; else None."""
    catalog = catalog or load_catalog()
    oldest = oldest_source(catalog, cloud)
    age = oldest.age_days(today) if oldest else None
    if oldest is None or (oldest.snapshot_date and age is not None and age <= STALE_AFTER_DAYS):
        return None
    what = f"the catalog's {cloud + ' ' if cloud else ''}prices"
    if oldest.snapshot_date:
        state = f"date from {oldest.snapshot_date.isoformat()} ({age} days old; older than {STALE_AFTER_DAYS})"
    elif oldest.not_before:
        state = (f"have no recorded date; they are from {oldest.not_before.isoformat()} or later (up to {age} days "
                 "old)")
    else:
        state = "have no recorded date (their age is unknown)"
    return (f"{what} {state}; costs may be off. Refresh with "
            f"`gpufleet catalog refresh --cloud {cloud or 'aws|azure|gcp'}`")


def _when(source: PriceSource, today: date) -> str:
    if source.snapshot_date:
        return f"from {source.snapshot_date.isoformat()} ({source.age_days(today)} days old)"
    if source.not_before:
        return (f"from an undated snapshot, not before {source.not_before.isoformat()} "
                f"(up to {source.age_days(today)} days old)")
    return "from an undated snapshot (age unknown)"


def data_line(catalog: Catalog) -> str:
    """Which catalog folder the prices were read from, and what chose it."""
    return f"catalog data: {catalog.origin} ({catalog.folder})"


def catalog_age_notes(today: date | None = None, cloud: str | None = None,
                      catalog: Catalog | None = None) -> list[str]:
    """What the plan prints under its cost table: the age line, and the warning when the prices are stale.

    One line per cloud with prices (or only `cloud`'s). `today` defaults to `date.today()`; pass it for
    deterministic output.
    """
    today = today or date.today()
    catalog = catalog or load_catalog()
    clouds = [cloud] if cloud else sorted({p.cloud for p in catalog.raw_prices})
    notes = [data_line(catalog)]
    for name in clouds:
        warning = catalog_age_warning(today, catalog, name)
        notes += [catalog_age_line(today, catalog, name), *([f"warning: {warning}"] if warning else [])]
    return notes
