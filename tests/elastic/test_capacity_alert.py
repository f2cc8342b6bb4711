"""GpufleetCapacityShort and GpufleetResumeFailing (components/monitoring/elastic-alerts.yml), checked and unit-tested
by promtool, on the series the power programs write: their textfile passes `promtool check metrics`, and every
series and label the rules read is one the programs write."""

from __future__ import annotations

import re
import subprocess

from gpufleet.cloud_init.power.metrics import PowerState
from gpufleet.monitoring.scrape import ALERT_RULES

from ..monitoring.test_monitoring import promtool
from ..validators import require_tool
from ..yaml_reader import read_yaml

RULES = ALERT_RULES.with_name("elastic-alerts.yml")


def test_the_elastic_rules_pass_promtool_check_and_their_unit_tests():
    checked = promtool("check", "rules", RULES.name, cwd=RULES.parent)
    assert checked.returncode == 0 and "SUCCESS: 2 rules found" in checked.stdout, checked.stdout + checked.stderr
    tested = promtool("test", "rules", "elastic-alerts.test.yml", cwd=RULES.parent)
    assert tested.returncode == 0, tested.stdout + tested.stderr


def written_metrics(tmp_path) -> str:
    state = PowerState(str(tmp_path / "state"), str(tmp_path / "metrics.prom"), ["burst", "train"])
    with state.locked():
        state.short("train", "quota", "QUOTA_EXCEEDED", 2)
        state.failed("burst", "timeout", 1)
        state.count("burst", "resumed", 3)
    return (tmp_path / "metrics.prom").read_text()


def test_the_programs_metrics_are_what_the_rules_read(tmp_path):
    text = written_metrics(tmp_path)
    tool = require_tool("promtool", "install it with `apt-get install -y prometheus`")
    lint = subprocess.run([tool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    assert 'gpufleet_capacity_short{group="train",reason="quota"} 1' in text
    assert 'gpufleet_capacity_short{group="burst",reason="capacity"} 0' in text
    assert 'gpufleet_power_resume_failures_total{group="burst",reason="timeout"} 1' in text
    written = {(name, frozenset(re.findall(r'(\w+)="', labels)))
               for name, labels in re.findall(r"^(\w+)\{([^}]*)\}", text, re.MULTILINE)}
    for rule in read_yaml(RULES.read_text())["groups"][0]["rules"]:
        for name, labels in re.findall(r"(gpufleet_\w+)\{([^}]*)\}", rule["expr"]):
            used = set(re.findall(r"(\w+)=~?\"", labels)) - {"job"}  # job: the scrape's own label
            assert any(metric == name and used <= keys for metric, keys in written), (rule["alert"], name, used)
        grouped = re.search(r"by \(([^)]*)\)", rule["expr"])
        if grouped:
            assert {word.strip() for word in grouped.group(1).split(",")} <= {"group", "reason"}
