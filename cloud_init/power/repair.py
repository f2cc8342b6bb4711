"""Which elastic nodes `sync` repairs: nodes whose instance is broken and which nothing else would replace.

A fixed group's nodes are repaired by the cloud (the Auto Scaling group's, managed instance group's or scale set's
health checks). An elastic node has no such owner: on AWS it is in no Auto Scaling group, on Azure the scale set's
automatic repairs are off, and on GCP it is a bare instance from a template. Left alone, it would stay in Slurm:
- DOWN with Slurm's reason "Not responding", once slurmd has not answered for SlurmdTimeout (the instance died or
  hung without a spot notice; a spot notice drains and powers the node down itself, slurm/drain). Slurm has
  already requeued its jobs (`set_node_down`), and keeps an earlier reason, such as an operator's drain before a
  reboot, instead of writing "Not responding" (node_mgr.c, slurm-22-05-8-1): only Slurm's own reason is repaired;
- drained by gpufleet's HealthCheckProgram ("gpufleet: unhealthy: ..."), and idle once its jobs have ended. Slurm's
  power saving would release such a node's instance after SuspendTime but keep the node drained, out of service
  for good.

`sync` sets such a node DOWN with "gpufleet repair: <the old reason>" and then POWER_DOWN_FORCE, the path a resume
without capacity takes (engine.py): SuspendProgram deletes the instance by id and the node stays DOWN, so the
reason shows in `sinfo -R` until the next `sync` returns it to service (RESUME), powered down, at once; the next job
that needs it resumes a fresh instance, on a fallback type or zone where the first is short. A node drained
unhealthy that Slurm has already powered down (its instance released) is returned at once.
"""

from __future__ import annotations

from .slurm import Node, reason_text

REPAIR_PREFIX = "gpufleet repair: "
UNHEALTHY_PREFIX = "gpufleet: unhealthy:"
NOT_RESPONDING = "Not responding"
POWER_FLAGS = frozenset({"POWERED_DOWN", "POWERING_DOWN", "POWERING_UP", "POWER_DOWN"})


def needs_repair(node: Node) -> bool:
    """The node has a broken instance to release: DOWN as not responding (or drained unhealthy, then gone), or
    drained unhealthy and idle. A node running a job, or powering up or down, is never touched."""
    if node.busy or POWER_FLAGS & node.flags:
        return False
    if node.state == "DOWN":
        return node.reason.startswith((NOT_RESPONDING, UNHEALTHY_PREFIX))
    return node.state == "IDLE" and "DRAIN" in node.flags and node.reason.startswith(UNHEALTHY_PREFIX)


def released_unhealthy(node: Node) -> bool:
    """Drained unhealthy and already powered down by Slurm's SuspendTime: its instance is gone; only the drain is
    left to clear."""
    return node.powered_down and "DRAIN" in node.flags and node.reason.startswith(UNHEALTHY_PREFIX)


def repair_reason(node: Node) -> str:
    """"gpufleet repair: Not responding"."""
    return reason_text(REPAIR_PREFIX + node.reason)
