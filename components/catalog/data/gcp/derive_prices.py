"""Derives prices.csv (USD per node-hour = host VM + its GPUs) from SkyPilot's GCP rows, and prints the exclusions.

Run from the repository root:
    .venv/bin/python components/catalog/data/gcp/derive_prices.py /work/shared/data/skypilot-catalog-gpu/gcp_gpu_vms.csv

SkyPilot lists a GCP GPU machine as two rows per zone: the host VM (vCPU + RAM) and the GPUs (empty InstanceType,
Price = per-GPU price x count); its optimizer adds them (skypilot-catalog issue #31). This script does the same.

Shapes without their own VM row are scaled from a sibling of the same series. That is exact, not an estimate:
SkyPilot's fetcher prices a VM as per-vCPU SKU x vCPUs + per-GiB SKU x GiB, and these shapes are fixed fractions
of the sibling (a2-highgpu-Ng = N/8 of a2-highgpu-8g in vCPUs and RAM; g2-standard-N = N/4 of g2-standard-4).

GPU rows the public data gets wrong are kept in the CSV as the sum it implies and refused in prices.yaml
`excluded:` (scope on_demand or spot), so the catalog shows both the raw value and why it is not used:
- a GPU row whose spot price is above its on-demand price;
- a GPU row whose per-GPU on-demand price is under half the highest region's for the same GPU (a DWS / flex-start
  SKU matched by substring, see shared/reference/catalog-and-pricing.md 1.4);
- a host VM row priced 0.0 where the type has a host VM SKU (a placeholder);
- the B200 GPU rows' on-demand price (see `NOT_LIST_ON_DEMAND`).

A4 (`GPU_SLICE_BILLED`) has no host VM SKU: Google bills the whole machine through one SKU per GPU ("A4 Nvidia B200
(1 gpu slice)"), so its price is its GPU row, in every zone the GPU row lists, and SkyPilot's 0.0 VM row is not a
placeholder but how its fetcher keeps the type (skypilot-org/skypilot PR #8125, 2025-11-27: "The B200 GPU pricing
includes the full VM cost. Added special handling to set A4 VM price to 0").
"""

from __future__ import annotations

import csv
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).parent
# instance type -> (VM row it is priced from, VM scale, GPU name in the source, GPUs)
SHAPES = {
    "a2-highgpu-1g": ("a2-highgpu-8g", 1 / 8, "A100", 1),
    "a2-highgpu-2g": ("a2-highgpu-8g", 2 / 8, "A100", 2),
    "a2-highgpu-4g": ("a2-highgpu-8g", 4 / 8, "A100", 4),
    "a2-highgpu-8g": ("a2-highgpu-8g", 1, "A100", 8),
    "a2-ultragpu-1g": ("a2-ultragpu-8g", 1 / 8, "A100-80GB", 1),
    "a2-ultragpu-2g": ("a2-ultragpu-8g", 2 / 8, "A100-80GB", 2),
    "a2-ultragpu-4g": ("a2-ultragpu-8g", 4 / 8, "A100-80GB", 4),
    "a2-ultragpu-8g": ("a2-ultragpu-8g", 1, "A100-80GB", 8),
    "a3-highgpu-8g": ("a3-highgpu-8g", 1, "H100", 8),
    "a3-megagpu-8g": ("a3-megagpu-8g", 1, "H100-MEGA", 8),
    "a3-ultragpu-8g": ("a3-ultragpu-8g", 1, "H200", 8),
    "a4-highgpu-8g": ("a4-highgpu-8g", 1, "B200", 8),
    **{f"g2-standard-{n}": ("g2-standard-4", n / 4, "L4", gpus)
       for n, gpus in ((4, 1), (8, 1), (12, 1), (16, 1), (24, 2), (32, 1), (48, 4), (96, 8))},
}
SPOT_ROUNDING = 1.01
# Types whose catalog row names a `gpu_slice_sku` (instances.yaml): no host VM SKU, the GPU row is the machine.
GPU_SLICE_BILLED = {row["name"] for row in yaml.safe_load((HERE / "instances.yaml").read_text())["instances"]
                    if row.get("gpu_slice_sku")}
# GPU rows whose on-demand price is another product's. B200: SkyPilot's fetcher takes the first SKU whose name
# contains "B200 (1 gpu slice)", which also matches the Dynamic Workload Scheduler (calendar-mode and flex-start)
# SKUs: its rows give two prices (90.216 and 64.44 for 8 GPUs) inside Google's one "Americas" price location, so at
# most one is a list price and neither is known to be. A4 is not sold on demand in any case (instances.yaml).
NOT_LIST_ON_DEMAND = {"B200": "source B200 GPU row: the on-demand price is a Dynamic Workload Scheduler SKU matched by "
                              "substring, not a list price (A4 is not sold on demand: Spot or a reservation)"}


