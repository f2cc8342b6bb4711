"""The gpufleet.day2 collection as Ansible itself reads it: every playbook passes `ansible-playbook --syntax-check`,
the whole collection passes `ansible-lint --profile production --offline`, and the module and role entry points are
documented the way `ansible-doc` reads them."""

from __future__ import annotations

import signal
import subprocess
import uuid
from pathlib import Path

import pytest

from tests.inventory.ansible_tools import COLLECTION, ansible_env, tool
from tests.processes import left_running
from tests.yaml_reader import read_yaml

PLAYBOOKS = sorted((COLLECTION / "playbooks").glob("*.yml"))
ROLLING = ("driver_upgrade", "security_updates", "restart_gpu_services")


def run(command: list, env: dict, cwd=COLLECTION) -> subprocess.CompletedProcess:
    return subprocess.run([str(part) for part in command], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=300)


def test_the_collection_ships_the_five_playbooks():
    assert [p.stem for p in PLAYBOOKS] == ["diagnostics", "driver_upgrade", "health", "restart_gpu_services",
                                           "security_updates"]


def test_every_playbook_passes_the_syntax_check(tmp_path):
    hosts = tmp_path / "hosts.ini"
    hosts.write_text("[gpu_nodes]\nnode-1\n[slurm_controller]\n[monitoring_server]\n")
    done = run([tool("ansible-playbook"), "--syntax-check", "-i", hosts, *PLAYBOOKS], ansible_env(tmp_path))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert [line for line in done.stdout.splitlines() if line.startswith("playbook:")] == [
        f"playbook: {p}" for p in PLAYBOOKS]


def test_a_broken_playbook_fails_the_syntax_check(tmp_path):
    """The check above can fail: a task with two actions is refused."""
    broken = tmp_path / "broken.yml"
    broken.write_text("- hosts: gpu_nodes\n  tasks:\n    - ansible.builtin.command: true\n      ansible.builtin.shell: "
                      "true\n")
    done = run([tool("ansible-playbook"), "--syntax-check", "-i", "localhost,", broken], ansible_env(tmp_path))
    assert done.returncode != 0


@pytest.mark.ansible_slow
def test_the_collection_passes_ansible_lint_production(tmp_path):
    env = ansible_env(tmp_path, PATH=f"{tool('ansible-lint').rsplit('/', 1)[0]}:/usr/bin:/bin")
    done = run([tool("ansible-lint"), "--profile", "production", "--offline", "--nocolor"], env)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


@pytest.mark.parametrize("name", ROLLING)
def test_rolling_playbooks_go_one_node_at_a_time_and_stop_at_the_first_failure(name):
    [play] = read_yaml((COLLECTION / "playbooks" / f"{name}.yml").read_text())
    assert play["hosts"] == "gpu_nodes"
    assert play["serial"] == "{{ gpufleet_batch_size | default(1) }}"
    assert (play["max_fail_percentage"], play["any_errors_fatal"]) == (0, True)


@pytest.mark.parametrize("name", ROLLING)
def test_each_node_is_gated_drained_changed_checked_and_returned_in_that_order(name):
    [play] = read_yaml((COLLECTION / "playbooks" / f"{name}.yml").read_text())
    roles = []

    def walk(tasks):
        for task in tasks:
            if "block" in task:
                walk(task["block"])
            elif "ansible.builtin.include_role" in task:
                roles.append(task["ansible.builtin.include_role"]["name"].rsplit(".", 1)[1])

    walk(play["tasks"])
    gated = roles[roles.index("fleet_healthy"):]
    assert gated[:2] == ["fleet_healthy", "drain"] and gated[-2:] == ["acceptance", "return_to_service"]


@pytest.mark.parametrize("ending", ["ssh's SIGHUP", "end of input under nohup"])
def test_the_bastion_proxy_relays_ssh_through_one_tunnel_and_closes_it(tmp_path, ending):
    """ssh's ProxyCommand side: stdin and stdout reach the target through a tunnel the proxy opens on a free port
    (the Azure CLI faked by tests/ansible/fake/az), and the end of the ssh session closes the tunnel: the SIGHUP ssh
    sends its ProxyCommand, or, where SIGHUP is ignored (a controller run under `nohup`), ssh closing its input."""
    under_nohup = ending != "ssh's SIGHUP"
    # A name no earlier run used: a tunnel an interrupted run left behind must not count as this one's.
    target = f"/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/vm-{uuid.uuid4().hex}"
    command = [COLLECTION / "files" / "bastion-proxy", "hub-bastion", "hub-rg", target, "22"]
    proxy = subprocess.Popen(["nohup", *command] if under_nohup else command, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True,
                             env={"PATH": f"{Path(__file__).parent / 'fake'}:/usr/bin:/bin"})
    try:
        assert proxy.stdout.readline() == f"tunnel to {target} port 22 via hub-bastion/hub-rg\n"
        proxy.stdin.write("SSH-2.0-OpenSSH_9.6\n")
        proxy.stdin.flush()
        assert proxy.stdout.readline() == "SSH-2.0-OpenSSH_9.6\n"
        proxy.send_signal(signal.SIGHUP)
        if under_nohup:
            proxy.stdin.write("still relaying\n")  # the hangup was ignored, as nohup asks
            proxy.stdin.flush()
            assert proxy.stdout.readline() == "still relaying\n"
            proxy.stdin.close()
            assert proxy.wait(timeout=10) == 0
        else:
            assert proxy.wait(timeout=10) == 128 + signal.SIGHUP
    finally:
        proxy.kill()
    assert left_running(target) == []


def test_the_bastion_proxy_says_when_the_tunnel_fails(tmp_path):
    """A tunnel that exits before it listens (Bastion refused it, `az` not logged in) ends the proxy with one line."""
    fake = tmp_path / "az"
    fake.write_text("#!/bin/sh\nexit 1\n")
    fake.chmod(0o755)
    done = subprocess.run([COLLECTION / "files" / "bastion-proxy", "hub-bastion", "hub-rg", "/vm", "22"],
                          capture_output=True, text=True, timeout=30, env={"PATH": f"{tmp_path}:/usr/bin:/bin"})
    assert (done.returncode, done.stderr) == (1, "bastion-proxy: az network bastion tunnel to /vm exited\n")



def test_the_module_and_the_driver_role_are_documented(tmp_path):
    env = ansible_env(tmp_path)
    module = run([tool("ansible-doc"), "--json", "gpufleet.day2.gpu_health"], env)
    assert module.returncode == 0, module.stderr
    assert "healthy" in module.stdout and "failed_checks" in module.stdout
    role = run([tool("ansible-doc"), "-t", "role", "--json", "gpufleet.day2.driver"], env)
    assert role.returncode == 0, role.stderr
    assert '"driver_version"' in role.stdout and '"required": true' in role.stdout
