"""Sanity checks on every catalog row. Public price data has errors; a row that fails a check is flagged.

Flagged rows are excluded from selection and shown with their reason (`gpufleet catalog --flagged`):
- an instance type whose GPU is unknown, or whose GPU count or memory contradicts the GPU's spec, or whose
  EFA interfaces do not fit its fabric and network cards;
- a price of zero or below (a source's placeholder for "unknown", as SkyPilot writes 0 for unpriced sizes);
- a spot price above on-demand (beyond rounding), or equal to it (no spot discount: no spot pool or no spot meter);
- a spot price whose discount is deeper than its cloud ever gives (`SPOT_RATIO`, the one spot rule);
- an on-demand price far from the same type's price in the cloud's other regions;
- a row the catalog's price file lists under `excluded:` with the reason.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from .models import Flag, GpuModel, InstanceType, Price

# A GPU's memory as a cloud reports it may differ from the datasheet (GB vs GiB, reserved ECC memory).
GPU_MEMORY_TOLERANCE = 0.10
# Spot above on-demand by more than this is a data error, not rounding.
SPOT_ROUNDING_USD = 0.005
SPOT_ROUNDING_RATIO = 0.01
# On-demand prices of one type differ between regions by well under 2x; spot prices swing more.
ON_DEMAND_OUTLIER = (0.55, 1.8)
MIN_REGIONS_FOR_OUTLIER = 3
# The one spot rule: spot / on-demand must lie in [floor, 1). The floor is 1 minus the deepest discount the cloud
# advertises (AWS "up to 90%", Azure "up to 90%", GCP "up to 91%"), which is also the deepest seen in its data
# (catalog README, "Spot sanity rule"). The same discount gets the same verdict for every type, region and zone.
SPOT_RATIO = {"aws": 0.10, "azure": 0.10, "gcp": 0.09}
SPOT_RATIO_ROUNDING = 0.005
MARKETS = ("on_demand", "spot", "reserved_1y", "reserved_3y")  # the Price fields a flag's scope can name


def check_instances(gpus: Mapping[str, GpuModel], instances: Iterable[InstanceType]) -> list[Flag]:
    """Instance rows whose GPU facts contradict the GPU's spec."""
    flags = []
    for row in instances:
        gpu = gpus.get(row.gpu)
        if gpu is None:
            flags.append(_row_flag(row, "unknown-gpu", f"GPU {row.gpu!r} is not in the catalog's GPU list"))
            continue
        if row.gpus not in gpu.node_gpu_counts:
            flags.append(_row_flag(row, "gpu-count", f"{row.gpus} x {gpu.model} per node contradicts the GPU's spec: "
                                   f"{gpu.model} comes {'/'.join(map(str, gpu.node_gpu_counts))} to a node"))
        expected = gpu.memory_gib * row.gpu_fraction  # a vGPU slice has its share of the GPU's memory
        if abs(row.gpu_memory_gib - expected) > GPU_MEMORY_TOLERANCE * expected:
            share = f"{row.fraction_label} of " if row.is_vgpu_slice else ""
            flags.append(_row_flag(row, "gpu-memory", f"{row.gpu_memory_gib} GiB per GPU contradicts the {share}"
                                   f"{gpu.model} spec of {gpu.memory_gib} GiB"))
        if row.is_vgpu_slice and (row.gpus != 1 or not 0 < row.gpu_fraction or not row.needs_grid_driver):
            flags.append(_row_flag(row, "vgpu-slice", f"a {row.gpu_fraction:g} GPU slice must have gpus: 1, a fraction "
                                   "above 0 and gpu_driver: grid"))
        if (row.fabric == "efa") != (row.efa_interfaces > 0) or row.efa_interfaces > max(row.network_cards, 1) + 1:
            flags.append(_row_flag(row, "network-layout", f"fabric {row.fabric or 'tcp'} with {row.efa_interfaces} EFA "
                                   f"interface(s) on {row.network_cards} network card(s) is not a possible layout"))
    return flags


def check_prices(prices: Iterable[Price]) -> list[Flag]:
    """Prices of zero or below, spot against on-demand, then each price against the type's other regions and zones."""
    prices = list(prices)
    not_positive = _not_positive(prices)
    prices = apply_flags(prices, not_positive)
    flags = not_positive + _spot_vs_on_demand(prices)
    by_type: dict[tuple[str, str], list[Price]] = {}
    for price in prices:
        by_type.setdefault((price.cloud, price.instance_type), []).append(price)
    for rows in by_type.values():
        flags += _on_demand_outliers(rows)
    return flags


