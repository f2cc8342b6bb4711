"""What the power programs remember between runs, and the Prometheus text they publish from it.

State lives in one JSON file under the config's `state_dir` (the controller's state disk), changed under an
exclusive lock: slurmctld may run a resume and a suspend at the same time. After each change the metrics file is
written again, atomically (a temporary file in the same folder renamed over the old one), for node_exporter's
textfile collector, the way cloud_init/controller/gpufleet-slurm-metrics publishes Slurm's counts:
- `gpufleet_capacity_short{group, reason}`: 1 while the group is short, reason `capacity`, `quota` or `error` (0 for
  the other two), which the `GpufleetCapacityShort` alert reads;
- `gpufleet_power_resume_failures_total{group, reason}`: nodes a resume could not start (`timeout`: nodes that did
  not register by ResumeTimeout);
- `gpufleet_power_nodes_resumed_total{group}`, `gpufleet_power_nodes_released_total{group}`,
  `gpufleet_power_nodes_repaired_total{group}` (broken nodes `sync` released for a fresh instance);
- `gpufleet_power_nodes_up{group}` (nodes with, or getting, an instance: what the cloud bills) and
  `gpufleet_power_nodes_busy{group}` (those running a job), as `sync` last saw them each minute: the dashboard's
  nodes up by group and its GPU-hours used against paid.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

SHORT_REASONS = ("capacity", "quota", "error")
FAILURE_REASONS = (*SHORT_REASONS, "timeout")
STATE_FILE = "state.json"


class PowerState:
    """The state file, read when the lock is taken and written back when it is released."""

    def __init__(self, state_dir: str, metrics_file: str, groups: list[str]):
        self.dir = Path(state_dir)
        self.metrics_file = metrics_file
        self.groups = groups
        self.data: dict = {}

    @contextlib.contextmanager
    def locked(self) -> Iterator[PowerState]:
        self.dir.mkdir(parents=True, exist_ok=True)
        with open(self.dir / ".lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            path = self.dir / STATE_FILE
            self.data = json.loads(path.read_text()) if path.exists() else {}
            yield self
            _write_atomically(path, json.dumps(self.data, sort_keys=True, indent=1) + "\n")
            if self.metrics_file:
                _write_atomically(Path(self.metrics_file), self.prometheus_text())

    def group(self, name: str) -> dict:
        return self.data.setdefault("groups", {}).setdefault(
            name, {"short": None, "failures": {}, "resumed": 0, "released": 0})

    def short(self, group: str, reason: str, code: str, nodes: int) -> None:
        record = self.group(group)
        record["short"] = {"reason": reason, "code": code, "since": int(time.time())}
        record["failures"][reason] = record["failures"].get(reason, 0) + nodes

    def not_short(self, group: str) -> None:
        self.group(group)["short"] = None

    def count(self, group: str, key: str, nodes: int) -> None:
        record = self.group(group)
        record[key] = record.get(key, 0) + nodes

    def seen(self, group: str, up: int, busy: int) -> None:
        record = self.group(group)
        record["up"], record["busy"] = up, busy

    def failed(self, group: str, reason: str, nodes: int) -> None:
        failures = self.group(group)["failures"]
        failures[reason] = failures.get(reason, 0) + nodes

    def prometheus_text(self) -> str:
        lines = [
            "# HELP gpufleet_capacity_short 1 while the group's last resume left Slurm nodes without an instance.",
            "# TYPE gpufleet_capacity_short gauge"]
        records = {name: self.group(name) for name in self.groups}
        for name, record in records.items():
            current = (record["short"] or {}).get("reason")
            lines += [f'gpufleet_capacity_short{{group="{name}",reason="{reason}"}} {int(current == reason)}'
                      for reason in SHORT_REASONS]
        lines += ["# HELP gpufleet_power_resume_failures_total Slurm nodes a resume could not start, by reason.",
                  "# TYPE gpufleet_power_resume_failures_total counter"]
        for name, record in records.items():
            lines += [f'gpufleet_power_resume_failures_total{{group="{name}",reason="{reason}"}} '
                      f'{record["failures"].get(reason, 0)}' for reason in FAILURE_REASONS]
        for key, help_text in (("resumed", "Slurm nodes given an instance by ResumeProgram."),
                               ("released", "Instances deleted by SuspendProgram or ResumeFailProgram."),
                               ("repaired", "Broken nodes (not responding, or drained unhealthy) sync released.")):
            metric = f"gpufleet_power_nodes_{key}_total"
            lines += [f"# HELP {metric} {help_text}", f"# TYPE {metric} counter"]
            lines += [f'{metric}{{group="{name}"}} {record.get(key, 0)}' for name, record in records.items()]
        for key, help_text in (("up", "Slurm nodes with, or getting, an instance (billed), at the last sync."),
                               ("busy", "Slurm nodes running a job, at the last sync.")):
            metric = f"gpufleet_power_nodes_{key}"
            lines += [f"# HELP {metric} {help_text}", f"# TYPE {metric} gauge"]
            lines += [f'{metric}{{group="{name}"}} {record.get(key, 0)}' for name, record in records.items()]
        return "\n".join(lines) + "\n"


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(handle, "w") as out:
        out.write(text)
    os.chmod(temporary, 0o644)
    os.replace(temporary, path)
