"""The shared-filesystem services table (`services.yaml`): sizes, throughput tiers, regions and list prices.

Separate from `gpufleet.catalog` (GPU instance offers): these rows describe the storage services each cloud's
component creates for `storage.shared`, and price them for the cost table.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import yaml

SERVICES_FILE = Path(__file__).parent / "services.yaml"
HOURS_PER_MONTH = 730


@dataclass(frozen=True)
class Sizing:
    """Valid capacities in GiB: any of `first`, then multiples of `step` (up to `max`); none when elastic."""

    first: tuple[int, ...] = ()
    step: int = 1
    max: int | None = None
    elastic: bool = False

    def smallest(self) -> int | None:
        return None if self.elastic else self.first[0]

    def accepts(self, gib: int) -> bool:
        if self.elastic:
            return False
        if self.max is not None and gib > self.max:
            return False
        return gib in self.first or (gib >= self.first[0] and gib % self.step == 0)

    def describe(self) -> str:
        if self.elastic:
            return "no capacity: the service grows and shrinks with the data"
        firsts = ", ".join(f"{size:,}" for size in self.first)
        tail = f" up to {self.max:,}" if self.max else ""
        if self.step == 1:
            return f"at least {self.first[0]:,} GiB{tail}"
        return f"{firsts} GiB or a multiple of {self.step:,} GiB{tail}"


@dataclass(frozen=True)
class StorageService:
    cloud: str
    kind: str
    service: str
    tiers: tuple[int, ...]
    default_tier: int | None
    regions: tuple[str, ...] | None
    prices: dict
    prices_by_region: dict
    price_region: str
    price_source: str
    price_date: str
    verified: bool
    _sizing: dict

    def sizing(self, tier: int | None) -> Sizing:
        by_tier = self._sizing.get("capacity_by_tier")
        raw = by_tier[tier] if by_tier else self._sizing["capacity"]
        return Sizing(first=tuple(raw.get("first", ())), step=raw.get("step", 1), max=raw.get("max"),
                      elastic=bool(raw.get("elastic")))

    def priced_region(self, region: str | None) -> str:
        """The region whose list price the cost table uses: the stack's own where the catalog has it."""
        return region if region in self.prices_by_region else self.price_region

    def price_per_gib_month(self, tier: int | None, region: str | None = None) -> float | None:
        """The list price of `tier` (or the service's one price) in `priced_region(region)`, None where there is none."""
        prices = self.prices_by_region.get(self.priced_region(region), self.prices)
        price = prices.get(tier, prices.get("default"))
        return None if price is None else float(price)


@functools.lru_cache(maxsize=1)
def _table() -> dict:
    return yaml.safe_load(SERVICES_FILE.read_text())


def storage_service(cloud: str, kind: str) -> StorageService:
    row = _table()[cloud][kind]
    throughput = row.get("throughput") or {}
    by_region = row.get("price_per_gib_month_by_region", {})
    return StorageService(
        cloud=cloud, kind=kind, service=row["service"], tiers=tuple(throughput.get("tiers", ())),
        default_tier=throughput.get("default"), regions=tuple(row["regions"]) if "regions" in row else None,
        prices=row.get("price_per_gib_month") or by_region[row["price_region"]], prices_by_region=by_region,
        price_region=row["price_region"], price_source=row["price_source"],
        price_date=str(row["price_date"]), verified=bool(row.get("verified")),
        _sizing={key: row[key] for key in ("capacity", "capacity_by_tier") if key in row})


@dataclass(frozen=True)
class StorageCost:
    """One cost-table row for the shared filesystem."""

    service: str
    capacity_gib: int
    tier: int | None
    usd_per_month: float | None
    """None when the catalog has no list price for the tier."""
    usd_per_hour: float | None
    source: str
    date: str
    region: str
    verified: bool


def shared_storage_cost(cloud: str, kind: str, capacity_gib: int | None, tier: int | None,
                        region: str | None = None) -> StorageCost | None:
    """$/month of a created filesystem in `region` from its catalog row; None for an elastic service without a size."""
    service = storage_service(cloud, kind)
    if capacity_gib is None:
        return None
    price = service.price_per_gib_month(tier, region)
    monthly = None if price is None else round(capacity_gib * price, 2)
    return StorageCost(service=service.service, capacity_gib=capacity_gib, tier=tier, usd_per_month=monthly,
                       usd_per_hour=None if monthly is None else round(monthly / HOURS_PER_MONTH, 4),
                       source=service.price_source,
                       date=service.price_date, region=service.priced_region(region), verified=service.verified)
