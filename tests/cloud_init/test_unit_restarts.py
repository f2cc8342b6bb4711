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


def test_the_acceptance_check_runs_hardened():
    service = parsed(FILES / "etc/systemd/system/gpufleet-health.service")["Service"]
    assert (service["ProtectSystem"], service["PrivateTmp"], service["NoNewPrivileges"]) == ("full", "yes", "yes")