def read(path: Path):
    vms: dict[tuple[str, str, str], Any] = {}
    gpus: defaultdict[str, dict[Any, Any]] = defaultdict(dict)
    with path.open(newline="") as handle:
        for row in csv.DictReader(handle):
            price = (_money(row["Price"]), _money(row["SpotPrice"]))
            if row["InstanceType"]:
                vms[(row["InstanceType"], row["Region"], row["AvailabilityZone"])] = price
            else:
                count = int(float(row["AcceleratorCount"]))
                per_gpu = tuple(None if p is None else p / count for p in price)
                gpus[row["AcceleratorName"]][(row["Region"], row["AvailabilityZone"])] = per_gpu
    return vms, gpus


def bad_gpu_rows(gpus) -> dict[tuple[str, str], dict[str, str]]:
    """{(gpu, region): {scope: reason}} for the GPU rows that cannot be used."""
    bad: dict = defaultdict(dict)
    for name, rows in gpus.items():
        highest = max(od for od, _ in rows.values() if od is not None)
        for (region, _zone), (od, spot) in sorted(rows.items()):
            if od is not None and spot is not None and spot > od * SPOT_ROUNDING:
                reason = (f"source {name} GPU row: spot ${spot:.5f}/GPU-h above on-demand ${od:.5f}/GPU-h, a "
                          "mis-matched SKU")
                bad[(name, region)].update(on_demand=reason, spot=reason)
            elif od is not None and od < highest / 2:
                bad[(name, region)]["on_demand"] = (
                    f"source {name} GPU row: on-demand ${od:.5f}/GPU-h is under half the highest region's "
                    f"${highest:.5f}/GPU-h, a mis-matched (DWS / flex-start) SKU")
    return bad


def derive(vms, gpus):
    bad = bad_gpu_rows(gpus)
    for gpu, reason in NOT_LIST_ON_DEMAND.items():
        for region, _zone in gpus.get(gpu, {}):
            bad[(gpu, region)]["on_demand"] = reason
    rows, excluded = [], {}
    for name, (vm_type, scale, gpu, count) in sorted(SHAPES.items()):
        for (region, zone), (vm_od, vm_spot) in _host_rows(name, vm_type, gpu, vms, gpus):
            per_gpu = gpus[gpu].get((region, zone), (None, None))
            on_demand = _sum(vm_od, scale, per_gpu[0], count)
            spot = _sum(vm_spot, scale, per_gpu[1], count)
            rows.append({"instance_type": name, "region": region, "zone": zone, "on_demand": _fmt(on_demand),
                         "spot": _fmt(spot)})
            for scope, reason in bad.get((gpu, region), {}).items():
                excluded[(name, region, scope)] = reason
            if vm_od == 0.0 and name not in GPU_SLICE_BILLED:
                for scope in ("on_demand", "spot"):
                    excluded[(name, region, scope)] = (f"source {vm_type} VM row is a 0.0 placeholder; only the "
                                                       "GPU part is priced")
    entries = [{"instance_type": n, "region": r, "scope": s, "reason": why}
               for (n, r, s), why in sorted(excluded.items())]
    return rows, entries


def _host_rows(name: str, vm_type: str, gpu: str, vms, gpus) -> list:
    """((region, zone), (on-demand, spot)) of the host VM per zone: a slice-billed type has none, so each zone its
    GPU row lists counts with a host price of zero."""
    if name in GPU_SLICE_BILLED:
        return [(location, (0.0, 0.0)) for location in sorted(gpus.get(gpu, {}))]
    return [((region, zone), price) for (vm, region, zone), price in sorted(vms.items()) if vm == vm_type]


def _sum(vm, scale, per_gpu, count):
    if vm is None or per_gpu is None:
        return None
    return vm * scale + per_gpu * count


def _money(text: str):
    return float(text) if text not in ("", None) else None


def _fmt(value):
    return "" if value is None else f"{value:.5f}"


def main(source: str) -> None:
    vms, gpus = read(Path(source))
    rows, entries = derive(vms, gpus)
    with (HERE / "prices.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["instance_type", "region", "zone", "on_demand", "spot"],
                                lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    print(yaml.safe_dump({"excluded": entries}, sort_keys=False, width=200))


if __name__ == "__main__":
    main(sys.argv[1])