def excluded_flags(cloud: str, entries: Iterable) -> list[Flag]:
    """Rows a price file refuses by hand: "TYPE REGION [ZONE]: reason" or a mapping with those keys."""
    flags = []
    for entry in entries:
        if isinstance(entry, str):
            where, _, reason = entry.partition(":")
            parts = where.split()
            entry = {"instance_type": parts[0], "region": parts[1] if len(parts) > 1 else "",
                     "zone": parts[2] if len(parts) > 2 else "", "reason": reason.strip()}
        flags.append(Flag(cloud=cloud, instance_type=entry["instance_type"], region=entry.get("region", ""),
                          zone=entry.get("zone", ""), scope=entry.get("scope", "row"), kind="excluded",
                          reason=entry.get("reason") or "excluded by the catalog's price file"))
    return flags


def apply_flags(prices: Iterable[Price], flags: Iterable[Flag]) -> list[Price]:
    """Prices with flagged markets removed; rows flagged as a whole are dropped."""
    by_instance: dict[tuple[str, str], list[Flag]] = {}
    for flag in flags:
        by_instance.setdefault((flag.cloud, flag.instance_type), []).append(flag)
    clean = []
    for price in prices:
        scopes = {f.scope for f in by_instance.get((price.cloud, price.instance_type), ()) if f.covers(price)}
        if "row" in scopes:
            continue
        clean.append(replace(price, **{market: None for market in MARKETS if market in scopes}))
    return clean


def _not_positive(prices: list[Price]) -> list[Flag]:
    """A price of zero or below is a placeholder, never a real price: only that market is refused."""
    return [_price_flag(p, market, "price-not-positive", f"{market.replace('_', '-')} ${value:g}/h is not a price "
                        "(zero or below); treated as missing")
            for p in prices for market in MARKETS if (value := getattr(p, market)) is not None and value <= 0]


def _row_flag(row: InstanceType, kind: str, reason: str) -> Flag:
    return Flag(cloud=row.cloud, instance_type=row.name, region="", zone="", scope="row", kind=kind, reason=reason)


def _price_flag(price: Price, scope: str, kind: str, reason: str, zone: str | None = None) -> Flag:
    return Flag(cloud=price.cloud, instance_type=price.instance_type, region=price.region,
                zone=price.zone if zone is None else zone, scope=scope, kind=kind, reason=reason)


def _region_on_demand(rows: list[Price]) -> dict[str, float]:
    """One on-demand price per region: the median of the region's rows (they normally agree)."""
    from statistics import median  # with fractions and decimal, 3 ms that a plan reading the cached catalog skips

    by_region: dict[str, list[float]] = {}
    for p in rows:
        if p.on_demand is not None:
            by_region.setdefault(p.region, []).append(p.on_demand)
    return {region: median(values) for region, values in by_region.items()}


def _spot_vs_on_demand(prices: list[Price]) -> list[Flag]:
    on_demand = {}
    for key, rows in _group(prices, lambda p: (p.cloud, p.instance_type)).items():
        for region, value in _region_on_demand(rows).items():
            on_demand[key + (region,)] = value
    flags = []
    for p in prices:
        reference = p.on_demand if p.on_demand is not None else on_demand.get((p.cloud, p.instance_type, p.region))
        if p.spot is None or reference is None:
            continue
        if p.spot > reference * (1 + SPOT_ROUNDING_RATIO) + SPOT_ROUNDING_USD:
            flags.append(_price_flag(p, "spot", "spot-above-on-demand",
                                     f"spot ${p.spot:g}/h is above on-demand ${reference:g}/h"))
        elif p.spot / reference < SPOT_RATIO.get(p.cloud, 0.0) - SPOT_RATIO_ROUNDING:
            flags.append(_price_flag(p, "spot", "spot-ratio",
                                     f"spot ${p.spot:g}/h is {1 - p.spot / reference:.0%} below on-demand "
                                     f"${reference:g}/h; {p.cloud} spot discounts reach at most "
                                     f"{1 - SPOT_RATIO[p.cloud]:.0%}"))
        elif abs(p.spot - reference) <= SPOT_ROUNDING_USD + reference * 0.001:
            flags.append(_price_flag(p, "spot", "spot-equals-on-demand",
                                     f"spot ${p.spot:g}/h equals on-demand: no spot discount (no spot pool or no spot "
                                     "meter); treated as missing"))
    return flags


def _on_demand_outliers(rows: list[Price]) -> list[Flag]:
    from statistics import median

    regions = _region_on_demand(rows)
    if len(regions) < MIN_REGIONS_FOR_OUTLIER:
        return []
    middle = median(regions.values())
    low, high = ON_DEMAND_OUTLIER
    flags = []
    for region, value in sorted(regions.items()):
        ratio = value / middle
        if not low <= ratio <= high:
            sample = next(p for p in rows if p.region == region)
            flags.append(_price_flag(sample, "on_demand", "on-demand-outlier",
                                     f"on-demand ${value:g}/h is {ratio:.2f}x the median ${middle:g}/h of its "
                                     f"{len(regions)} regions (accepted {low}x-{high}x)", zone=""))
    return flags


def _group(items, key) -> dict:
    groups: dict = {}
    for item in items:
        groups.setdefault(key(item), []).append(item)
    return groups
