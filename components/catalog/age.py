"""How old the catalog's prices are. Every plan shows the age and warns past `STALE_AFTER_DAYS`.

`today` is always passed in (the plan passes `date.today()`), so output is deterministic under test.
"""

from __future__ import annotations

from datetime import date

from .loader import Catalog, load_catalog

STALE_AFTER_DAYS = 30


def snapshot_date(catalog: Catalog | None = None, cloud: str | None = None) -> date | None:
    """The oldest snapshot among the price sources (of `cloud`, or of every cloud); None without prices."""
    catalog = catalog or load_catalog()
    used = {(p.cloud, p.source) for p in catalog.raw_prices if cloud is None or p.cloud == cloud}
    dates = [catalog.source_of_key(c, key).snapshot_date for c, key in used if catalog.source_of_key(c, key)]
    return min(dates, default=None)


def catalog_age_days(today: date, catalog: Catalog | None = None, cloud: str | None = None) -> int | None:
    """Days from the oldest price snapshot to `today`; None when the catalog has no prices."""
    oldest = snapshot_date(catalog, cloud)
    return None if oldest is None else (today - oldest).days


def catalog_age_line(today: date, catalog: Catalog | None = None, cloud: str | None = None) -> str:
    """One line for the plan: the snapshot date and the age, e.g. "catalog prices from 2026-06-30 (155 days old)"."""
    oldest = snapshot_date(catalog, cloud)
    if oldest is None:
        return f"catalog has no prices{' for ' + cloud if cloud else ''}"
    where = f" for {cloud}" if cloud else ""
    return f"catalog prices{where} from {oldest.isoformat()} ({(today - oldest).days} days old)"


def catalog_age_warning(today: date, catalog: Catalog | None = None, cloud: str | None = None) -> str | None:
    """A warning when the prices are older than `STALE_AFTER_DAYS`, else None."""
    age = catalog_age_days(today, catalog, cloud)
    if age is None or age <= STALE_AFTER_DAYS:
        return None
    oldest = snapshot_date(catalog, cloud)
    return (f"the catalog's {cloud + ' ' if cloud else ''}prices date from {oldest.isoformat()} ({age} days old; "
            f"older than {STALE_AFTER_DAYS}); costs may be off. Refresh with "
            f"`gpufleet catalog refresh --cloud {cloud or 'aws|azure|gcp'}`")


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
