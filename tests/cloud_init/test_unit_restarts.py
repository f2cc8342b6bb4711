"""Units that restart on their own stop after a bounded number of starts: an exporter whose binary or image never
installed must not restart every few seconds for the node's whole life."""

from __future__ import annotations

import configparser

import pytest

from .conftest import FILES

UNITS = sorted((FILES / "etc/systemd/system").glob("*.service"))


def parsed(path):
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str
    parser.read_string(path.read_text())
    return parser


# The watcher is left out: it exits only on a bad node.env, and it must come back after any crash.
@pytest.mark.parametrize("unit", [u for u in UNITS if parsed(u).get("Service", "Restart", fallback="no") == "always"
                                  and u.name != "gpufleet-watcher.service"], ids=lambda p: p.name)
def test_always_restarting_exporters_have_a_start_limit(unit):
    unit_section = parsed(unit)["Unit"]
    assert int(unit_section.get("StartLimitBurst", "0")) <= 5 and int(unit_section.get("StartLimitIntervalSec", "0")) >= 300


def test_node_exporter_does_not_start_without_its_binary():
    unit = parsed(FILES / "etc/systemd/system/gpufleet-node-exporter.service")
    assert unit["Unit"]["ConditionPathExists"] == unit["Service"]["ExecStart"].split()[0]


def test_kernel_updates_bring_their_nvidia_modules():
    """The per-kernel NVIDIA module packages follow kernel security updates; only user space is held."""
    import re
    text = (FILES / "etc/apt/apt.conf.d/51gpufleet-nvidia-hold").read_text()
    patterns = re.findall(r'^\s*"([^"]+)";', text, re.M)
    for package in ("linux-modules-nvidia-580-server-open-6.8.0-1021-aws", "linux-objects-nvidia-580-server-6.8.0-1021",
                    "linux-signatures-nvidia-6.8.0-1021-aws", "linux-modules-nvidia-580-server-open-aws"):
        assert not any(re.match(p, package) for p in patterns), package  # unattended-upgrades uses re.match
    for package in ("nvidia-utils-580-server", "libnvidia-compute-580-server", "nvidia-fabricmanager-580"):
        assert any(re.match(p, package) for p in patterns), package
    assert 'Unattended-Upgrade::Automatic-Reboot "false";' in text


def test_the_acceptance_check_runs_hardened():
    service = parsed(FILES / "etc/systemd/system/gpufleet-health.service")["Service"]
    assert (service["ProtectSystem"], service["PrivateTmp"], service["NoNewPrivileges"]) == ("full", "yes", "yes")
