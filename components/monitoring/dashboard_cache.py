"""The stack's dashboards through the content cache (`gpufleet.cloud_init.content_cache`): they depend only on
gpufleet's dashboard code, grafana-foundation-sdk and a few numbers of the stack (price per node, GPUs per node, which
rows), so every plan after the first reads them back instead of importing the SDK and building them again (the SDK
alone is about 15 ms of CPU of an AWS plan, benchmarks/plan_vs_floor.py). The text is the same bytes either way."""

from __future__ import annotations

import json
from dataclasses import asdict
from functools import lru_cache
from importlib import metadata

from ..cloud_init.content_cache import cached_text, module_salt
from .pricing import ElasticGroup, GroupPricing, NodePricing

BUILDER = "gpufleet.monitoring.dashboards"
SDK_DISTRIBUTION = "grafana-foundation-sdk"


@lru_cache(maxsize=32)
def dashboards(pricing: NodePricing, gpus_per_node: int, job_view: bool = True, performance: bool = False,
               vgpu_slice: bool = False, slurm: bool = False, groups: tuple[GroupPricing, ...] = (),
               elastic: tuple[ElasticGroup, ...] = ()) -> dict[str, str]:
    """`gpufleet.monitoring.dashboards.dashboards` with these arguments, from the cache when it holds them."""
    arguments = {"pricing": asdict(pricing), "gpus_per_node": gpus_per_node, "job_view": job_view,
                 "performance": performance, "vgpu_slice": vgpu_slice, "slurm": slurm,
                 **({"groups": [asdict(group) for group in groups]} if groups else {}),
                 **({"elastic": [asdict(group) for group in elastic]} if elastic else {})}

    def build() -> str:
        from .dashboards import dashboards as build_dashboards

        return json.dumps(build_dashboards(pricing, gpus_per_node, job_view, performance, vgpu_slice, slurm, groups,
                                           elastic))

    return json.loads(cached_text("grafana-dashboards", _salt(), json.dumps(arguments, sort_keys=True), build))


@lru_cache(maxsize=1)
def _salt() -> str | None:
    """The builder's source and the SDK's version: an edit or an upgrade of either misses the cache. None (no cache)
    when either cannot be read."""
    source = module_salt(BUILDER)
    try:
        sdk = metadata.version(SDK_DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return None
    return f"{SDK_DISTRIBUTION} {sdk} {source}" if source else None
