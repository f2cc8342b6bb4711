"""The `scheduler:` section: a Slurm controller over the fleet, so a multi-node job is one `sbatch`.

Only what users choose is here; everything Slurm needs besides (configless mode, dynamic nodes, cgroups, GRES,
topology) follows from the cluster and is rendered by `gpufleet.scheduler`. Default: no scheduler, and a cluster
without one plans byte for byte as before.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .strict import Count, StrictModel

SchedulerKind = Literal["none", "slurm"]
# Slurm's own limits on a partition name are loose; this keeps it a single shell word that sinfo prints whole.
PARTITION_PATTERN = r"^[A-Za-z][A-Za-z0-9_-]{0,39}$"
INSTANCE_TYPE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{1,63}$"


class Slurm(StrictModel):
    """Slurm settings, used with `scheduler.kind: slurm`."""

    partition: str = Field("gpu", pattern=PARTITION_PATTERN, examples=["gpu", "train"])
    """Name of the partition every GPU node joins (the default partition). Default: "gpu"."""
    controller_instance_type: str | None = Field(None, pattern=INSTANCE_TYPE_PATTERN,
                                                 examples=["m7i.large", "Standard_D4s_v5", "n2-standard-4"])
    """Size of the controller VM that runs slurmctld. Default: a small CPU instance (AWS m7i.large, Azure Standard_D2s_v5, GCP n2-standard-2)."""
    state_disk_gib: Count = Field(20, ge=10, le=1024)
    """Encrypted disk for slurmctld's StateSaveLocation, kept when the controller is replaced, so the queue survives. Default: 20."""
    requeue: bool = True
    """Requeue a batch job whose node fails or leaves (spot notice, scale-in, repair) instead of failing it; a job can still say `--no-requeue`. Default: true."""
    suspend_time_minutes: Count = Field(10, ge=1, le=1440)
    """Elastic groups: minutes a node stays idle before it is drained and released (Slurm's SuspendTime). Default: 10."""
    resume_timeout_minutes: Count | None = Field(None, ge=5, le=240)
    """Elastic groups: minutes a started node may take to boot, pass its acceptance check and register before Slurm marks it DOWN and requeues its job (ResumeTimeout). Default: the image's boot-to-ready time with half again as margin (15 on driver-ready images, 30 on stock Ubuntu, which installs the driver and reboots)."""


class Scheduler(StrictModel):
    """A job scheduler over the GPU nodes (README "Run a job")."""

    kind: SchedulerKind = "none"
    """"none", or "slurm": a private controller VM in configless mode, nodes joining as dynamic nodes once their acceptance check passes. Default: "none"."""
    slurm: Slurm = Field(default_factory=Slurm)
