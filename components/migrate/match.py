"""`gpufleet migrate match`: the manifest's GPUs as a stack file, checked by the same pipeline `gpufleet plan` runs.

The GPU: the captured model, else the catalog model nearest in memory with at least the captured memory, in the same
count per node. A GPU whose architecture the captured CUDA cannot run on is refused with the reason (named with
`--gpu`) or passed over with the reason (chosen here). The region: the one named, else the offering region with the
lowest median connect time from here (region.py).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import yaml

from ..catalog.loader import Catalog, load_catalog
from ..catalog.models import GpuModel
from ..catalog.selector import ZONE_LOOKUP
from ..catalog.zones import is_edge
from ..pipeline import plan_cluster
from ..spec.errors import MISSING, Problem, SpecError
from ..spec.node_rules import CUDA_MIN_DRIVER_BRANCH
from ..spec.parse import parse_cluster_spec
from .compat import cuda_problem
from .manifest import ROOT, Manifest
from .region import Latency, Prober, measure, tcp_connect_time

MIGRATION_KEY = "gpufleet:migration"  # beside gpufleet:cluster: where sync and verify find the manifest
ADVICE = ("install framework builds for a newer CUDA locally and capture again, or name a GPU the captured CUDA runs on "
          "with --gpu")
MEMORY_SLACK = 0.95  # nvidia-smi reports a 16 GB T4 as 15360 MiB: usable memory, not the marketed size


@dataclass(frozen=True)
class Match:
    cluster: dict
    gpu: GpuModel
    gpus_per_node: int
    instance_type: str
    region: str
    hourly_usd: float | None
    latencies: tuple[Latency, ...]
    notes: tuple[str, ...]


def match(manifest: Manifest, cloud: str, region: str | None = None, gpu: str | None = None,
          zone: str | None = None, ssh_public_key: str | None = None, prober: Prober = tcp_connect_time,
          catalog: Catalog | None = None) -> Match:
    catalog = catalog or load_catalog()
    notes: list[str] = []
    wanted, memory_mib, count = _wanted(manifest, gpu, catalog)
    chosen = _choose_gpu(manifest, cloud, wanted, memory_mib, count, named=gpu is not None, catalog=catalog,
                         notes=notes)
    regions = sorted({r for i in _rows(catalog, cloud, chosen.model, count) for r in catalog.regions_of(cloud, i.name)})
    latencies: tuple[Latency, ...] = ()
    if region is None:
        latencies = tuple(measure(cloud, regions, prober))
        reachable = [lat for lat in latencies if lat.median_ms is not None]
        if not reachable:
            raise SpecError([Problem("--region", MISSING, f"offline: none of the {len(regions)} regions offering "
                                     f"{count} x {chosen.model} on {cloud} answered a TCP connect; name one with "
                                     f"--region: {', '.join(regions)}")], root=ROOT)
        region = reachable[0].region
        notes.append(f"region {region}: lowest median TCP-connect time ({reachable[0].median_ms:.0f} ms to "
                     f"{reachable[0].endpoint}) of {len(reachable)} reachable regions offering {chosen.model}")
    elif region not in regions:
        raise SpecError([Problem("--region", region, f"{count} x {chosen.model} is not offered there on {cloud} "
                                 f"in the catalog; offered in {', '.join(regions) or 'no region'}")], root=ROOT)
    else:
        notes.append(f"region {region}: named with --region (no latency measured)")
    cluster = _cluster(manifest, cloud, region, chosen, count, ssh_public_key, notes)
    zone = zone or _zone(catalog, cloud, region, chosen.model, count)
    if zone:
        cluster = {"cloud": cloud, "region": region, "zone": zone, **cluster}
    elif cloud in ZONE_LOOKUP:
        types = sorted((i.name for i in _rows(catalog, cloud, chosen.model, count)
                        if region in catalog.regions_of(cloud, i.name)),
                       key=lambda name: (_cheapest(catalog, cloud, name, region), name))
        lookup = ZONE_LOOKUP[cloud].format(type=types[0] if types else chosen.model, region=region)
        raise SpecError([Problem("--zone", MISSING, f"required: the catalog prices {count} x {chosen.model} in {region} "
                                 f"for the region as a whole and lists no zones. {lookup}")], root=ROOT)
    plan = plan_cluster(parse_cluster_spec(cluster), catalog)
    per_node = plan.price.on_demand
    return Match(cluster=cluster, gpu=chosen, gpus_per_node=count, instance_type=plan.instance.name, region=region,
                 hourly_usd=per_node * cluster["nodes"] if per_node is not None else None, latencies=latencies,
                 notes=(*notes, *plan.warnings))


def _wanted(manifest: Manifest, gpu: str | None, catalog: Catalog) -> tuple[GpuModel | None, int, int]:
    """(catalog model, memory per GPU in MiB, GPUs per node) to look for."""
    count = len(manifest.gpus) or 1
    if gpu is not None:
        model = catalog.gpu(gpu)
        if model is None:
            hint = catalog.gpu_suggestions(gpu)
            raise SpecError([Problem("--gpu", gpu, (f"did you mean {', '.join(hint)}? " if hint else "") +
                                     f"expected a catalog GPU: {', '.join(sorted(catalog.gpus))}")], root=ROOT)
        return model, model.memory_gib * 1024, count
    if not manifest.gpus:
        raise SpecError([Problem("manifest.gpus", "none", "the capture found no GPU; name the cloud GPU with --gpu "
                                 "(e.g. --gpu T4)")], root=ROOT)
    name, _ = Counter(g.name for g in manifest.gpus).most_common(1)[0]
    local = next(g for g in manifest.gpus if g.name == name)
    return (catalog.gpu(local.model) if local.model else None), local.memory_mib, count


def _rows(catalog: Catalog, cloud: str, model: str, count: int) -> list:
    """Whole-GPU types gpufleet can drive: a local GPU is never matched to a vGPU slice of one."""
    return [i for i in catalog.instances_of(cloud, model, gpus=count)
            if not i.unsupported_driver and not i.is_vgpu_slice]


def _choose_gpu(manifest: Manifest, cloud: str, wanted: GpuModel | None, memory_mib: int, count: int, named: bool,
                catalog: Catalog, notes: list[str]) -> GpuModel:
    cuda = manifest.frameworks.cuda
    built = f"the environment was built for CUDA {cuda} ({manifest.frameworks.cuda_source or 'captured'})"
    if wanted is not None and _rows(catalog, cloud, wanted.model, count):
        problem = cuda_problem(cuda, wanted.model, wanted.architecture) if cuda else None
        if problem:
            raise SpecError([Problem("--gpu" if named else "manifest.gpus", wanted.model, f"{problem}, and {built}; {ADVICE}")],
                            root=ROOT)
        return wanted
    if named:
        counts = sorted({i.gpus for i in catalog.instances_of(cloud, wanted.model)})
        raise SpecError([Problem("--gpu", wanted.model, f"{cloud} has no node with {count} x {wanted.model}; it "
                                 f"comes with {', '.join(map(str, counts)) or 'none'} per node there")], root=ROOT)
    candidates = sorted((g for g in catalog.gpus.values() if g.vendor == "nvidia"
                         and g.memory_gib * 1024 >= memory_mib * MEMORY_SLACK and _rows(catalog, cloud, g.model, count)),
                        key=lambda g: (g.memory_gib, _cheapest_in(catalog, cloud, g.model, count), g.model))
    passed_over: list[str] = []
    for candidate in candidates:
        problem = cuda_problem(cuda, candidate.model, candidate.architecture) if cuda else None
        if problem is None:
            local = wanted.model if wanted else next(iter(manifest.gpus)).name
            notes.append(f"GPU {candidate.model}: {local} is not sold on {cloud} with {count} per node; nearest with "
                         f"at least {memory_mib // 1024} GiB" + (f" (passed over: {'; '.join(passed_over)})"
                                                               if passed_over else ""))
            return candidate
        passed_over.append(problem)
    why = f"{built}, and no GPU it runs on is sold there: {'; '.join(passed_over)}; {ADVICE}" if passed_over else f"no {cloud} node has {count} GPUs with at least {memory_mib // 1024} GiB each"
    raise SpecError([Problem("manifest.gpus", f"{count} x {memory_mib // 1024} GiB", why)], root=ROOT)


def _zone(catalog: Catalog, cloud: str, region: str, model: str, count: int) -> str | None:
    """AWS and GCP clusters live in one zone: the first regular zone where the cheapest matching type is offered."""
    if cloud == "azure":
        return None
    rows = sorted(_rows(catalog, cloud, model, count), key=lambda i: (_cheapest(catalog, cloud, i.name, region), i.name))
    for row in rows:
        zones = [z for z in catalog.zones_of(cloud, row.name, region) if not is_edge(cloud, z)]
        if zones:
            return zones[0]
    return None


def _cheapest_in(catalog: Catalog, cloud: str, model: str, count: int) -> float:
    prices = [p.on_demand for i in _rows(catalog, cloud, model, count) for p in catalog.prices_of(cloud, i.name)
              if p.on_demand is not None]
    return min(prices, default=float("inf"))


def _cheapest(catalog: Catalog, cloud: str, instance_type: str, region: str) -> float:
    prices = [p.on_demand for p in catalog.prices_of(cloud, instance_type, region) if p.on_demand is not None]
    return min(prices, default=float("inf"))


def _cluster(manifest: Manifest, cloud: str, region: str, gpu: GpuModel, count: int, ssh_public_key: str | None,
             notes: list[str]) -> dict:
    cluster: dict = {"cloud": cloud, "region": region, "nodes": 1,
                     "accelerator": {"gpu": gpu.model, "gpus_per_node": count}}
    cuda = manifest.frameworks.cuda
    if cuda and re.match(r"^\d{2}\.\d$", cuda) and cuda.split(".")[0] in CUDA_MIN_DRIVER_BRANCH:
        cluster["node"] = {"cuda": cuda}
    elif cuda:
        notes.append(f"captured CUDA {cuda} is older than any the node software checks; node.cuda left at its default")
    if ssh_public_key:
        cluster["access"] = {"ssh_public_key": ssh_public_key}
    return cluster


def stack_text(result: Match, manifest_path: Path) -> str:
    """The stack file: a comment saying where it came from, `gpufleet:cluster`, and the migration record."""
    cost = f"${result.hourly_usd:,.2f}/h on demand" if result.hourly_usd is not None else "no catalog price"
    header = (f"# Written by `gpufleet migrate match` from {manifest_path.name}: {result.gpus_per_node} x "
              f"{result.gpu.model} ({result.instance_type}) in {result.region}, {cost}.\n"
              "# Check it with `gpufleet plan <this file>`.\n")
    document = {"config": {"gpufleet:cluster": result.cluster,
                           MIGRATION_KEY: {"manifest": str(manifest_path.resolve())}}}
    return header + yaml.safe_dump(document, sort_keys=False)
