"""The cloud-neutral half of the power programs: which nodes belong to which group, the fallback through a group's
targets, what Slurm is told when nothing is left, and the safety rules.

- resume: the nodes Slurm names are split by group; nodes that already have an instance (slurmctld may run
  ResumeProgram twice for a node after a restart, slurm.conf(5)) are left alone; the rest go to the group's first
  target, what that target could not start goes to the next, and so on within this one run. Nodes left over are set
  DOWN with the last error as the reason ("gpufleet capacity: ...", "gpufleet quota: ...", "gpufleet error: ..."),
  which requeues their jobs (they stay pending, JobRequeue=1), then POWER_DOWN_FORCE so ResumeTimeout does not
  replace the reason; `sync` returns them to service after `capacity_retry_s`, when Slurm may resume them again.
- suspend and resume-fail: each node's instance is found by the node's name (AWS tag, GCP instance name, Azure
  user data) among the cluster's instances and deleted by its id. No count is ever lowered, so no other node can
  be picked. A node Slurm shows with a job (ALLOCATED, MIXED, COMPLETING) is never released.
- sync (every minute, the controller's timer): repairs broken nodes (repair.py: not responding, or drained by the
  health check) by releasing their instances, returns nodes this engine set DOWN (and nodes that timed out) to
  service once their retry time has passed (a repaired node at once), powers up nodes until `min_nodes` of each group are up or coming
  (slurm.conf's SuspendExcNodes keeps them from being powered down again), and clears a group's short flag once no
  node of it is DOWN for capacity or quota any more; it also records how many of each group's nodes are up (billed)
  and busy, for the dashboard.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Protocol

from .config import PowerConfig, PowerGroup
from .metrics import PowerState
from .repair import REPAIR_PREFIX, needs_repair, released_unhealthy, repair_reason
from .slurm import Node, Slurm, reason_text

log = logging.getLogger("gpufleet-power")
REASON_PREFIX = "gpufleet "
RETRIED_REASONS = ("gpufleet capacity:", "gpufleet quota:", "gpufleet error:", "ResumeTimeout reached")
SHORT_PREFIXES = ("gpufleet capacity:", "gpufleet quota:")


@dataclass(frozen=True)
class CloudError:
    """A launch that did not start every node it was asked for, in the cloud's own words."""

    kind: str
    """capacity | quota | error"""
    code: str
    message: str
    target: str
    """The target, as "type zone", for the reason."""


@dataclass
class Attempt:
    created: dict[str, str] = field(default_factory=dict)
    """Node name -> instance id, for the nodes this attempt started."""
    error: CloudError | None = None


@dataclass(frozen=True)
class Instance:
    id: str
    node: str
    location: str = ""
    """AWS: empty; GCP: the zone; Azure: the scale set id."""
    live: bool = True
    """Running or starting; a stopped or failed instance is stale: deleted before the node is resumed again."""


class Provider(Protocol):
    def targets(self, group: PowerGroup) -> int: ...

    def launch(self, group: PowerGroup, target: int, names: list[str]) -> Attempt: ...

    def find(self, group: PowerGroup, names: list[str]) -> list[Instance]: ...

    def terminate(self, group: PowerGroup, instances: list[Instance]) -> None: ...


def by_group(config: PowerConfig, names: list[str]) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = {}
    for name in names:
        group = config.group_of(name)
        if group is None:
            log.warning("node %s belongs to no elastic group; left alone", name)
            continue
        grouped.setdefault(group.name, []).append(name)
    return grouped


def resume(config: PowerConfig, provider: Provider, slurm: Slurm, state: PowerState, names: list[str]) -> None:
    groups = {group.name: group for group in config.groups}
    for group_name, nodes in by_group(config, names).items():
        group = groups[group_name]
        found = provider.find(group, nodes)
        running = {instance.node for instance in found if instance.live}
        stale = [instance for instance in found if not instance.live]
        if stale:
            log.info("%s: deleting stale instances %s", group.name, ", ".join(f"{i.node}={i.id}" for i in stale))
            provider.terminate(group, stale)
        pending = [node for node in nodes if node not in running]
        if running:
            log.info("%s: %s already have an instance", group.name, ",".join(sorted(running)))
        errors: list[CloudError] = []
        started = 0
        for target in range(provider.targets(group)):
            if not pending:
                break
            attempt = provider.launch(group, target, pending)
            started += len(attempt.created)
            for node, instance_id in sorted(attempt.created.items()):
                log.info("%s: %s is instance %s", group.name, node, instance_id)
            pending = [node for node in pending if node not in attempt.created]
            if attempt.error is not None:
                errors.append(attempt.error)
                log.warning("%s: %s %s: %s (%s)", group.name, attempt.error.target, attempt.error.kind,
                            attempt.error.code, attempt.error.message)
        with state.locked():
            state.count(group.name, "resumed", started)
            if pending:
                error = errors[-1] if errors else CloudError("error", "NoTarget", "the group has no target", "-")
                state.short(group.name, error.kind, error.code, len(pending))
            else:
                state.not_short(group.name)
        if pending:
            reason = shortage_reason(errors, provider.targets(group))
            log.error("%s: %s get no instance: %s", group.name, ",".join(pending), reason)
            slurm.update(pending, "DOWN", reason)
            slurm.update(pending, "POWER_DOWN_FORCE", reason)


