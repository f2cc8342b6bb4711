"""gpufleet-watcher against loopback emulators of each cloud's metadata service: the drain hook runs exactly once
on a notice, Azure's event is acknowledged once, and missing or unreachable metadata never stops the daemon."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import node_script, write_env
from .metadata_servers import AZURE_EVENT_ID, MetadataServer

INTERVAL = "0.05"


@pytest.fixture(scope="module")
def watcher_script(tmp_path_factory) -> Path:
    return node_script(tmp_path_factory.mktemp("watcher"), "usr/local/sbin/gpufleet-watcher")


@pytest.fixture(scope="module")
def cloud_watchers(tmp_path_factory) -> dict:
    """cloud -> the watcher exactly as that cloud's nodes get it: only its own cloud's event sources."""
    from gpufleet.cloud_init.parts import FILES_DIR, for_cloud, shipped
    relative = "usr/local/sbin/gpufleet-watcher"
    scripts = {}
    for cloud in ("aws", "gcp", "azure"):
        script = tmp_path_factory.mktemp(f"watcher-{cloud}") / "gpufleet-watcher"
        script.write_text(shipped(for_cloud((FILES_DIR / relative).read_text(), cloud), relative))
        script.chmod(0o755)
        scripts[cloud] = script
    return scripts


@pytest.mark.parametrize("cloud", ["aws", "gcp", "azure"])
def test_each_cloud_ships_only_its_own_event_sources(cloud_watchers, cloud):
    import re
    text = cloud_watchers[cloud].read_text()
    compile(text, str(cloud_watchers[cloud]), "exec")
    assert re.findall(r'^SOURCES\["(\w+)"\]', text, re.M) == [cloud]
    others = {"aws": "class Aws", "gcp": "class Gcp", "azure": "class Azure"}
    assert [c for c, marker in others.items() if marker in text] == [cloud]


class Watcher:
    """The daemon under test, with a drain hook that records each run."""

    def __init__(self, script: Path, tmp_path: Path, cloud: str, url: str, path_prefix: str = "", **env):
        self.record = tmp_path / "hook-runs"
        hook = tmp_path / "drain-hook"
        hook.write_text(f'#!/bin/sh\necho "$GPUFLEET_NOTICE_KIND" >>"{self.record}"\n')
        hook.chmod(0o755)
        self.env_file = write_env(tmp_path / "node.env", {
            "GPUFLEET_CLOUD": cloud, "GPUFLEET_METADATA_URL": url, "GPUFLEET_DRAIN_HOOK": str(hook),
            "GPUFLEET_RUN_DIR": str(tmp_path / "run"), "GPUFLEET_WATCH_INTERVAL_SECONDS": INTERVAL, **env})
        self.script = script
        self.log = tmp_path / "watcher.log"
        self.path_prefix = path_prefix  # a folder of fake commands (the AWS CLI), searched first

    def __enter__(self):
        environment = {k: v for k, v in os.environ.items() if not k.startswith("GPUFLEET_")}
        environment["GPUFLEET_ENV_FILE"] = str(self.env_file)
        if self.path_prefix:
            environment["PATH"] = f"{self.path_prefix}:{environment.get('PATH', '')}"
        self.process = subprocess.Popen([sys.executable, str(self.script)], env=environment,
                                        stdout=self.log.open("w"), stderr=subprocess.STDOUT)
        return self

    def __exit__(self, *exc):
        self.process.terminate()
        self.process.wait(timeout=5)

    def runs(self) -> list[str]:
        return self.record.read_text().split() if self.record.exists() else []

    def wait_for_runs(self, count: int, timeout: float = 15.0) -> None:
        deadline = time.monotonic() + timeout
        while len(self.runs()) < count and time.monotonic() < deadline:
            time.sleep(0.02)

    def output(self) -> str:
        return self.log.read_text()


def wait_until(predicate, timeout: float = 15.0) -> bool:
    """Waits for a condition instead of a fixed time, so a loaded machine (a slow daemon start) cannot fail a test."""
    deadline = time.monotonic() + timeout
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.02)
    return predicate()


def answered(server: MetadataServer, count: int = 8) -> None:
    """Waits until the emulator has answered `count` more requests: the daemon kept polling that long."""
    start = len(server.requests)
    assert wait_until(lambda: len(server.requests) >= start + count), "the watcher stopped polling"


@pytest.mark.parametrize("cloud", ["aws", "gcp", "azure"])
def test_notice_runs_the_drain_hook_exactly_once(cloud_watchers, tmp_path, cloud):
    with MetadataServer(cloud) as server, Watcher(cloud_watchers[cloud], tmp_path, cloud, server.url) as watcher:
        answered(server, 3)
        assert watcher.runs() == []
        server.notice()
        watcher.wait_for_runs(1)
        answered(server)
        assert watcher.runs() == ["interruption"]
        assert watcher.process.poll() is None
        assert "running drain hook" in watcher.output()
        if cloud == "azure":
            assert server.acks == [{"StartRequests": [{"EventId": AZURE_EVENT_ID}]}]
        if cloud == "aws":
            assert "PUT /latest/api/token" in server.requests


def test_an_azure_reboot_or_redeploy_drains_and_is_acknowledged(watcher_script, tmp_path):
    """A reboot or a move to another host stops the jobs as surely as an eviction: drain, then let it start."""
    for number, event_type in enumerate(("Reboot", "Redeploy")):
        folder = tmp_path / event_type
        folder.mkdir()
        with MetadataServer("azure", azure_event_type=event_type) as server, \
                Watcher(watcher_script, folder, "azure", server.url) as watcher:
            server.notice()
            watcher.wait_for_runs(1)
            assert wait_until(lambda: server.acks == [{"StartRequests": [{"EventId": AZURE_EVENT_ID}]}]), server.acks
            assert watcher.runs() == ["maintenance"], number


def test_an_azure_freeze_is_logged_but_neither_drained_nor_acknowledged(watcher_script, tmp_path):
    with MetadataServer("azure", azure_event_type="Freeze") as server, \
            Watcher(watcher_script, tmp_path, "azure", server.url) as watcher:
        server.notice()
        assert wait_until(lambda: "Azure Freeze event" in watcher.output())
        answered(server)
        assert watcher.runs() == [] and server.acks == []
        assert watcher.output().count("Azure Freeze event") == 1


def test_azure_preempt_of_another_vm_is_ignored(watcher_script, tmp_path):
    with MetadataServer("azure", azure_event_for="gpufleet_vmss_7") as server, \
            Watcher(watcher_script, tmp_path, "azure", server.url) as watcher:
        server.notice()
        answered(server)
        assert watcher.runs() == [] and server.acks == []
        assert any("/metadata/instance/compute/name" in r for r in server.requests)


def test_azure_vm_name_is_asked_again_after_a_failed_answer(watcher_script, tmp_path):
    """A transient IMDS error for this VM's name must not make every later Preempt in the scale set count."""
    with MetadataServer("azure", azure_event_for="gpufleet_vmss_7", azure_name_failures=2) as server, \
            Watcher(watcher_script, tmp_path, "azure", server.url) as watcher:
        assert wait_until(lambda: sum("/compute/name" in r for r in server.requests) == 3)  # failed, failed, name
        server.notice()
        answered(server)
        assert watcher.runs() == [] and server.acks == []
        assert sum("/metadata/instance/compute/name" in r for r in server.requests) == 3
        assert watcher.process.poll() is None


