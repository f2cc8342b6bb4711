"""The maintainer script that sums SkyPilot's GCP rows (host VM + GPUs) into node prices: how A4, which Google bills
as one SKU per GPU slice with no host VM SKU, is priced, and which markets are refused with a reason."""

from __future__ import annotations

from gpufleet.catalog.data.gcp import derive_prices as script

# Two rows a zone, as SkyPilot's vms.csv has them: the host VM (per node) and the GPUs (per GPU after `read`).
VMS = {("a3-highgpu-8g", "us-central1", "us-central1-a"): (9.46006, 2.89),
       ("a4-highgpu-8g", "us-central1", "us-central1-b"): (0.0, 0.0)}
GPUS = {"H100": {("us-central1", "us-central1-a"): (9.79655, 4.0)},
        "B200": {("us-central1", "us-central1-b"): (11.277, 4.0758),
                 ("us-east4", "us-east4-b"): (8.055, 4.0758),
                 ("europe-west4", "europe-west4-b"): (11.277, 4.4834)}}


def derived():
    rows, entries = script.derive(VMS, GPUS)
    return {(r["instance_type"], r["zone"]): (r["on_demand"], r["spot"]) for r in rows}, entries


def test_a_host_vm_type_is_its_vm_row_plus_its_gpus():
    rows, _ = derived()
    assert rows[("a3-highgpu-8g", "us-central1-a")] == ("87.83246", "34.89000")


def test_a4_is_its_gpu_row_alone_in_every_zone_the_gpu_row_lists_even_without_a_vm_row():
    rows, entries = derived()
    a4 = {zone: prices for (name, zone), prices in rows.items() if name == "a4-highgpu-8g"}
    assert a4 == {"europe-west4-b": ("90.21600", "35.86720"), "us-central1-b": ("90.21600", "32.60640"),
                  "us-east4-b": ("64.44000", "32.60640")}
    refused = {(e["region"], e["scope"]) for e in entries if e["instance_type"] == "a4-highgpu-8g"}
    # Its on-demand price is a Dynamic Workload Scheduler SKU everywhere; its spot price is kept.
    assert refused == {("europe-west4", "on_demand"), ("us-central1", "on_demand"), ("us-east4", "on_demand")}
    assert all("Dynamic Workload Scheduler" in e["reason"] for e in entries if e["instance_type"] == "a4-highgpu-8g")


def test_a_zero_vm_row_of_a_type_with_a_host_vm_sku_is_still_a_placeholder():
    _, entries = script.derive({("a3-highgpu-8g", "us-central1", "us-central1-a"): (0.0, 0.0)}, GPUS)
    a3 = [e for e in entries if e["instance_type"] == "a3-highgpu-8g"]
    assert {e["scope"] for e in a3} == {"on_demand", "spot"}
    assert all("0.0 placeholder" in e["reason"] for e in a3)