def shortage_reason(errors: list[CloudError], targets: int) -> str:
    """"gpufleet capacity: InsufficientInstanceCapacity on p5e.48xlarge us-east-1b (2 of 2 targets tried)"."""
    if not errors:
        return "gpufleet error: no target to launch into"
    last = errors[-1]
    reason = f"{REASON_PREFIX}{last.kind}: {last.code} on {last.target} ({len(errors)} of {targets} targets failed)"
    return reason_text(reason)


def release(config: PowerConfig, provider: Provider, slurm: Slurm, state: PowerState, names: list[str],
            timed_out: bool = False) -> None:
    """SuspendProgram and ResumeFailProgram: delete the named nodes' instances by id, never a busy node's."""
    groups = {group.name: group for group in config.groups}
    for group_name, nodes in by_group(config, names).items():
        group = groups[group_name]
        shown = slurm.nodes(nodes)
        busy = sorted(node for node in nodes if node in shown and shown[node].busy)
        if busy:
            log.error("%s: %s run a job; not released", group.name, ",".join(busy))
        instances = [instance for instance in provider.find(group, [n for n in nodes if n not in busy])]
        if instances:
            provider.terminate(group, instances)
            log.info("%s: released %s", group.name, ", ".join(f"{i.node}={i.id}" for i in instances))
        with state.locked():
            state.count(group.name, "released", len(instances))
            if timed_out:
                state.failed(group.name, "timeout", len(nodes))


def sync(config: PowerConfig, slurm: Slurm, state: PowerState, now: float | None = None) -> None:
    now = time.time() if now is None else now
    for group in config.groups:
        shown = slurm.nodes(group.node_names())
        cleared = [node.name for node in shown.values() if released_unhealthy(node)]
        returning = [node.name for node in shown.values() if _retry_due(node, now, config.capacity_retry_s)] + cleared
        broken = [node for node in shown.values() if needs_repair(node)]
        for node in broken:  # one update each: each keeps its own reason
            reason = repair_reason(node)
            log.warning("%s: repairing %s: %s", group.name, node.name, node.reason)
            slurm.update([node.name], "DOWN", reason)
            slurm.update([node.name], "POWER_DOWN_FORCE", reason)
        if returning:
            log.info("%s: returning %s to service", group.name, ",".join(returning))
            slurm.update(returning, "RESUME")
        if group.min_nodes:
            _keep_min(group, shown, set(returning), slurm)
        recovered = not any(node.reason.startswith(SHORT_PREFIXES) and node.name not in returning
                            for node in shown.values())
        with state.locked():
            state.seen(group.name, up=sum(node.up_or_coming for node in shown.values()),
                       busy=sum(node.busy for node in shown.values()))
            state.count(group.name, "repaired", len(broken) + len(cleared))
            if recovered:
                state.not_short(group.name)


def _retry_due(node: Node, now: float, retry_s: int) -> bool:
    if node.state != "DOWN" or not node.powered_down:
        return False
    if node.reason.startswith(REPAIR_PREFIX):
        return True
    if not node.reason.startswith(RETRIED_REASONS):
        return False
    return node.reason_time is None or node.reason_time.timestamp() + retry_s <= now


def _keep_min(group: PowerGroup, shown: dict[str, Node], returning: set[str], slurm: Slurm) -> None:
    up = [node for node in shown.values() if node.up_or_coming]
    wanted = group.min_nodes - len(up)
    if wanted <= 0:
        return
    ready = [name for name in group.node_names() if name in shown and name not in returning
             and shown[name].powered_down and shown[name].state == "IDLE" and "DRAIN" not in shown[name].flags]
    chosen = ready[:wanted]
    if chosen:
        log.info("%s: powering up %s to keep %d nodes up", group.name, ",".join(chosen), group.min_nodes)
        slurm.update(chosen, "POWER_UP")
