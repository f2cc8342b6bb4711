"""slurmctld as the power engine sees it through `scontrol`, for the cloud API tests (the real slurmctld runs in
test_power_daemons.py): nodes by name, with state, flags and reason, and every update recorded."""

from __future__ import annotations

from datetime import datetime

from gpufleet.cloud_init.power.slurm import Node


class FakeSlurm:
    def __init__(self, names: list[str], busy: tuple[str, ...] = ()):
        self.shown = {name: Node(name=name, state="ALLOCATED" if name in busy else "IDLE",
                                 flags=frozenset({"CLOUD"} if name in busy else {"CLOUD", "POWERING_UP"}))
                      for name in names}
        self.updates: list[tuple[tuple[str, ...], str, str]] = []

    def hostnames(self, hostlist: str) -> list[str]:
        return hostlist.split(",")

    def nodes(self, names: list[str]) -> dict[str, Node]:
        return {name: self.shown[name] for name in names if name in self.shown}

    def update(self, names: list[str], state: str, reason: str = "") -> None:
        if not names:
            return
        self.updates.append((tuple(names), state, reason))
        for name in names:
            node = self.shown[name]
            if state == "DOWN":
                node = Node(name=name, state="DOWN", flags=node.flags, reason=reason, reason_time=datetime.now())
            elif state == "POWER_DOWN_FORCE":
                node = Node(name=name, state=node.state, flags=frozenset({"CLOUD", "POWERED_DOWN"}),
                            reason=node.reason, reason_time=node.reason_time)
            self.shown[name] = node

    def reasons(self) -> dict[str, str]:
        return {name: node.reason for name, node in self.shown.items() if node.state == "DOWN"}
