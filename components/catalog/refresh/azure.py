"""Azure: the Retail Prices API (`https://prices.azure.com/api/retail/prices`, no authentication).

Pages are `{"Items": [...], "NextPageLink": ..., "Count": ...}`. Items carry `armSkuName`, `armRegionName`,
`retailPrice`, `unitOfMeasure` ("1 Hour"), `type` ("Consumption" | "Reservation" | "DevTestConsumption"),
`skuName`/`meterName` (" Spot" and " Low Priority" variants), `productName` (Windows variants),
`reservationTerm` ("1 Year" | "3 Years") and `currencyCode`. Reservation prices are the TOTAL for the term
although `unitOfMeasure` says "1 Hour", so they are divided by 8,760 or 26,280 hours.
"""

from __future__ import annotations

from collections.abc import Iterable

from .records import HOURS_1Y, HOURS_3Y, PriceRecord, ResponseShapeError

SKIP_PRODUCTS = ("Windows", "Cloud Services", "CloudServices", "Dedicated")


def parse_retail_prices(pages: Iterable[dict], instance_types: set[str] | None = None) -> list[PriceRecord]:
    prices: dict[tuple[str, str], dict] = {}
    for page in pages:
        items = page.get("Items")
        if not isinstance(items, list):
            raise ResponseShapeError("expected an Azure Retail Prices API page with `Items`")
        for item in items:
            key, field, value = _classify(item, instance_types)
            if key:
                entry = prices.setdefault(key, {})
                entry[field] = min(value, entry.get(field, value))
    return [PriceRecord(instance_type=sku, region=region, **values) for (sku, region), values in sorted(prices.items())]


def _classify(item: dict, instance_types: set[str] | None):
    sku, region = item.get("armSkuName"), item.get("armRegionName")
    names = f"{item.get('skuName', '')} {item.get('meterName', '')}"
    if (item.get("serviceName") != "Virtual Machines" or item.get("currencyCode", "USD") != "USD" or not sku
            or not region or (instance_types and sku not in instance_types) or "Low Priority" in names
            or any(word in item.get("productName", "") for word in SKIP_PRODUCTS)
            or item.get("isPrimaryMeterRegion") is False):
        return None, None, None
    price = float(item.get("retailPrice", 0) or 0)  # zero or below is kept: the refresh refuses it, naming the row
    kind = item.get("type")
    if kind == "Consumption" and item.get("unitOfMeasure") == "1 Hour":
        return (sku, region), "spot" if "Spot" in names else "on_demand", price
    if kind == "Reservation":
        term = item.get("reservationTerm")
        if term == "1 Year":
            return (sku, region), "reserved_1y", round(price / HOURS_1Y, 6)
        if term == "3 Years":
            return (sku, region), "reserved_3y", round(price / HOURS_3Y, 6)
    return None, None, None
