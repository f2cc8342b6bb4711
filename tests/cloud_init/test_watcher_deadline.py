"""The drain hook's time ends before the noticed action takes effect, where the notice says when: AWS's
instance-action `time` (two minutes on), Azure's NotBefore (30 s on for a Preempt). A watcher that saw the notice
late (metadata answering slowly on a busy node) must not let a long drain run into the machine going away: then the
drained marker, Azure's acknowledgement and the lifecycle completion would never happen. The hook reads its budget in
GPUFLEET_DRAIN_SECONDS (the Slurm drain shortens its wait for jobs to it)."""

from __future__ import annotations

import json
import time

import pytest

from .metadata_servers import MetadataServer
from .test_watcher import Watcher, answered, wait_until, watcher_script  # noqa: F401 (a fixture)

CONFIGURED = 110  # GPUFLEET_DRAIN_TIMEOUT_SECONDS's default


def budget_hook(watcher: Watcher, sleep: bool = False) -> None:
    """The hook records the budget it was given (and, with `sleep`, outlives it)."""
    hook = watcher.record.with_name("drain-hook")
    wait = "sleep 1000 & wait\n" if sleep else ""
    hook.write_text(f'#!/bin/sh\necho "$GPUFLEET_DRAIN_SECONDS" >>"{watcher.record}"\n{wait}')


@pytest.mark.parametrize(("cloud", "lead", "low", "high"), [
    ("aws", 60.0, 45, 50),          # 60 s left, less the kill's grace and a margin (10 s)
    ("aws", 300.0, CONFIGURED, CONFIGURED),  # far off: the configured timeout
    ("azure", None, 15, 20),        # a Preempt's NotBefore, 30 s on
    ("aws", -30.0, 10, 10),         # already past: never under 10 s
    ("gcp", None, CONFIGURED, CONFIGURED),  # a preemption says no time: the configured timeout
])
def test_the_hooks_budget_ends_before_the_noticed_action(watcher_script, tmp_path, cloud, lead, low, high):  # noqa: F811
    with MetadataServer(cloud) as server:
        server.notice_lead_seconds = lead
        watcher = Watcher(watcher_script, tmp_path, cloud, server.url)
        budget_hook(watcher)
        with watcher:
            answered(server, 2)
            server.notice()
            watcher.wait_for_runs(1)
            budget = int(watcher.runs()[0])
            assert low <= budget <= high, watcher.output()
            assert any(f"running drain hook for {seconds}s" in watcher.output() for seconds in (budget, budget + 1)), \
                watcher.output()


@pytest.mark.slow  # waits out a budget of about 10 s
def test_a_hook_still_running_at_its_budget_is_killed_before_the_action_and_the_node_is_marked(
        watcher_script, tmp_path):  # noqa: F811
    with MetadataServer("aws") as server:
        server.notice_lead_seconds = 21.0
        watcher = Watcher(watcher_script, tmp_path, "aws", server.url)
        budget_hook(watcher, sleep=True)
        with watcher:
            answered(server, 2)
            server.notice()
            noticed = time.time()
            marker = tmp_path / "run" / "drained.json"
            assert wait_until(marker.exists, timeout=30), watcher.output()
            assert time.time() - noticed < 21.0, "the hook outlived the noticed action"
            assert "drain hook timed out" in watcher.output()
            assert json.loads(marker.read_text())["kind"] == "interruption"
