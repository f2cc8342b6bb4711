"""How old the catalog's prices are. Every plan shows the age and warns past `STALE_AFTER_DAYS`.

`today` is always passed in (the plan passes `date.today()`), so output is deterministic under test.
"""

from __future__ import annotations

from datetime import date

from .loader import Catalog, load_catalog
from .models import Price, PriceSource

Location = tuple[str, str, str]
"""(instance type, region, zone): the place a plan is priced at; zone "" where the plan has none."""

STALE_AFTER_DAYS = 30


def oldest_source(catalog: Catalog | None = None, cloud: str | None = None,
                  location: Location | None = None) -> PriceSource | None:
    """The price source (of `cloud`, or of every cloud) whose prices can be the oldest: an undated source without a
    bound first, then by date or earliest possible date; None without prices."""
    sources = used_sources(catalog or load_catalog(), cloud, location)
    return sources[-1] if sources else None


def snapshot_date(catalog: Catalog | None = None, cloud: str | None = None) -> date | None:
    """The date the oldest prices are from, or the earliest they can be from; None without prices or any date."""
    oldest = oldest_source(catalog, cloud)
    return oldest.earliest if oldest else None


def catalog_age_days(today: date, catalog: Catalog | None = None, cloud: str | None = None) -> int | None:
    """Days from the oldest price snapshot (or the earliest it can be from) to `today`; None when the catalog has no
    prices or no date is known."""
    oldest = oldest_source(catalog, cloud)
    return oldest.age_days(today) if oldest else None


def used_sources(catalog: Catalog, cloud: str | None = None, location: Location | None = None) -> list[PriceSource]:
    """The price sources some row of `cloud` (or of any cloud) names, newest first, the oldest last. With a
    `location` (instance type, region, zone), only the rows that price it: its zone's and the region-wide ones."""
    used = {(p.cloud, p.source) for p in catalog.raw_prices if (cloud is None or p.cloud == cloud)
            and (location is None or _prices_location(p, location))}
    sources = {s for s in (catalog.source_of_key(c, key) for c, key in sorted(used)) if s is not None}
    return sorted(sources, key=lambda s: (s.age_basis, bool(s.snapshot_date), s.source), reverse=True)


def catalog_age_line(today: date, catalog: Catalog | None = None, cloud: str | None = None,
                     location: Location | None = None) -> str:
    """One line for the plan: each snapshot's date and age, newest first, e.g. "catalog prices for gcp from
    2026-07-30 (126 days old) and from an undated snapshot (age unknown)"; an undated snapshot says so, with the most
    its age can be. Sources of the same date are named once."""
    catalog = catalog or load_catalog()
    where = (f" for {cloud}" if cloud else "") + (f" ({_place(location)})" if location else "")
    sources = used_sources(catalog, cloud, location)
    if not sources:
        return f"catalog has no prices{where}"
    whens = list(dict.fromkeys(_when(source, today) for source in sources))
    return f"catalog prices{where} " + (whens[0] if len(whens) == 1 else ", ".join(whens[:-1]) + " and " + whens[-1])


def catalog_age_warning(today: date, catalog: Catalog | None = None, cloud: str | None = None,
                        location: Location | None = None) -> str | None:
    """A warning when the prices are (or can be) older than `STALE_AFTER_DAYS`, or have no date at all; else None."""
    catalog = catalog or load_catalog()
    oldest = oldest_source(catalog, cloud, location)
    age = oldest.age_days(today) if oldest else None
    if oldest is None or (oldest.snapshot_date and age is not None and age <= STALE_AFTER_DAYS):
        return None
    what = f"the catalog's {cloud + ' ' if cloud else ''}prices" + (f" for {_place(location)}" if location else "")
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
                      catalog: Catalog | None = None, location: Location | None = None) -> list[str]:
    """What the plan prints under its cost table: the age line, and the warning when the prices are stale.

    One line per cloud with prices (or only `cloud`'s). A plan passes its `location` (instance type, region, zone):
    the line then dates the prices of that location, when the catalog has any, not the cloud's oldest elsewhere.
    `today` defaults to `date.today()`; pass it for deterministic output.
    """
    today = today or date.today()
    catalog = catalog or load_catalog()
    clouds = [cloud] if cloud else sorted({p.cloud for p in catalog.raw_prices})
    if location and not used_sources(catalog, cloud, location):
        location = None
    notes = [data_line(catalog)]
    for name in clouds:
        warning = catalog_age_warning(today, catalog, name, location)
        notes += [catalog_age_line(today, catalog, name, location), *([f"warning: {warning}"] if warning else [])]
    return notes


def _place(location: Location) -> str:
    """"g2-standard-8 in us-central1-a", "p5.48xlarge in us-east-2 zone use2-az2", "NC24ads in eastus"."""
    instance_type, region, zone = location
    where = zone if zone and zone.startswith(region) else f"{region} zone {zone}" if zone else region
    return f"{instance_type} in {where}"


def _prices_location(price: Price, location: Location) -> bool:
    instance_type, region, zone = location
    return price.instance_type == instance_type and price.region == region and price.zone in ("", zone)
