"""The shipped driver-upgrade and security playbooks over SSH against a booted node VM (marker `vm`; tests/vm/day2_boots.py).

A gcp-dev node (image.kind ubuntu-24.04) boots its rendered user data with the test's apt archive as its only
archive: its own install step installs and holds the first driver and reboots into it. The playbook then upgrades
it to the next driver, published in the archive since: Slurm drains the node first (a stand-in controller on the
host), the driver packages move together and stay held, the node reboots once, its boot-time acceptance check passes
on the new driver and the node is resumed. A second run changes nothing. The security playbook then installs the
security pocket's update of one package and not of an NVIDIA one on the node's hold list, drains first and reboots
because the update asks for it; its second run changes nothing too. Last, a broken driver fails the node's check
after its reboot: it stays drained and the roll-out stops before the next node.

What the VM cannot have is a GPU: the driver packages are stand-ins whose nvidia-smi answers only from the "module"
loaded at boot (tests/vm/driver_repo.py), and the acceptance check is a stand-in that judges that answer."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .conftest import require_vm_tools
from .day2_boots import (
    BROKEN,
    FIRST,
    NEXT,
    NODE,
    OTHER_PACKAGES,
    SECURITY_VERSION,
    STANDBY,
    Day2Scenario,
    PlaybookRun,
    replay,
    run_scenario,
)
from .driver_repo import package_version
from .image import SERVICE_PACKAGES, build_image

pytestmark = [pytest.mark.vm, pytest.mark.timeout(5400)]

# A hang guard for the whole scenario, not a speed goal (TCG).
TIMEOUT = float(os.environ.get("GPUFLEET_VM_DAY2_TIMEOUT", "3600"))
PINNED = ("nvidia-headless-no-dkms-580-server-open", "nvidia-utils-580-server", "nvidia-compute-utils-580-server")
DRAIN = "Set the node to DRAIN (running jobs finish, no new ones start)"
INSTALL = "Install the driver and Fabric Manager in one transaction at"
REBOOT = "Reboot into the new driver"
ACCEPTANCE = "Wait for gpufleet's acceptance check"
RESUME = "Resume the node gpufleet drained"
SECURITY_INSTALL = "Install the pending security and microcode updates"
SECURITY_REBOOT = "Reboot into the updated kernel and microcode"


@pytest.fixture(scope="module")
def scenario(tmp_path_factory) -> tuple[Day2Scenario, dict]:
    if os.environ.get("GPUFLEET_VM_DAY2_REPLAY"):  # a scenario.json an earlier run left in its folder
        return replay(Path(os.environ["GPUFLEET_VM_DAY2_REPLAY"]))
    require_vm_tools()
    folder = tmp_path_factory.mktemp("day2")
    with (folder / "image-build.log").open("w") as log:
        image = build_image(log, SERVICE_PACKAGES)
    result, slurm = run_scenario(image, folder, TIMEOUT)
    print(f"day-2 scenario: {round(result.seconds)} s (TCG, one VM, five playbook runs)")
    return result, slurm


def at(packages: dict[str, str], driver: str) -> dict[str, str]:
    """Every installed stand-in driver package not at `driver`, with the version it is at."""
    return {name: version for name, version in packages.items() if version != package_version(driver)}


def updates(run: PlaybookRun) -> list[tuple[str, str]]:
    found = [dict(a.split("=", 1) for a in call[2:]) for call in run.slurm_calls if call[:2] == ["scontrol", "update"]]
    return [(u["nodename"], u["state"]) for u in found]


def first(run: PlaybookRun, prefix: str, changed: bool | None = None) -> int:
    """Where the first task whose name (after its role's, "ROLE : NAME") starts with `prefix` ran; -1 if never."""
    return next((i for i, (name, result) in enumerate(run.tasks()) if name.split(" : ")[-1].startswith(prefix)
                 and (changed is None or bool(result.get("changed")) == changed)), -1)


def test_the_nodes_own_install_step_installs_holds_and_boots_the_first_driver(scenario):
    result, _slurm = scenario
    node = result.first_boot
    assert sorted(node["packages"]) == sorted(result.package_names), (node, result.console)
    assert not at(node["packages"], FIRST), node["packages"]
    assert set(PINNED) <= set(node["holds"]), node["holds"]
    assert node["loaded"].strip() == FIRST and node["health"]["healthy"] is True, node
    assert node["boots"] == 2, node  # the install's one reboot
    assert "installed for kernel" in node["install_log"], node["install_log"]
    assert any("Packages" in request for request in result.repo_requests), result.repo_requests[:5]


def test_the_upgrade_drains_first_moves_the_held_packages_reboots_once_and_resumes(scenario):
    run = scenario[0].runs["upgrade"]
    assert run.returncode == 0, run.text()
    assert updates(run) == [(NODE, "DRAIN"), (NODE, "RESUME")]
    order = [first(run, DRAIN, True), first(run, INSTALL, True), first(run, REBOOT, True), first(run, ACCEPTANCE),
             first(run, RESUME, True)]
    assert -1 not in order and order == sorted(order), (order, [name for name, _ in run.tasks()])
    acceptance = run.tasks()[order[3]][1]
    assert acceptance["healthy"] is True and acceptance["current"] is True, acceptance  # this boot's check
    node = run.node
    assert node["boots"] == run.boots_before + 1, node
    assert not at(node["packages"], NEXT), node["packages"]
    assert set(PINNED) <= set(node["holds"]), node["holds"]
    assert node["loaded"].strip() == NEXT and node["health"]["healthy"] is True, node


def test_a_second_run_changes_nothing(scenario):
    run = scenario[0].runs["again"]
    assert run.returncode == 0, run.text()
    assert run.output["stats"][NODE]["changed"] == 0, run.output["stats"]
    assert updates(run) == [] and first(run, DRAIN) == -1 and first(run, INSTALL) == -1
    assert run.node["boots"] == run.boots_before and run.node["loaded"].strip() == NEXT


def test_security_updates_drain_install_only_the_security_pocket_off_the_nvidia_list_and_reboot_when_asked(scenario):
    run = scenario[0].runs["security"]
    assert run.returncode == 0, run.text()
    assert updates(run) == [(NODE, "DRAIN"), (NODE, "RESUME")]
    order = [first(run, DRAIN, True), first(run, SECURITY_INSTALL, True), first(run, SECURITY_REBOOT, True),
             first(run, ACCEPTANCE), first(run, RESUME, True)]
    assert -1 not in order and order == sorted(order), (order, [name for name, _ in run.tasks()])
    updated, nvidia = OTHER_PACKAGES
    node = run.node
    assert node["others"] == {updated: SECURITY_VERSION, nvidia: "1.0-1"}, node["others"]
    assert not at(node["packages"], NEXT) and set(PINNED) <= set(node["holds"]), node
    assert node["boots"] == run.boots_before + 1 and node["health"]["healthy"] is True, node


def test_a_second_security_run_changes_nothing(scenario):
    run = scenario[0].runs["security_again"]
    assert run.returncode == 0, run.text()
    assert run.output["stats"][NODE]["changed"] == 0, run.output["stats"]
    assert updates(run) == [] and first(run, SECURITY_INSTALL) == -1 and run.node["boots"] == run.boots_before


def test_a_node_failing_its_check_after_the_upgrade_stays_drained_and_the_roll_out_stops(scenario):
    run, slurm = scenario[0].runs["broken"], scenario[1]
    assert run.returncode != 0
    assert f"{NODE} failed gpufleet's acceptance check after driver upgrade to {BROKEN}" in run.text(), run.text()
    assert "couldn't communicate with the NVIDIA driver. It stays drained" in run.text(), run.text()
    assert updates(run) == [(NODE, "DRAIN")]  # never resumed
    assert slurm[NODE]["drain"] is True and slurm[NODE]["reason"] == f"gpufleet driver upgrade to {BROKEN}", slurm
    # The healthy node after it gated the batch (its health was read) but was never drained, upgraded or resumed.
    assert slurm[STANDBY] == {"drain": False, "reason": ""} and run.tasks(STANDBY) == [], run.tasks(STANDBY)
    node = run.node
    assert node["boots"] == run.boots_before + 1 and not at(node["packages"], BROKEN), node
    assert node["health"]["healthy"] is False, node["health"]
