"""gpufleet-health-endpoint, run as a real process: what a repair probe hears in each state of the node."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from .conftest import node_script

BOOT_TIME = 1_700_000_000


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def endpoint(tmp_path: Path):
    """(state dir, base URL) of a running endpoint on loopback, with a fake /proc/stat boot time."""
    script = node_script(tmp_path / "bin", "usr/local/sbin/gpufleet-health-endpoint")
    proc_root, state = tmp_path / "proc", tmp_path / "state"
    proc_root.mkdir()
    state.mkdir()
    (proc_root / "stat").write_text(f"cpu  1 2 3\nbtime {BOOT_TIME}\nprocesses 9\n")
    port = free_port()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("GPUFLEET_")},
           "GPUFLEET_STATE_DIR": str(state), "GPUFLEET_PROC_ROOT": str(proc_root),
           "GPUFLEET_HEALTH_PORT": str(port), "GPUFLEET_HEALTH_BIND": "127.0.0.1"}
    process = subprocess.Popen([sys.executable, str(script)], env=env, stdout=subprocess.PIPE, text=True)
    assert "serving /health on 127.0.0.1" in process.stdout.readline()
    yield state, f"http://127.0.0.1:{port}"
    process.terminate()
    process.wait(timeout=5)


def get(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"{}") if err.code != 404 else {}


def write_report(state: Path, report: dict, written_at: float) -> None:
    path = state / "health.json"
    path.write_text(json.dumps(report))
    os.utime(path, (written_at, written_at))


def test_refuses_until_the_check_has_run(endpoint):
    _, url = endpoint
    assert get(url + "/health") == (503, {"healthy": False, "reason": "the acceptance check has not run yet"})


def test_a_report_from_an_earlier_boot_does_not_count(endpoint):
    state, url = endpoint
    write_report(state, {"healthy": True, "checks": []}, BOOT_TIME - 60)
    assert get(url + "/health") == (503, {"healthy": False,
                                          "reason": "the acceptance check has not run since this boot"})


def test_serves_the_failed_checks_of_an_unhealthy_node(endpoint):
    state, url = endpoint
    write_report(state, {"healthy": False, "checks": [{"check": "gpu-count", "ok": False},
                                                      {"check": "driver", "ok": True}]}, time.time())
    assert get(url + "/health") == (503, {"healthy": False, "reason": "acceptance check failed",
                                          "failed": ["gpu-count"]})


def test_answers_200_for_a_healthy_node_checked_this_boot(endpoint):
    state, url = endpoint
    write_report(state, {"healthy": True, "checked_at": "2026-12-03T06:00:00Z", "checks": []}, time.time())
    assert get(url + "/health") == (200, {"healthy": True, "checked_at": "2026-12-03T06:00:00Z"})
    assert get(url + "/health?probe=1")[0] == 200


def test_a_corrupt_report_and_other_paths_are_refused(endpoint):
    state, url = endpoint
    (state / "health.json").write_text("{not json")
    status, body = get(url + "/health")
    assert status == 503 and body["reason"].startswith("health.json unreadable")
    assert get(url + "/metrics")[0] == 404
