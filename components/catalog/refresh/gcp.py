"""GCP: the Cloud Billing Catalog (`GET https://cloudbilling.googleapis.com/v1/services/6F81-5844-456A/skus`).

Pages are `{"skus": [...], "nextPageToken": ...}`. A SKU carries `description`, `category` {resourceFamily
("Compute"), resourceGroup, usageType ("OnDemand" | "Preemptible" | "Commit1Yr" | "Commit3Yr")},
`serviceRegions` and `pricingInfo[0].pricingExpression.tieredRates[].unitPrice` {units, nanos}.
A GPU machine's price is its vCPUs x the series' core SKU + its GiB x the series' RAM SKU + its GPUs x the
GPU SKU (SkyPilot and gpuhunt price it the same way). Flex-start, DWS calendar, virtual-workstation, sole-
tenancy, custom and premium SKUs are skipped: first-substring matching on them is what put a half-price H100
into public catalogs. The Local SSD bundled with A2 Ultra and A3 machines is not added (its SKU per family was not
confirmed), so refreshed rows are that much below the shipped ones, which include it (catalog README).

A4 has no core or RAM SKU: Google bills the whole machine per GPU slice ("A4 Nvidia B200 (1 gpu slice) running in
Americas"), so its price is the slice rate x its GPUs (skypilot-org/skypilot PR #8125). The same PR found B200 Spot
SKUs whose usageType says OnDemand; a description that starts "Spot Preemptible" is read as Spot whatever it says.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from ..models import InstanceType
from .records import PriceRecord, ResponseShapeError

SKIP = re.compile(r"DWS|Calendar|Flex|Virtual Workstation|Sole Tenancy|Custom|Premium|Reserved|Extended|Confidential",
                  re.IGNORECASE)
USAGE_FIELD = {"OnDemand": "on_demand", "Preemptible": "spot", "Commit1Yr": "reserved_1y", "Commit3Yr": "reserved_3y"}
_PREFIX = re.compile(r"^(?:Spot Preemptible |Preemptible |Commitment v1: )")
_CORE_RAM = re.compile(r"^(?P<series>[A-Z]\d+[A-Z]?) (?:Instance )?(?P<what>Core|Cpu|Ram)\b")
# "Nvidia H100 80GB GPU ...", and G4's "RTX 6000 96GB running in ..." (no "Nvidia", no "GPU").
_GPU = re.compile(r"^(?:Nvidia (?:Tesla )?(?P<gpu>.+?) GPU|(?P<rtx>RTX 6000 96GB))\b")
_SLICE = re.compile(r"^(?P<series>[A-Z]\d+[A-Z]?) Nvidia (?P<gpu>\S+) \(1 gpu slice\)")
_SPOT_DESCRIPTION = re.compile(r"^(?:Spot )?Preemptible ")
# The GPU SKU name each machine family is billed with (the text between "Nvidia " and " GPU").
FAMILY_GPU_SKU = {"a2-highgpu": "A100", "a2-megagpu": "A100", "a2-ultragpu": "A100 80GB",
                  "a3-highgpu": "H100 80GB", "a3-megagpu": "H100 80GB Mega", "a3-ultragpu": "H200 141GB",
                  "g2-standard": "L4", "g4-standard": "RTX 6000 96GB"}


def parse_billing_skus(pages: Iterable[dict]) -> dict[tuple[str, str, str, str], float]:
    """(region, series or "gpu" or "slice", resource, market field) -> USD per unit-hour. resource: core or ram (of
    a series), a GPU name, or a slice's "<series> <GPU>" (e.g. "A4 B200")."""
    rates: dict[tuple[str, str, str, str], float] = {}
    for page in pages:
        skus = page.get("skus")
        if not isinstance(skus, list):
            raise ResponseShapeError("expected a Cloud Billing Catalog page with `skus`")
        for sku in skus:
            parsed = _classify(sku)
            if parsed is None:
                continue
            series, resource, field, price = parsed
            for region in sku.get("serviceRegions", ()):
                key = (region, series, resource, field)
                rates[key] = min(price, rates.get(key, price))
    return rates


def machine_prices(rates: dict, instances: Iterable[InstanceType]) -> list[PriceRecord]:
    """Region-wide prices per machine type: VM cores + RAM + GPUs, for each market the SKUs price."""
    regions = sorted({key[0] for key in rates})
    records = []
    for instance in sorted(instances, key=lambda i: i.name):
        family = "-".join(instance.name.split("-")[:2])
        series, gpu_sku = instance.name.split("-")[0].upper(), FAMILY_GPU_SKU.get(family)
        slice_sku = instance.extra.get("gpu_slice_sku")  # "A4 B200": the catalog row's one SKU per GPU
        if gpu_sku is None and slice_sku is None:
            continue
        for region in regions:
            values: dict[str, Any] = {
                field: _sliced(rates, region, slice_sku, field, instance) if slice_sku
                else _machine(rates, region, series, gpu_sku, field, instance) for field in USAGE_FIELD.values()}
            if any(v is not None for v in values.values()):
                records.append(PriceRecord(instance_type=instance.name, region=region, **values))
    return records


def _machine(rates, region, series, gpu_sku, field, instance: InstanceType) -> float | None:
    core = rates.get((region, series, "core", field))
    ram = rates.get((region, series, "ram", field))
    gpu = rates.get((region, "gpu", gpu_sku, field))
    if core is None or ram is None or gpu is None:
        return None
    return round(core * instance.vcpus + ram * instance.memory_gib + gpu * instance.gpus, 5)


def _sliced(rates, region, slice_sku: str, field, instance: InstanceType) -> float | None:
    rate = rates.get((region, "slice", slice_sku, field))
    return None if rate is None else round(rate * instance.gpus, 5)


def _classify(sku: dict):
    category = sku.get("category", {})
    description = sku.get("description", "")
    field = "spot" if _SPOT_DESCRIPTION.match(description) else USAGE_FIELD.get(category.get("usageType"))
    if category.get("resourceFamily") != "Compute" or field is None or SKIP.search(description):
        return None
    price = _unit_price(sku)
    if price is None:
        return None
    what = _PREFIX.sub("", description)
    sliced = _SLICE.match(what)
    if sliced:
        return "slice", f"{sliced.group('series')} {sliced.group('gpu')}", field, price
    gpu = _GPU.match(what)
    if gpu:
        return "gpu", gpu.group("gpu") or gpu.group("rtx"), field, price
    core_ram = _CORE_RAM.match(what)
    if core_ram:
        return core_ram.group("series"), "ram" if core_ram.group("what") == "Ram" else "core", field, price
    return None


def _unit_price(sku: dict) -> float | None:
    try:
        rate = sku["pricingInfo"][0]["pricingExpression"]["tieredRates"][-1]["unitPrice"]
    except (KeyError, IndexError):
        return None
    value = int(rate.get("units", 0) or 0) + int(rate.get("nanos", 0) or 0) / 1e9
    return value if value > 0 else None
