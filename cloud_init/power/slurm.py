"""What the power programs ask of slurmctld, through `scontrol` only (the programs run on the controller, as
SlurmUser, which may update nodes).

Facts this relies on, from Slurm's own sources (SchedMD/slurm, tags slurm-22-05-8-1 and slurm-23-11-4-1; Debian 12
ships 22.05.8, Ubuntu 24.04 23.11.4):
- slurmctld runs ResumeProgram, SuspendProgram and ResumeFailProgram with one argument, the nodes as a hostlist
  expression (23.11 adds a second, the job's features), and an environment of SLURM_CONF (plus SLURM_JOB_ID and
  SLURM_RESUME_FILE for a resume) and nothing else: no PATH (22.05 `power_save.c` `_run_prog`, 23.11
  `slurmscriptd_run_power`). 22.05 also closes every descriptor, stdout and stderr included (`closeall(0)`), so
  the programs log to a file and call scontrol by its absolute path.
- `scontrol update nodename=... state=DOWN reason=...` requeues the nodes' jobs (`kill_running_job_by_node_name`,
  node_mgr.c) but leaves a resuming node POWERING_UP: at ResumeTimeout slurmctld would replace the reason with
  "ResumeTimeout reached". `state=POWER_DOWN_FORCE` then clears POWERING_UP (node_mgr.c, "Abort any power up
  request"), and the power-save thread suspends the DOWN node (SuspendProgram) without making it available again
  (power_save.c: `make_node_avail` only for nodes neither DOWN, DRAIN nor FAIL), so the reason stays until `sync`
  returns the node with `state=RESUME`.
- A node that did not register by ResumeTimeout is set DOWN with reason "ResumeTimeout reached", POWERED_DOWN, and
  handed to ResumeFailProgram (power_save.c).
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from datetime import datetime

REASON_MAX_CHARS = 250
REASON_TIME = re.compile(r"\s*\[[^\]@]*@(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\]$")
BUSY_STATES = ("ALLOCATED", "MIXED", "COMPLETING")


@dataclass(frozen=True)
class Node:
    """One node as `scontrol show node` gives it."""

    name: str
    state: str
    """The base state: IDLE, DOWN, ALLOCATED, MIXED, ..."""
    flags: frozenset[str]
    """CLOUD, POWERED_DOWN, POWERING_UP, POWERING_DOWN, DRAIN, NOT_RESPONDING, ..."""
    reason: str = ""
    reason_time: datetime | None = None

    @property
    def busy(self) -> bool:
        """A job runs (or is ending) on the node: it is never released."""
        return self.state in BUSY_STATES or "COMPLETING" in self.flags

    @property
    def powered_down(self) -> bool:
        return "POWERED_DOWN" in self.flags and "POWERING_DOWN" not in self.flags

    @property
    def up_or_coming(self) -> bool:
        """Has, or is getting, an instance: neither powered down, powering down, nor DOWN."""
        return not ({"POWERED_DOWN", "POWERING_DOWN"} & self.flags) and self.state != "DOWN"


def reason_text(text: str) -> str:
    """A node reason as `scontrol update ... reason=` takes it in one argument: printable, without quotes, short."""
    return "".join(char for char in text if char.isprintable() and char not in "'\"")[:REASON_MAX_CHARS]


class SlurmError(RuntimeError):
    pass


class Slurm:
    def __init__(self, scontrol: str):
        self.scontrol = scontrol

    def _run(self, *args: str) -> str:
        done = subprocess.run([self.scontrol, *args], capture_output=True, text=True, timeout=60, check=False)
        if done.returncode != 0:
            raise SlurmError(f"scontrol {' '.join(args)}: {(done.stderr or done.stdout).strip()}")
        return done.stdout

    def hostnames(self, hostlist: str) -> list[str]:
        return self._run("show", "hostnames", hostlist).split()

    def hostlist(self, names: list[str]) -> str:
        return self._run("show", "hostlist", ",".join(names)).strip() if names else ""

    def nodes(self, names: list[str]) -> dict[str, Node]:
        """The nodes named that slurmctld knows (a CLOUD node powered down is known, and shown to SlurmUser)."""
        if not names:
            return {}
        return parse_nodes(self._run("show", "node", self.hostlist(names)))

    def update(self, names: list[str], state: str, reason: str = "") -> None:
        if not names:
            return
        args = ["update", f"nodename={self.hostlist(names)}", f"state={state}"]
        if reason:
            args.append(f"reason={reason}")
        self._run(*args)


def parse_nodes(text: str) -> dict[str, Node]:
    """`scontrol show node` (several lines a node, blocks apart by a blank line). The Reason line is read whole:
    reasons have spaces; other lines are `Key=Value` words."""
    found: dict[str, Node] = {}
    for block in re.split(r"\n\s*\n", text.strip()):
        values: dict[str, str] = {}
        for line in block.splitlines():
            stripped = line.strip()
            if stripped.startswith("Reason="):
                values["Reason"] = stripped[len("Reason="):]
                continue
            for word in stripped.split():
                key, sep, value = word.partition("=")
                if sep and key not in values:
                    values[key] = value
        if "NodeName" not in values:
            continue
        state, *flags = values.get("State", "UNKNOWN").split("+")
        reason, when = values.get("Reason", "").strip(), None
        if (match := REASON_TIME.search(reason)) is not None:
            when = datetime.fromisoformat(match.group(1))
            reason = reason[:match.start()].strip()
        found[values["NodeName"]] = Node(name=values["NodeName"], state=state.rstrip("*~#%$@^!-"),
                                         flags=frozenset(flags), reason="" if reason == "(null)" else reason,
                                         reason_time=when)
    return found
