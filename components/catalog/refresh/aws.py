"""AWS: the Price List (bulk offer file or GetProducts) and DescribeSpotPriceHistory.

Field names are AWS's own: offer files carry `products` (sku -> {sku, productFamily, attributes}) and
`terms` {OnDemand|Reserved: {sku: {offerTermCode: {priceDimensions, termAttributes}}}}; GetProducts returns
`PriceList`, a list of JSON strings each holding one `product` and its `terms`. Spot history items carry
`AvailabilityZone` (a zone *name*), `InstanceType`, `ProductDescription`, `SpotPrice` (a string) and
`Timestamp`; DescribeAvailabilityZones maps names to AZ ids (`ZoneName`, `ZoneId`, `RegionName`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator

from .records import HOURS_1Y, HOURS_3Y, PriceRecord, ResponseShapeError

LINUX_SPOT = ("Linux/UNIX", "Linux/UNIX (Amazon VPC)")
WANTED = {"operatingSystem": "Linux", "tenancy": "Shared", "capacitystatus": "Used", "preInstalledSw": "NA"}


def parse_price_list(doc: dict, instance_types: set[str] | None = None) -> list[PriceRecord]:
    """Linux, shared-tenancy, no-pre-installed-software on-demand and Standard No Upfront RI prices per region."""
    best: dict[tuple[str, str], dict] = {}
    for product, on_demand, reserved in _products(doc):
        attrs = product.get("attributes", {})
        if not str(product.get("productFamily", "")).startswith("Compute Instance"):
            continue
        if any(attrs.get(k) != v for k, v in WANTED.items()) or attrs.get("marketoption", "OnDemand") != "OnDemand":
            continue
        name, region = attrs.get("instanceType"), attrs.get("regionCode")
        if not name or not region or (instance_types and name not in instance_types):
            continue
        entry = best.setdefault((name, region), {})
        entry["on_demand"] = _first_hourly(on_demand) or entry.get("on_demand")
        for term in reserved:
            key = _reserved_key(term.get("termAttributes", {}))
            if key:
                entry[key] = _effective_hourly(term, HOURS_1Y if key == "reserved_1y" else HOURS_3Y)
    return [PriceRecord(instance_type=n, region=r, **values) for (n, r), values in sorted(best.items())]


def parse_zone_ids(doc: dict) -> dict[str, tuple[str, str]]:
    """DescribeAvailabilityZones: zone name -> (zone id, region)."""
    zones = doc.get("AvailabilityZones")
    if not isinstance(zones, list):
        raise ResponseShapeError("expected a DescribeAvailabilityZones response with `AvailabilityZones`")
    return {z["ZoneName"]: (z["ZoneId"], z["RegionName"]) for z in zones}


def parse_spot_history(doc: dict, zone_ids: dict[str, tuple[str, str]],
                       instance_types: set[str] | None = None) -> list[PriceRecord]:
    """The latest Linux spot price per (instance type, AZ id)."""
    items = doc.get("SpotPriceHistory")
    if not isinstance(items, list):
        raise ResponseShapeError("expected a DescribeSpotPriceHistory response with `SpotPriceHistory`")
    latest: dict[tuple[str, str], tuple[str, float]] = {}
    for item in items:
        if item.get("ProductDescription") not in LINUX_SPOT:
            continue
        name, zone_name = item["InstanceType"], item["AvailabilityZone"]
        if instance_types and name not in instance_types:
            continue
        if zone_name not in zone_ids:
            raise ResponseShapeError(f"zone {zone_name} is not in the DescribeAvailabilityZones response; AZ names map to "
                               "different AZ ids in each account, so the catalog needs the mapping")
        key = (name, zone_name)
        stamp = str(item.get("Timestamp", ""))
        if key not in latest or stamp > latest[key][0]:
            latest[key] = (stamp, float(item["SpotPrice"]))
    records = []
    for (name, zone_name), (_, price) in latest.items():
        zone_id, region = zone_ids[zone_name]
        records.append(PriceRecord(instance_type=name, region=region, zone=zone_id, spot=price))
    return sorted(records, key=lambda r: (r.instance_type, r.region, r.zone))


def _products(doc: dict) -> Iterator[tuple[dict, list[dict], list[dict]]]:
    if "PriceList" in doc:
        for item in doc["PriceList"]:
            item = json.loads(item) if isinstance(item, str) else item
            terms = item.get("terms", {})
            yield item["product"], list(terms.get("OnDemand", {}).values()), list(terms.get("Reserved", {}).values())
    elif "products" in doc and "terms" in doc:
        terms = doc["terms"]
        for sku, product in doc["products"].items():
            yield (product, list(terms.get("OnDemand", {}).get(sku, {}).values()),
                   list(terms.get("Reserved", {}).get(sku, {}).values()))
    else:
        raise ResponseShapeError("expected an AWS Price List offer file (`products`, `terms`) or a GetProducts "
                                 "response (`PriceList`)")


def _dimensions(term: dict) -> Iterable[dict]:
    return term.get("priceDimensions", {}).values()


def _first_hourly(terms: list[dict]) -> float | None:
    for term in terms:
        for dim in _dimensions(term):
            price = float(dim.get("pricePerUnit", {}).get("USD", 0) or 0)
            if dim.get("unit") == "Hrs":  # zero or below is kept: the refresh refuses it, naming the row
                return price
    return None


def _reserved_key(attrs: dict) -> str | None:
    if attrs.get("OfferingClass") != "standard" or attrs.get("PurchaseOption") != "No Upfront":
        return None
    return {"1yr": "reserved_1y", "3yr": "reserved_3y"}.get(attrs.get("LeaseContractLength"))


def _effective_hourly(term: dict, hours: int) -> float | None:
    """Recurring hourly rate plus any upfront fee spread over the term."""
    hourly = upfront = 0.0
    for dim in _dimensions(term):
        price = float(dim.get("pricePerUnit", {}).get("USD", 0) or 0)
        if dim.get("unit") == "Hrs":
            hourly += price
        elif dim.get("unit") == "Quantity":
            upfront += price
    total = hourly + upfront / hours
    return round(total, 6) if total > 0 else None
