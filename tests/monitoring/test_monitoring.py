"""GPU alert rules and scrape jobs, checked by promtool itself (skipped locally without it, required in CI)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from gpufleet.cloud_init.slurm_controller import METRICS_SCRIPT as SLURM_METRICS_SCRIPT
from gpufleet.monitoring.scrape import ALERT_RULES, SLURM_ALERT_RULES, aws_jobs, azure_jobs, enabled_jobs, gcp_jobs
from tests.plan.plan_docs import plan_doc
from tests.validators import require_tool
from tests.yaml_reader import read_yaml

PROMTOOL_HINT = "install it with `apt-get install -y prometheus` (Debian package, ships /usr/bin/promtool)"
ROOT = Path(__file__).resolve().parents[2]
COUNTERS = ROOT / "cloud_init/files/etc/gpufleet/dcgm-counters.csv"
TRAIN_STACKS = ("aws-train", "azure-train", "gcp-train")


def promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    tool = require_tool("promtool", PROMTOOL_HINT)
    return subprocess.run([tool, *args], cwd=cwd, capture_output=True, text=True, timeout=60)


def test_alert_rules_pass_promtool_check():
    result = promtool("check", "rules", ALERT_RULES.name, cwd=ALERT_RULES.parent)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 12 rules found" in result.stdout


def test_slurm_alert_rules_pass_promtool_check_and_their_unit_tests():
    result = promtool("check", "rules", SLURM_ALERT_RULES.name, cwd=SLURM_ALERT_RULES.parent)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 3 rules found" in result.stdout
    result = promtool("test", "rules", "slurm-alerts.test.yml", cwd=SLURM_ALERT_RULES.parent)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_slurm_metric_the_rules_use_is_written_by_the_controllers_script():
    """The script's `# TYPE` lines name what it writes (its real output is checked against Slurm in
    tests/scheduler/test_slurm_daemons.py)."""
    written = set(re.findall(r"# TYPE (gpufleet_slurm_\w+) gauge", SLURM_METRICS_SCRIPT.read_text()))
    rules = read_yaml(SLURM_ALERT_RULES.read_text())["groups"][0]["rules"]
    used = {name for rule in rules for name in re.findall(r"\bgpufleet_slurm_\w+", rule["expr"])}
    assert used and used <= written, sorted(used - written)


def test_alert_rules_pass_their_unit_tests():
    result = promtool("test", "rules", "alerts.test.yml", cwd=ALERT_RULES.parent)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_dcgm_metric_the_rules_use_is_exported_by_the_nodes():
    exported = {line.split(",")[0].strip() for line in COUNTERS.read_text().splitlines()
                if line.strip() and not line.startswith("#")}
    rules = read_yaml(ALERT_RULES.read_text())["groups"][0]["rules"]
    used = {name for rule in rules for name in re.findall(r"\bDCGM_[A-Z0-9_]+", rule["expr"])}
    assert used and used <= exported, f"not in the node's counters file: {sorted(used - exported)}"


def test_xid_rule_does_not_treat_the_last_xid_gauge_as_a_counter():
    rules = read_yaml(ALERT_RULES.read_text())["groups"][0]["rules"]
    assert not any("increase(DCGM_FI_DEV_XID_ERRORS" in rule["expr"] for rule in rules)



def minutes(duration: str) -> int:
    match = re.fullmatch(r"(\d+)([mh])", duration)
    assert match, duration
    return int(match.group(1)) * (60 if match.group(2) == "h" else 1)


def test_missing_health_metric_waits_out_the_checks_own_time_limit():
    """The metric is absent while the acceptance check runs (it removes last boot's verdict first): the alert for a
    missing metric must not fire before systemd's limit on the check has killed it."""
    rules = {rule["alert"]: rule for rule in read_yaml(ALERT_RULES.read_text())["groups"][0]["rules"]}
    unit = (ROOT / "cloud_init/files/etc/systemd/system/gpufleet-health.service").read_text()
    limit_seconds = int(re.search(r"^TimeoutStartSec=(\d+)$", unit, re.M).group(1))
    rule = rules["GpufleetNodeHealthMissing"]
    assert minutes(rule["for"]) * 60 > limit_seconds
    assert "gpufleet_node_healthy" in rule["expr"] and 'up{job="gpufleet-node"} == 1' in rule["expr"]

@pytest.fixture(scope="module")
def scrape_blocks() -> dict[str, str]:
    return {stack: plan_doc(stack)["outputs"]["prometheus_scrape_config"] for stack in TRAIN_STACKS}


@pytest.mark.parametrize("stack", TRAIN_STACKS)
def test_each_stack_exports_scrape_jobs_that_promtool_accepts(stack, scrape_blocks, tmp_path):
    jobs = read_yaml(scrape_blocks[stack])["scrape_configs"]
    assert [job["job_name"] for job in jobs] == ["gpufleet-dcgm", "gpufleet-node"]
    shutil.copy(ALERT_RULES, tmp_path / "alerts.yml")
    config = {"global": {"scrape_interval": "30s"}, "rule_files": ["alerts.yml"], "scrape_configs": jobs}
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    result = promtool("check", "config", "prometheus.yml", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_jobs_select_the_stack_nodes_on_each_cloud():
    jobs = enabled_jobs(dcgm=True, node=False)
    aws = aws_jobs("prod", "us-east-2", jobs)[0]["ec2_sd_configs"][0]
    assert {"name": "tag:gpufleet-stack", "values": ["prod"]} in aws["filters"] and aws["port"] == 9400
    gcp = gcp_jobs("proj", "us-central1-a", "prod", jobs)[0]["gce_sd_configs"][0]
    assert gcp["filter"] == 'labels.gpufleet-stack="prod"' and gcp["zone"] == "us-central1-a"
    azure = azure_jobs("sub", "rg", ["b-nodes", "a-nodes"], jobs)[0]
    assert azure["relabel_configs"][0] == {"source_labels": ["__meta_azure_machine_scale_set"],
                                           "regex": "a-nodes|b-nodes", "action": "keep"}


def test_disabled_exporters_get_no_job():
    assert enabled_jobs(dcgm=False, node=True) == [("gpufleet-node", 9100)]
    assert enabled_jobs(dcgm=False, node=False) == []