def test_unreachable_metadata_does_not_stop_the_daemon(watcher_script, tmp_path):
    """A metadata service that hangs up on every connection: the daemon keeps polling (counted by the connections it
    makes, not a fixed wait) and logs the outage once."""
    import threading
    hangups = []
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)

    def hang_up_on_everyone():
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            connection.close()
            hangups.append(time.monotonic())

    threading.Thread(target=hang_up_on_everyone, daemon=True).start()
    try:
        with Watcher(watcher_script, tmp_path, "aws", f"http://127.0.0.1:{listener.getsockname()[1]}") as watcher:
            assert wait_until(lambda: "metadata poll failed" in watcher.output())
            polls_then = len(hangups)
            assert wait_until(lambda: len(hangups) >= polls_then + 10), "the watcher stopped polling"
            assert watcher.process.poll() is None
            assert watcher.runs() == []
            assert watcher.output().count("metadata poll failed") == 1  # logged once, not every poll
    finally:
        listener.close()


@pytest.mark.parametrize("cloud", ["aws", "gcp", "azure"])
def test_missing_metadata_endpoints_do_not_stop_the_daemon(watcher_script, tmp_path, cloud):
    with MetadataServer(cloud, broken=True) as server, Watcher(watcher_script, tmp_path, cloud, server.url) as watcher:
        assert wait_until(lambda: "metadata poll failed" in watcher.output())
        answered(server, 3)
        assert watcher.process.poll() is None
        assert watcher.runs() == []
        assert "metadata poll failed" in watcher.output()
        assert len(server.requests) >= 2  # it kept polling


