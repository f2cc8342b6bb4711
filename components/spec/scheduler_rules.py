"""Rules for `scheduler:` (one function each). Slurm comes from the image's distribution archive, so the image
decides the release: Ubuntu 22.04 ships Slurm 21.08, which has no dynamic nodes (`slurmd -Z`, Slurm 22.05+);
Ubuntu 24.04 ships 23.11. A Slurm cluster's default images are therefore the 24.04 variants (each cloud's image.py).
"""

from __future__ import annotations

import re

from .errors import Problem
from .model import ClusterSpec
from .scheduler import Slurm

# Images whose archive has Slurm 22.05 or later, named for the message (each cloud's listing: AWS SSM public
# parameters, Azure `az vm image list`, GCP image families).
SLURM_IMAGES = {
    "aws": "the Deep Learning Base OSS AMI for Ubuntu 24.04 (`image.kind: driver-ready`) or `image.kind: ubuntu-24.04`",
    "azure": "microsoft-dsvm:ubuntu-hpc:2404 (`image.kind: driver-ready`) or `image.kind: ubuntu-24.04`",
    "gcp": "ubuntu-accelerator-2404-amd64-with-nvidia-<branch> (`image.kind: driver-ready`) or `image.kind: "
           "ubuntu-24.04`",
}
# Pinned image names that say they are Ubuntu 22.04 (Azure URNs, GCP families and images).
JAMMY_NAME = re.compile(r"(2204|22[._]04|jammy)", re.IGNORECASE)
CONTROLLER_SHAPES = {
    "aws": (re.compile(r"^[a-z][a-z0-9-]*\.[a-z0-9]+$"), "an EC2 instance type like 'm7i.large'"),
    "azure": (re.compile(r"^(Standard|Basic)_[A-Za-z0-9_]+$"), "an Azure VM size like 'Standard_D4s_v5'"),
    "gcp": (re.compile(r"^[a-z][a-z0-9]*-[a-z0-9-]+$"), "a GCE machine type like 'n2-standard-4'"),
}


def slurm(spec: ClusterSpec) -> bool:
    return spec.scheduler.kind == "slurm"


def slurm_settings_need_slurm(spec: ClusterSpec) -> list[Problem]:
    """Settings under `scheduler.slurm` without `kind: slurm` would be silently ignored (the defaults, as a dumped
    spec carries them, are not settings)."""
    if slurm(spec) or spec.scheduler.slurm == Slurm():
        return []
    return [Problem("scheduler.kind", spec.scheduler.kind, "`scheduler.slurm` is set: add `scheduler.kind: slurm`, "
                    "or drop `scheduler.slurm`")]


def slurm_is_for_training(spec: ClusterSpec) -> list[Problem]:
    if slurm(spec) and spec.workload == "inference":
        return [Problem("scheduler.kind", "slurm", "an inference fleet serves requests behind its load balancer; "
                        "Slurm schedules training jobs: use `workload: training`, or drop `scheduler`")]
    return []


def image_has_dynamic_nodes(spec: ClusterSpec) -> list[Problem]:
    """Slurm from Ubuntu 22.04's archive (21.08) cannot register dynamic nodes."""
    if not slurm(spec):
        return []
    works = f"use {SLURM_IMAGES[spec.cloud]}"
    if spec.image.kind == "ubuntu-22.04":
        return [Problem("image.kind", "ubuntu-22.04", f"Ubuntu 22.04's archive has Slurm 21.08, which has no dynamic "
                        f"nodes (`slurmd -Z` needs 22.05 or later); {works}")]
    if spec.image.id is not None and JAMMY_NAME.search(spec.image.id):
        return [Problem("image.id", spec.image.id, f"names an Ubuntu 22.04 image, whose archive has Slurm 21.08 "
                        f"(no dynamic nodes); {works}")]
    return []


def controller_type_fits_cloud(spec: ClusterSpec) -> list[Problem]:
    chosen = spec.scheduler.slurm.controller_instance_type
    if not slurm(spec) or chosen is None:
        return []
    shape, expected = CONTROLLER_SHAPES[spec.cloud]
    return [] if shape.match(chosen) else [Problem("scheduler.slurm.controller_instance_type", chosen,
                                                   f"expected {expected} on {spec.cloud}")]


def no_mig_under_slurm(spec: ClusterSpec) -> list[Problem]:
    """gres.conf lists whole GPUs (/dev/nvidiaN); MIG instances as GRES need NVML autodetection, not built here."""
    if slurm(spec) and spec.node.mig.profiles:
        return [Problem("node.mig.profiles", list(spec.node.mig.profiles), "Slurm schedules whole GPUs here "
                        "(gres.conf lists /dev/nvidiaN); drop `node.mig.profiles`, or drop `scheduler`")]
    return []


SCHEDULER_RULES = (
    slurm_settings_need_slurm,
    slurm_is_for_training,
    image_has_dynamic_nodes,
    controller_type_fits_cloud,
    no_mig_under_slurm,
)
