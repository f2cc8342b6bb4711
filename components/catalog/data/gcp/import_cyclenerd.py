"""Folds a dated public snapshot of Google's list prices into prices.csv, over the undated SkyPilot rows.

Run from the repository root, after derive_prices.py, with two files of github.com/Cyclenerd/
google-cloud-pricing-cost-calculator (`git show <commit>:pricing.yml`, `git show <commit>:tools/machinetyperegion.csv`):
    .venv/bin/python components/catalog/data/gcp/import_cyclenerd.py pricing.yml machinetyperegion.csv \
        fd66b26 8bf3293 2026-08-17

Why this source: its `pricing.yml` is generated weekly from the Cloud Billing Catalog API and states when
(`about.generated`), so the prices carry a true date, where the SkyPilot snapshot has none. Each machine type is
priced whole: vCPU + RAM + GPU SKUs of its series, plus the Local SSD that A2 Ultra and A3 machine types always
come with (billed like any Local SSD), on-demand, Spot and the 1- and 3-year resource commitments (`month_1y`,
`month_3y`, divided by 730 hours as the source multiplies). Google bills per region, so a region's price is written
to every zone the rows list for it (the refresh's `spread_to_zones`), or region-wide where no zone is known.

The same repository's `tools/machinetyperegion.csv` lists the regions each machine type is offered in (from the
Compute Engine API). A price is imported only where the type is offered; rows of either source in a region the
list no longer names for the type are dropped, so `select` does not offer a type where it cannot be created.
Types the snapshot does not price (A3 Ultra, A4: their GPU SKUs are not mapped there) keep their SkyPilot rows.
A hand-excluded SkyPilot market (prices.yaml `excluded:`) that this snapshot now prices loses its exclusion.
"""

from __future__ import annotations

import csv
import sys
from collections import defaultdict
from datetime import date, datetime, timezone
from pathlib import Path

import yaml

from gpufleet.catalog.loader import read_catalog
from gpufleet.catalog.refresh.merge import merge, spread_to_zones, to_csv
from gpufleet.catalog.refresh.records import PriceRecord
from gpufleet.catalog.refresh.sources_yaml import set_source

HERE = Path(__file__).parent
SOURCE_KEY = "cyclenerd"
REPOSITORY = "Cyclenerd/google-cloud-pricing-cost-calculator"
HOURS_PER_MONTH = 730


def offered_regions(path: Path) -> dict[str, set[str]]:
    """Machine type -> regions (machinetyperegion.csv is `;`-separated; its ZONE column holds the region)."""
    regions: defaultdict[str, set[str]] = defaultdict(set)
    with path.open(newline="") as handle:
        for row in csv.DictReader(handle, delimiter=";"):
            if not row.get("DEPRECATED"):
                regions[row["NAME"]].add(row["ZONE"])
    return regions


def snapshot_records(pricing: dict, types: set[str], offered: dict[str, set[str]]) -> list[PriceRecord]:
    """One region-wide record per (type, region) the snapshot prices and the type is offered in."""
    records = []
    machines = pricing["compute"]["instance"]
    for name in sorted(types & set(machines)):
        for region, cost in sorted(machines[name]["cost"].items()):
            if region not in offered.get(name, ()) or not cost.get("hour"):
                continue
            records.append(PriceRecord(
                instance_type=name, region=region, on_demand=_hourly(cost.get("hour")),
                spot=_hourly(cost.get("hour_spot")), reserved_1y=_monthly(cost.get("month_1y")),
                reserved_3y=_monthly(cost.get("month_3y"))))
    return records


def fold(old_rows, records: list[PriceRecord], offered: dict[str, set[str]]):
    """The merged rows: the snapshot's markets replace the old ones; regions where a type is not offered go."""
    listed = set(offered)
    kept = [p for p in old_rows if p.instance_type not in listed or p.region in offered[p.instance_type]]
    rows, _report = merge(kept, spread_to_zones(records, kept), "gcp", SOURCE_KEY)
    return rows


def still_excluded(entries: list[dict], rows) -> list[dict]:
    """Hand exclusions that still name a market some SkyPilot row prices."""
    priced = {(p.instance_type, p.region, market) for p in rows if not p.source
              for market in ("on_demand", "spot") if getattr(p, market) is not None}
    return [e for e in entries if (e["instance_type"], e.get("region", ""), e.get("scope", "row")) in priced]


def generated_on(pricing: dict) -> date:
    """The UTC day the file was generated (`about.timestamp`, the epoch seconds behind `about.generated`)."""
    return datetime.fromtimestamp(int(pricing["about"]["timestamp"]), tz=timezone.utc).date()


def main(pricing_path: str, regions_path: str, pricing_commit: str, regions_commit: str, regions_date: str) -> None:
    pricing = yaml.load(Path(pricing_path).read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    generated = generated_on(pricing)
    offered = offered_regions(Path(regions_path))
    meta_path, csv_path = HERE / "prices.yaml", HERE / "prices.csv"
    old_rows = [p for p in read_catalog(HERE.parent).raw_prices if p.cloud == "gcp"]
    types = {p.instance_type for p in old_rows} | _instance_names()
    rows = fold(old_rows, snapshot_records(pricing, types, offered), offered)
    csv_path.write_text(to_csv(rows))
    text = meta_path.read_text()
    meta = yaml.safe_load(text)
    head, _, _ = text.partition("\nexcluded:")
    excluded = still_excluded(meta.get("excluded") or [], rows)
    text = head + "\n" + yaml.safe_dump({"excluded": excluded}, sort_keys=False, width=200)
    description = (f"{REPOSITORY} pricing.yml @ {pricing_commit} (generated {generated} from the Cloud Billing "
                   f"Catalog API: vCPU + RAM + GPU + bundled Local SSD per region), offered regions from "
                   f"tools/machinetyperegion.csv @ {regions_commit} ({regions_date})")
    meta_path.write_text(set_source(text, SOURCE_KEY, description, generated))
    print(f"{sum(1 for p in rows if p.source == SOURCE_KEY)} rows priced by the snapshot, "
          f"{sum(1 for p in rows if not p.source)} SkyPilot rows kept, {len(excluded)} exclusions kept")


def _instance_names() -> set[str]:
    return {row["name"] for row in yaml.safe_load((HERE / "instances.yaml").read_text())["instances"]}


def _hourly(value) -> float | None:
    return None if value in (None, 0) else round(float(value), 5)


def _monthly(value) -> float | None:
    return None if value in (None, 0) else round(float(value) / HOURS_PER_MONTH, 5)


if __name__ == "__main__":
    main(*sys.argv[1:6])