def test_rebalance_is_logged_but_does_not_drain_by_default(watcher_script, tmp_path):
    with MetadataServer("aws") as server, Watcher(watcher_script, tmp_path, "aws", server.url) as watcher:
        server.rebalance()
        assert wait_until(lambda: "rebalance recommendation" in watcher.output())
        answered(server)
        assert watcher.runs() == []
        assert watcher.output().count("rebalance recommendation") == 1
        server.notice()
        watcher.wait_for_runs(1)
        answered(server, 4)
        assert watcher.runs() == ["interruption"]


def test_rebalance_drains_once_when_asked(watcher_script, tmp_path):
    with MetadataServer("aws") as server, Watcher(watcher_script, tmp_path, "aws", server.url,
                                                  GPUFLEET_DRAIN_ON_REBALANCE="1") as watcher:
        server.rebalance()
        watcher.wait_for_runs(1)
        server.notice()
        answered(server)
        assert watcher.runs() == ["rebalance"]


def scheduled(code: str, starts_in: float, state: str = "active") -> str:
    """An events/maintenance/scheduled answer in IMDS's own format ("21 Jan 2019 09:00:43 GMT")."""
    def stamp(offset: float) -> str:
        return time.strftime("%d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + offset))
    return json.dumps([{"NotBefore": stamp(starts_in), "Code": code, "Description": "scheduled " + code,
                        "EventId": "instance-event-0d59937288b749b32", "NotAfter": stamp(starts_in + 1000),
                        "State": state}], indent=2)


def test_an_aws_scheduled_event_drains_only_near_its_start(watcher_script, tmp_path):
    """A reboot announced for two hours from now is logged and jobs keep running; once it is within the lead time
    (15 min by default) the node drains, once."""
    with MetadataServer("aws") as server, Watcher(watcher_script, tmp_path, "aws", server.url,
                                                  GPUFLEET_MAINTENANCE_CHECK_SECONDS="0") as watcher:
        server.aws_scheduled_events = scheduled("system-reboot", 7200)
        assert wait_until(lambda: "scheduled event system-reboot" in watcher.output())
        answered(server, 10)
        assert watcher.runs() == []
        server.aws_scheduled_events = scheduled("system-reboot", 600)
        watcher.wait_for_runs(1)
        answered(server)
        assert watcher.runs() == ["maintenance"]


@pytest.mark.parametrize("events", [scheduled("system-reboot", 60, state="completed"),
                                    scheduled("system-reboot", 60, state="canceled"),
                                    scheduled("instance-repaint", 60), "[]", ""])
def test_aws_scheduled_events_that_are_not_due_maintenance_never_drain(watcher_script, tmp_path, events):
    with MetadataServer("aws") as server, Watcher(watcher_script, tmp_path, "aws", server.url,
                                                  GPUFLEET_MAINTENANCE_CHECK_SECONDS="0") as watcher:
        server.aws_scheduled_events = events
        answered(server, 12)
        assert watcher.runs() == [] and watcher.process.poll() is None


def test_aws_retirement_already_past_its_start_drains_at_once(watcher_script, tmp_path):
    with MetadataServer("aws") as server:
        server.aws_scheduled_events = scheduled("instance-retirement", -30)
        with Watcher(watcher_script, tmp_path, "aws", server.url) as watcher:
            watcher.wait_for_runs(1)
            assert watcher.runs() == ["maintenance"]
            assert "instance-retirement instance-event-0d59937288b749b32 not before" in watcher.output()


def test_a_restarted_daemon_does_not_drain_again(watcher_script, tmp_path):
    with MetadataServer("gcp") as server:
        server.notice()
        with Watcher(watcher_script, tmp_path, "gcp", server.url) as watcher:
            watcher.wait_for_runs(1)
            assert wait_until(lambda: (tmp_path / "run" / "drained.json").exists())  # written after the hook
        with Watcher(watcher_script, tmp_path, "gcp", server.url) as watcher:
            assert wait_until(lambda: "already drained" in watcher.output())
            answered(server, 6)
            assert watcher.runs() == ["interruption"]
            marker = json.loads((tmp_path / "run" / "drained.json").read_text())
            assert marker["kind"] == "interruption"


def test_unknown_cloud_exits_with_a_message(watcher_script, tmp_path):
    env = write_env(tmp_path / "node.env", {"GPUFLEET_CLOUD": "oci"})
    done = subprocess.run([sys.executable, str(watcher_script)], env={**os.environ, "GPUFLEET_ENV_FILE": str(env)},
                          capture_output=True, text=True, timeout=10)
    assert done.returncode == 2 and "unknown GPUFLEET_CLOUD 'oci'" in done.stdout
