"""The maintainer script that folds the dated Cloud Billing snapshot (Cyclenerd's pricing.yml) into the GCP rows:
which regions it prices, what it replaces, what it drops, which hand exclusions survive, and that a re-run
changes nothing."""

from __future__ import annotations

import shutil

import yaml

from gpufleet.catalog.data.gcp import import_cyclenerd as script
from gpufleet.catalog.datadir import SHIPPED_DIR
from gpufleet.catalog.loader import read_catalog
from gpufleet.catalog.models import Price

PRICING = {"compute": {"instance": {
    "a3-highgpu-8g": {"cpu": 208, "cost": {
        "us-central1": {"hour": 88.49, "hour_spot": 50.6095, "month_1y": 730 * 60.0, "month_3y": 730 * 40.0},
        "europe-north1": {"hour": 97.4356, "hour_spot": 10.2055},
        "africa-south1": {"hour": 120.0, "hour_spot": 40.0},
        "me-central2": {"hour": 0}}},
    "n2-standard-2": {"cost": {"us-central1": {"hour": 0.1}}}}}}
OFFERED = {"a3-highgpu-8g": {"us-central1", "europe-north1", "me-central2", "us-east4"},
           "a4-highgpu-8g": {"us-central1"}}


def old_row(name="a3-highgpu-8g", region="us-central1", zone="us-central1-a", od=43.06615, spot=26.83013):
    return Price(cloud="gcp", instance_type=name, region=region, zone=zone, on_demand=od, spot=spot)


def test_offered_regions_reads_the_semicolon_file_and_skips_deprecated_types(tmp_path):
    listing = tmp_path / "machinetyperegion.csv"
    listing.write_text("NAME;CPUS;SHARED_CPU;MEMORY_GB;DEPRECATED;ZONE\n"
                       "a3-highgpu-8g;208;False;1872.00;;us-central1\n"
                       "a2-megagpu-16g;96;False;1360.00;DEPRECATED;us-central1\n")
    assert script.offered_regions(listing) == {"a3-highgpu-8g": {"us-central1"}}


def test_records_only_where_the_type_is_offered_and_priced():
    records = script.snapshot_records(PRICING, {"a3-highgpu-8g", "a4-highgpu-8g"}, OFFERED)
    assert [(r.instance_type, r.region, r.zone) for r in records] == [
        ("a3-highgpu-8g", "europe-north1", ""), ("a3-highgpu-8g", "us-central1", "")]
    central = records[1]
    assert (central.on_demand, central.spot, central.reserved_1y, central.reserved_3y) == (88.49, 50.6095, 60.0, 40.0)
    assert records[0].reserved_1y is None


def test_fold_reprices_every_zone_drops_unoffered_regions_and_adds_region_wide_rows():
    old = [old_row(), old_row(zone="us-central1-b"), old_row(region="asia-east1", zone="asia-east1-a"),
           old_row(name="a4-highgpu-8g", od=90.216, spot=32.6064),
           old_row(name="a2-highgpu-1g", region="asia-east1", zone="asia-east1-a", od=3.79, spot=1.1)]
    rows = script.fold(old, script.snapshot_records(PRICING, {"a3-highgpu-8g"}, OFFERED), OFFERED)
    got = {(p.instance_type, p.region, p.zone): (p.on_demand, p.spot, p.source) for p in rows}
    assert got == {
        ("a3-highgpu-8g", "us-central1", "us-central1-a"): (88.49, 50.6095, "cyclenerd"),
        ("a3-highgpu-8g", "us-central1", "us-central1-b"): (88.49, 50.6095, "cyclenerd"),
        ("a3-highgpu-8g", "europe-north1", ""): (97.4356, 10.2055, "cyclenerd"),
        ("a4-highgpu-8g", "us-central1", "us-central1-a"): (90.216, 32.6064, ""),
        ("a2-highgpu-1g", "asia-east1", "asia-east1-a"): (3.79, 1.1, ""),
    }


def test_an_exclusion_survives_only_while_a_skypilot_row_still_prices_that_market():
    rows = [old_row(name="a4-highgpu-8g", region="us-east4", zone="us-east4-b"),
            Price(cloud="gcp", instance_type="a3-highgpu-8g", region="us-central1", zone="us-central1-a",
                  on_demand=88.49, spot=50.6095, source="cyclenerd")]
    entries = [{"instance_type": "a3-highgpu-8g", "region": "us-central1", "scope": "on_demand", "reason": "DWS"},
               {"instance_type": "a4-highgpu-8g", "region": "us-east4", "scope": "spot", "reason": "placeholder"}]
    assert script.still_excluded(entries, rows) == [entries[1]]


def test_the_snapshot_is_dated_by_its_own_generation_time():
    about = {"about": {"generated": "Thu Jul 30 06:13:17 2026", "timestamp": 1785391997}}
    assert script.generated_on(about).isoformat() == "2026-07-30"


def shipped_snapshot(shipped) -> tuple[dict, str]:
    """The pricing.yml and machinetyperegion.csv that the shipped rows came from, rebuilt from those rows: every
    snapshot-priced (type, region) with its markets, and every type offered where any row prices it."""
    machines: dict = {}
    for p in shipped:
        if p.source == script.SOURCE_KEY:
            cost = {"hour": p.on_demand, "hour_spot": p.spot, "month_1y": p.reserved_1y and p.reserved_1y * 730,
                    "month_3y": p.reserved_3y and p.reserved_3y * 730}
            machines.setdefault(p.instance_type, {"cost": {}})["cost"][p.region] = {
                k: v for k, v in cost.items() if v is not None}
    offered = sorted({(p.instance_type, p.region) for p in shipped})
    listing = "NAME;CPUS;SHARED_CPU;MEMORY_GB;DEPRECATED;ZONE\n" + "".join(f"{n};1;False;1.00;;{r}\n" for n, r in offered)
    return {"about": {"timestamp": 1785391997}, "compute": {"instance": machines}}, listing


def test_rerunning_the_import_writes_the_shipped_files_byte_for_byte_and_adds_g4_the_same_way(tmp_path, monkeypatch):
    """From the shipped catalog less its G4 rows, the importer (the same command line as its docstring) writes
    exactly the shipped prices.csv and prices.yaml, G4 rows included, and a second run changes nothing."""
    data = tmp_path / "data"
    shutil.copytree(SHIPPED_DIR, data, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    gcp = data / "gcp"
    shipped_csv, shipped_yaml = (gcp / "prices.csv").read_bytes(), (gcp / "prices.yaml").read_bytes()
    shipped = [p for p in read_catalog(data).raw_prices if p.cloud == "gcp"]
    assert sum(p.instance_type.startswith("g4-standard-") for p in shipped) == 140  # 4 whole-GPU sizes, 3 slices
    lines = shipped_csv.decode().splitlines(keepends=True)
    (gcp / "prices.csv").write_text("".join(line for line in lines if not line.startswith("g4-standard-")))
    pricing, listing = shipped_snapshot(shipped)
    (tmp_path / "pricing.yml").write_text(yaml.safe_dump(pricing))
    (tmp_path / "machinetyperegion.csv").write_text(listing)
    monkeypatch.setattr(script, "HERE", gcp)
    for _ in range(2):
        script.main(str(tmp_path / "pricing.yml"), str(tmp_path / "machinetyperegion.csv"), "fd66b26", "8bf3293",
                    "2026-08-17")
        assert (gcp / "prices.csv").read_bytes() == shipped_csv
        assert (gcp / "prices.yaml").read_bytes() == shipped_yaml
