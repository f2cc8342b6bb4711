"""The shipped playbooks run by ansible-playbook against two local stand-in nodes and a stand-in Slurm controller
(local connection; scontrol, squeue and the acceptance check faked by tests/ansible/fake): the rolling restart
drains each node through the controller, waits for its jobs, checks it and resumes it, one node at a time; a node
that fails its check stays drained and stops the roll-out; no batch starts while another node is unhealthy; the
health playbook prints one table and changes nothing. The real drivers, apt and systemd units are the VM suite's.

About 2 minutes on two cores (each task starts a Python module): run with `-m ansible_slow`, as `.ci/run` does."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.inventory.ansible_tools import COLLECTION, ansible_env, tool

pytestmark = pytest.mark.ansible_slow

FAKE = Path(__file__).parent / "fake"
NODES = ("node-a", "node-b")


@pytest.fixture
def fleet(tmp_path):
    """(run(playbook, *args) -> CompletedProcess, state of the fake Slurm, its call log, node state dirs)."""
    state, log = tmp_path / "slurm.json", tmp_path / "slurm.log"
    state.write_text(json.dumps({node: {"drain": False, "reason": ""} for node in NODES}))
    log.touch()
    dirs = {node: tmp_path / node for node in NODES}
    lines = ["[gpu_nodes]"]
    for node, folder in dirs.items():
        folder.mkdir()
        subprocess.run([FAKE / "gpufleet-health"], env={"GPUFLEET_STATE_DIR": str(folder)}, check=True)
        lines.append(f"{node} gpufleet_state_dir={folder} gpufleet_health_command={FAKE / 'gpufleet-health'} "
                     f"drain_slurm_node={node} return_to_service_slurm_node={node}")
    lines += ["[slurm_controller]", "controller", "[all:vars]", "ansible_connection=local", "ansible_become=false",
              f"ansible_python_interpreter={Path(tool('ansible-playbook')).parent / 'python'}"]
    inventory = tmp_path / "hosts.ini"
    inventory.write_text("\n".join(lines) + "\n")
    env = ansible_env(tmp_path, PATH=f"{FAKE}:/usr/local/bin:/usr/bin:/bin", FAKE_SLURM_STATE=str(state),
                      FAKE_SLURM_LOG=str(log), FAKE_SLURM_JOB_POLLS="2", ANSIBLE_STDOUT_CALLBACK="default", ANSIBLE_PIPELINING="1")

    def run(playbook: str, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([tool("ansible-playbook"), "-i", str(inventory), f"gpufleet.day2.{playbook}",
                               "-e", "drain_poll_sec=0", *args], capture_output=True, text=True, env=env,
                              timeout=300, cwd=tmp_path)

    return run, state, log, dirs


def calls(log: Path) -> list[list[str]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def slurm_updates(log: Path) -> list[tuple[str, str]]:
    """(node, DRAIN|RESUME) in the order the controller was asked."""
    updates = [dict(a.split("=", 1) for a in call[2:]) for call in calls(log) if call[:2] == ["scontrol", "update"]]
    return [(u["nodename"], u["state"]) for u in updates]


def test_the_restart_drains_checks_and_resumes_one_node_at_a_time(fleet):
    run, state, log, _dirs = fleet
    done = run("restart_gpu_services", "-e", "gpufleet_restart=true")
    assert done.returncode == 0, done.stdout[-3000:]
    assert slurm_updates(log) == [("node-a", "DRAIN"), ("node-a", "RESUME"), ("node-b", "DRAIN"), ("node-b", "RESUME")]
    squeue = [c for c in calls(log) if c[0] == "squeue"]
    assert len(squeue) == 2 * 3  # per node: two polls with its job still running, one once it has left
    drain = next(c for c in calls(log) if c[:2] == ["scontrol", "update"])
    assert drain[-1] == "reason=gpufleet GPU service restart"
    assert not any(node["drain"] for node in json.loads(state.read_text()).values())


def test_a_node_failing_its_check_stays_drained_and_stops_the_roll_out(fleet):
    run, state, log, dirs = fleet
    (dirs["node-a"] / "fail").write_text("fabric_manager")
    done = run("restart_gpu_services", "-e", "gpufleet_restart=true")
    assert done.returncode != 0
    assert "node-a failed gpufleet's acceptance check after GPU service restart" in done.stdout
    # The check's own full stop is not doubled before the verdict.
    assert "fabric_manager: injected failure, as nvidia-smi words it. It stays drained and the roll-out stops" in done.stdout
    assert slurm_updates(log) == [("node-a", "DRAIN")]  # never resumed, and node-b never touched
    assert json.loads(state.read_text())["node-a"] == {"drain": True, "reason": "gpufleet GPU service restart",
                                                       "polls": 3}


def test_no_batch_starts_while_another_node_is_unhealthy(fleet):
    run, _state, log, dirs = fleet
    (dirs["node-a"] / "fail").write_text("row_remap")
    subprocess.run([FAKE / "gpufleet-health"], env={"GPUFLEET_STATE_DIR": str(dirs["node-a"])})
    done = run("restart_gpu_services", "-e", "gpufleet_restart=true", "--limit", "node-b")
    assert done.returncode != 0
    assert "No batch starts while another GPU node is unhealthy: node-a (failed row_remap: injected failure, as nvidia-smi words it.)" in \
        " ".join(done.stdout.split())
    assert slurm_updates(log) == []


def test_a_drain_by_someone_else_is_left_in_place(fleet):
    run, state, log, _dirs = fleet
    nodes = json.loads(state.read_text())
    nodes["node-b"].update(drain=True, reason="bad DIMM, ticket 123")
    state.write_text(json.dumps(nodes))
    done = run("restart_gpu_services", "-e", "gpufleet_restart=true")
    assert done.returncode == 0, done.stdout[-3000:]
    assert slurm_updates(log) == [("node-a", "DRAIN"), ("node-a", "RESUME")]
    assert json.loads(state.read_text())["node-b"]["reason"] == "bad DIMM, ticket 123"


def test_the_health_playbook_prints_one_table_changes_nothing_and_fails_on_an_unhealthy_node(fleet):
    run, _state, log, dirs = fleet
    healthy = run("health")
    assert healthy.returncode == 0, healthy.stdout[-3000:]
    assert "changed=0" in healthy.stdout and "changed=1" not in healthy.stdout
    (dirs["node-b"] / "fail").write_text("gpu_count")
    unhealthy = run("health")
    assert unhealthy.returncode != 0
    table = [line for line in unhealthy.stdout.splitlines() if "injected failure" in line or "all checks" in line]
    assert "node-b" in table[0] and "FAIL" in table[0] and "node-a" in table[1] and "ok" in table[1]
    assert calls(log) == []  # read-only: the controller is never asked anything


def test_the_collection_under_test_is_this_checkouts():
    assert (COLLECTION / "playbooks" / "restart_gpu_services.yml").is_file()


def installed_upstream_version(package: str) -> str:
    version = subprocess.run(["dpkg-query", "-W", "-f=${Version}", package], capture_output=True, text=True,
                             check=True).stdout
    return version.split(":", 1)[-1].rsplit("-", 1)[0]


def test_the_driver_upgrade_leaves_nodes_already_at_the_version_alone(fleet, tmp_path):
    """The shipped driver playbook with this machine's real apt package facts: a package already at the asked
    version (bash stands in for the driver packages) means no gate, no drain, no apt run, no reboot: changed=0."""
    run, _state, log, _dirs = fleet
    env_file = tmp_path / "node.env"
    env_file.write_text("GPUFLEET_IMAGE_KIND=ubuntu-24.04\nGPUFLEET_NVSWITCH=0\n")
    done = run("driver_upgrade", "-e", f"driver_version={installed_upstream_version('bash')}",
               "-e", '{"driver_packages": ["bash"]}', "-e", f"driver_env_file={env_file}")
    assert done.returncode == 0, done.stdout[-3000:]
    assert " changed=0 " in done.stdout and " changed=1 " not in done.stdout
    assert calls(log) == []


def test_the_driver_upgrade_refuses_a_driver_that_came_with_the_image(fleet, tmp_path):
    run, _state, log, _dirs = fleet
    env_file = tmp_path / "node.env"
    env_file.write_text("GPUFLEET_IMAGE_KIND=driver-ready\n")
    done = run("driver_upgrade", "-e", "driver_version=570.195.03", "-e", f"driver_env_file={env_file}")
    assert done.returncode != 0
    assert "boots a driver-ready image, whose driver came with the image" in " ".join(done.stdout.split())
    assert calls(log) == []


def test_the_driver_upgrade_needs_a_version(fleet):
    run, _state, _log, _dirs = fleet
    done = run("driver_upgrade")
    assert done.returncode != 0, done.stdout
    assert "missing required arguments: driver_version" in done.stdout, done.stdout[-1500:]
