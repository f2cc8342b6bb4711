"""Small hand-made catalogs for the catalog tests: every number here is chosen, not read from the data files."""

from __future__ import annotations

from datetime import date

from gpufleet.catalog.loader import Catalog
from gpufleet.catalog.models import GpuModel, InstanceType, Price, PriceSource

GPUS = [
    GpuModel(model="A100", memory_gib=40, architecture="ampere", bf16_dense_tflops=312,
             node_gpu_counts=(1, 2, 4, 8, 16)),
    GpuModel(model="H100", memory_gib=80, architecture="hopper", bf16_dense_tflops=989.4),
    GpuModel(model="T4", memory_gib=16, architecture="turing", bf16_dense_tflops=65),
]


def instance(cloud="aws", name="p5.48xlarge", gpu="H100", gpus=8, memory=80, fabric="efa", **extra) -> InstanceType:
    if fabric == "efa":
        extra = {"efa_interfaces": 32, "network_cards": 32, **extra}
    return InstanceType(cloud=cloud, name=name, gpu=gpu, gpus=gpus, gpu_memory_gib=memory, vcpus=192, memory_gib=2048,
                        fabric=fabric, network_gbps=3200, nvswitch=gpus == 8, source="test", **extra)


def price(name="p5.48xlarge", region="us-east-1", zone="use1-az1", od=50.0, spot=20.0, cloud="aws", **extra) -> Price:
    return Price(cloud=cloud, instance_type=name, region=region, zone=zone, on_demand=od, spot=spot, **extra)


def source(cloud="aws", day=date(2026, 11, 1), key="") -> PriceSource:
    return PriceSource(cloud=cloud, source=f"test {cloud}", snapshot_date=day, key=key)


def catalog(instances, prices, sources=None, flags=()) -> Catalog:
    clouds = sorted({i.cloud for i in instances} | {p.cloud for p in prices})
    return Catalog(GPUS, instances, prices, sources or [source(c) for c in clouds], flags)
