"""Folds the dated European rows of Azure Pricing Radar into prices.csv, beside the undated US SkyPilot rows.

Run from the repository root with the `data/latest/vm-*.json` files of github.com/andy-diericks/azure-pricing-radar
and its `data/latest/last-checked.json` (`git show <commit>:data/latest/vm-eu-west.json > vm-eu-west.json`, ...):
    .venv/bin/python components/catalog/data/azure/import_pricing_radar.py cf741f2 last-checked.json vm-*.json

Why this source: it records the public Azure Retail Prices API every 6 hours for West Europe, North Europe, Sweden
Central, France Central and Belgium Central and commits what it read, so its prices carry a date (the day of the
commit given, when its last check found them unchanged), where the SkyPilot copy has none and covers US regions only.
Each file maps `<meter id>|<sku id>|<type>|<term>` to an API item without `armSkuName`: a size is matched by its
`skuName` with "Standard_", spaces and underscores removed ("ND96isrH200v5", "NC4as T4 v3"), Linux only (a
`productName` without "Windows"), per hour, pay-as-you-go (`Consumption`); "... Spot" is the Spot meter and
"... Low Priority" (Batch) is skipped. A Spot meter priced as pay-as-you-go is kept as read: the catalog's checks flag
it. Prices are region-wide, like every Azure row.
"""

from __future__ import annotations

import json
import re
import sys
from datetime import date, datetime, timezone
from pathlib import Path

import yaml

from gpufleet.catalog.loader import read_catalog
from gpufleet.catalog.refresh.merge import merge, to_csv
from gpufleet.catalog.refresh.records import PriceRecord
from gpufleet.catalog.refresh.sources_yaml import set_source

HERE = Path(__file__).parent
SOURCE_KEY = "azure-pricing-radar"
REPOSITORY = "andy-diericks/azure-pricing-radar"


def size_key(name: str) -> str:
    """"Standard_ND96isr_H200_v5", "ND96isrH200v5" and "ND96isr H200 v5" all give "nd96isrh200v5"."""
    return re.sub(r"[^a-z0-9]", "", name.lower().removeprefix("standard_"))


def radar_records(files: dict[str, dict], sizes: set[str]) -> list[PriceRecord]:
    """One region-wide record per (size, region) with the pay-as-you-go and Spot prices the files hold."""
    by_key = {size_key(name): name for name in sizes}
    prices: dict[tuple[str, str], dict[str, float]] = {}
    for items in files.values():
        for item_key, item in sorted(items.items()):
            kind = item_key.split("|")[2] if item_key.count("|") >= 2 else ""
            name = item.get("skuName", "")
            if (kind != "Consumption" or item.get("unitOfMeasure") != "1 Hour" or "Windows" in item.get("productName", "")
                    or name.endswith(" Low Priority")):
                continue
            spot = name.endswith(" Spot")
            size = by_key.get(size_key(name.removesuffix(" Spot")))
            if size is None:
                continue
            market = prices.setdefault((size, item["armRegionName"]), {})
            field = "spot" if spot else "on_demand"
            if field in market and market[field] != item["retailPrice"]:
                raise SystemExit(f"{size} in {item['armRegionName']}: two {field} prices "
                                 f"({market[field]} and {item['retailPrice']}); pick one by hand")
            market[field] = float(item["retailPrice"])
    return [PriceRecord(instance_type=size, region=region, on_demand=markets.get("on_demand"), spot=markets.get("spot"))
            for (size, region), markets in sorted(prices.items())]


def checked_on(last_checked: dict) -> date:
    """The day of the tracker's last check (`{"at": "2026-08-22T20:59:40.623529+00:00"}`): every price it holds
    was read again then."""
    return datetime.fromisoformat(last_checked["at"]).astimezone(timezone.utc).date()


def main(commit: str, last_checked_path: str, *paths: str) -> None:
    checked = checked_on(json.loads(Path(last_checked_path).read_text()))
    files = {Path(path).name: json.loads(Path(path).read_text()) for path in paths}
    sizes = {row["name"] for row in yaml.safe_load((HERE / "instances.yaml").read_text())["instances"]}
    csv_path, meta_path = HERE / "prices.csv", HERE / "prices.yaml"
    records = radar_records(files, sizes)
    old_rows = [p for p in read_catalog(HERE.parent).raw_prices if p.cloud == "azure"]
    rows, _report = merge(old_rows, records, "azure", SOURCE_KEY)
    csv_path.write_text(to_csv(rows))
    description = (f"{REPOSITORY} data/latest/vm-*.json @ {commit} (Azure Retail Prices API read every 6 hours; "
                   f"unchanged through its last check on {checked}): West Europe, North Europe, Sweden Central, "
                   "France Central, Belgium Central")
    meta_path.write_text(set_source(meta_path.read_text(), SOURCE_KEY, description, checked))
    print(f"{len(records)} (size, region) records from {len(files)} files")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], *sys.argv[3:])
