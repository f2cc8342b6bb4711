"""The maintainer script that reads Azure Pricing Radar's recorded Retail Prices API items into Azure rows: which
meters count, how sizes are matched, and that two prices for one market stop the import."""

from __future__ import annotations

import pytest

from gpufleet.catalog.data.azure import import_pricing_radar as script

SIZES = {"Standard_ND96isr_H200_v5", "Standard_NC4as_T4_v3"}


def item(sku, price, product="Virtual Machines NDsrH200v5 Series", region="northeurope", unit="1 Hour"):
    return {"armRegionName": region, "meterName": sku, "productName": product, "retailPrice": price, "skuName": sku,
            "unitOfMeasure": unit, "unitPrice": price}


def keyed(*pairs):
    return {f"DZH318Z0{n:04d}/0001|meter-{n}|{kind}|": value for n, (kind, value) in enumerate(pairs)}


@pytest.mark.parametrize("name", ["Standard_ND96isr_H200_v5", "ND96isrH200v5", "ND96isr H200 v5"])
def test_size_names_in_every_spelling_match(name):
    assert script.size_key(name) == "nd96isrh200v5"


def test_linux_pay_as_you_go_and_spot_meters_are_read_and_the_rest_skipped():
    files = {"vm-northeurope.json": keyed(
        ("Consumption", item("ND96isrH200v5", 101.76)),
        ("Consumption", item("ND96isrH200v5 Spot", 30.0)),
        ("Consumption", item("ND96isrH200v5", 105.0, product="Virtual Machines NDsrH200v5 Series Windows")),
        ("Consumption", item("ND96isrH200v5 Low Priority", 20.0)),
        ("DevTestConsumption", item("ND96isrH200v5", 90.0)),
        ("Consumption", item("NC4as T4 v3", 0.587, product="Virtual Machines NCasT4 v3 Series", region="westeurope")),
        ("Consumption", item("ND96isrMI300Xv5", 57.6, product="Virtual Machines NDMI300Xv5 Srs")),
        ("Consumption", item("ND96isrH200v5", 0.1, unit="1/Month")))}
    records = script.radar_records(files, SIZES)
    assert [(r.instance_type, r.region, r.on_demand, r.spot) for r in records] == [
        ("Standard_NC4as_T4_v3", "westeurope", 0.587, None),
        ("Standard_ND96isr_H200_v5", "northeurope", 101.76, 30.0)]


def test_two_prices_for_one_market_stop_the_import():
    files = {"vm-northeurope.json": keyed(("Consumption", item("ND96isrH200v5", 101.76)),
                                          ("Consumption", item("Standard_ND96isr_H200_v5", 99.0)))}
    with pytest.raises(SystemExit, match="two on_demand prices"):
        script.radar_records(files, SIZES)


def test_the_record_is_dated_by_the_trackers_last_check():
    assert script.checked_on({"at": "2026-08-22T20:59:40.623529+00:00"}).isoformat() == "2026-08-22"
    assert script.checked_on({"at": "2026-08-22T23:30:00-02:00"}).isoformat() == "2026-08-23"
