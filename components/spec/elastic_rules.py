"""Rules for elastic node counts (`nodes: {min, max}`) and capacity fallbacks (one function each).

An elastic group is sized by Slurm's power saving (README "Elastic clusters"), so a range needs Slurm;
an inference fleet scales with `inference.autoscaling` behind its load balancer instead; reservations and Capacity Blocks are
paid for whole, so they stay fixed-size. Fallbacks are what a resume tries when capacity runs out: they apply to
elastic groups only (a fixed fleet is the cloud's to refill). Checks that need the catalog (each fallback type's
GPU and fabric) run in `gpufleet.groups.fallbacks`.
"""

from __future__ import annotations

import re

from ..catalog.zones import aws_zone_in_region
from .errors import Problem
from .model import ClusterSpec

BOOT_TO_READY_MINUTES = {"driver-ready": 10, "ubuntu-22.04": 20, "ubuntu-24.04": 20}
"""Launch to a registered node: image boot, the node's setup and acceptance check; stock Ubuntu installs the driver
and reboots first (the 20 minutes the AWS fleet's health-check grace gives it)."""
RESUME_MARGIN = 1.5


def resume_timeout_minutes(spec: ClusterSpec) -> int:
    """The group's ResumeTimeout: the spec's, else its image's boot-to-ready time with margin."""
    chosen = spec.scheduler.slurm.resume_timeout_minutes
    return chosen if chosen is not None else int(BOOT_TO_READY_MINUTES[spec.image.kind] * RESUME_MARGIN)


def _range(spec: ClusterSpec) -> dict:
    assert spec.nodes_range is not None
    return spec.nodes_range.model_dump()


def range_needs_slurm(spec: ClusterSpec) -> list[Problem]:
    if spec.nodes_range is None or spec.scheduler.kind == "slurm" or spec.workload == "inference":
        return []
    return [Problem("nodes", _range(spec), "an elastic range grows and shrinks with the Slurm queue: set "
                    "`scheduler.kind: slurm`, or give a fixed number of nodes")]


def range_is_for_training(spec: ClusterSpec) -> list[Problem]:
    if spec.nodes_range is None or spec.workload != "inference":
        return []
    return [Problem("nodes", _range(spec), "an inference fleet scales with `inference.autoscaling` (min_nodes, "
                    "max_nodes) behind its load balancer: give a fixed number of nodes")]


def range_is_not_reserved(spec: ClusterSpec) -> list[Problem]:
    market = spec.market
    if spec.nodes_range is None or not (market.capacity_reservation_id or market.capacity_block):
        return []
    what = "a Capacity Block" if market.capacity_block else "a capacity reservation"
    return [Problem("nodes", _range(spec), f"{what} is paid for whole whether its nodes run or not, so its group "
                    "stays fixed-size: give a fixed number of nodes")]


def fallbacks_need_a_range(spec: ClusterSpec) -> list[Problem]:
    if spec.nodes_range is not None:
        return []
    problems = []
    if spec.accelerator is not None and spec.accelerator.fallback_types:
        problems.append(Problem("accelerator.fallback_types", spec.accelerator.fallback_types, "fallbacks are tried "
                                "when an elastic group starts nodes: set `nodes: {min, max}` with Slurm, or drop them"))
    if spec.fallback_zones:
        problems.append(Problem("fallback_zones", spec.fallback_zones, "fallbacks are tried when an elastic group "
                                "starts nodes: set `nodes: {min, max}` with Slurm, or drop them"))
    return problems


def fallback_types_are_other_types(spec: ClusterSpec) -> list[Problem]:
    accelerator = spec.accelerator
    if accelerator is None or accelerator.instance_type is None:
        return []
    if accelerator.instance_type in accelerator.fallback_types:
        index = accelerator.fallback_types.index(accelerator.instance_type)
        return [Problem(f"accelerator.fallback_types[{index}]", accelerator.instance_type, "is the chosen "
                        "`accelerator.instance_type` already; expected other types, tried after it")]
    return []


def fallback_zones_fit(spec: ClusterSpec) -> list[Problem]:
    problems = []
    if spec.fallback_zones and spec.placement_group:
        problems.append(Problem("fallback_zones", spec.fallback_zones, "a cluster placement group lives in one "
                                "zone: set `placement_group: false` to let nodes start in other zones, or drop "
                                "`fallback_zones`"))
    seen = {spec.zone}
    for index, zone in enumerate(spec.fallback_zones):
        if zone in seen:
            problems.append(Problem(f"fallback_zones[{index}]", zone, "is listed already (or is `zone`); expected "
                                    "each other zone once"))
        elif not _in_region(spec.cloud, spec.region, zone):
            example = {"aws": f"{spec.region}b", "gcp": f"{spec.region}-b", "azure": "2"}[spec.cloud]
            problems.append(Problem(f"fallback_zones[{index}]", zone, f"expected a zone of {spec.region}, e.g. "
                                    f"{example!r}"))
        seen.add(zone)
    return problems


def _in_region(cloud: str, region: str, zone: str) -> bool:
    """The same test `zone` passes (spec.rules.zone_is_in_region): AWS zone names or ids, GCP `<region>-x`."""
    if cloud == "azure":
        return zone in ("1", "2", "3")
    if cloud == "gcp":
        return re.fullmatch(re.escape(region) + r"-[a-z]", zone) is not None
    return aws_zone_in_region(zone, region)


ELASTIC_RULES = (range_needs_slurm, range_is_for_training, range_is_not_reserved, fallbacks_need_a_range,
                 fallback_types_are_other_types, fallback_zones_fit)
