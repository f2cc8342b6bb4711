"""The jobs dashboard's elastic row (gcp-burst): present only for a Slurm cluster with elastic groups, every query
parsed by Prometheus' own parser, every series it reads one the power programs write (after a real `sync` over a
stand-in Slurm), and its GPU-hours used against paid computed by promtool over a recorded hour."""

from __future__ import annotations

import json
import re
import subprocess

import yaml

from gpufleet.cloud_init.power.config import GcpApi, GcpGroup, GcpTarget, PowerConfig, PowerGroup
from gpufleet.cloud_init.power.engine import sync
from gpufleet.cloud_init.power.metrics import PowerState
from gpufleet.cloud_init.power.slurm import Node
from gpufleet.monitoring.dashboards import SHIPPED_PRICING, dashboards
from gpufleet.monitoring.pricing import ElasticGroup

from ..elastic.fake_slurm import FakeSlurm
from ..plan.plan_docs import plan_doc
from ..validators import require_tool
from .test_monitoring import promtool
from .test_slurm_dashboard import exprs_after_row

ROW = "Elastic groups (gpu 0-4 nodes; power programs, each minute)"
HOUR = {"$__range_s": "3600", "$__range": "1h"}


def jobs_board(stack: str, *overrides: str) -> dict:
    return json.loads(plan_doc(stack, *overrides)["outputs"]["grafana_dashboards"]["gpufleet-jobs.json"])


def at_one_hour(expr: str) -> str:
    """The query as Grafana sends it for a one-hour range (`$__range_s` before `$__range`, its prefix)."""
    for variable, value in HOUR.items():
        expr = expr.replace(variable, value)
    return expr


def titles(board: dict) -> list[str]:
    return [panel.get("title", "") for panel in board["panels"]]


def test_the_elastic_row_comes_only_with_elastic_groups():
    assert ROW in titles(jobs_board("gcp-burst"))
    assert not [title for title in titles(jobs_board("aws-team")) if title.startswith("Elastic groups")]
    assert not [title for title in titles(jobs_board("gcp-burst", "monitoring.server=false"))
                if title.startswith("Elastic groups")]


def written_after_sync(tmp_path) -> str:
    """The metrics file after one `sync` of a group whose four nodes are: two running jobs, one booting, one
    powered down."""
    config = PowerConfig(cloud="gcp", cluster_id="c0ffee", gcp=GcpApi(project="p"),
                         metrics_file=str(tmp_path / "power.prom"), state_dir=str(tmp_path / "state"),
                         groups=(PowerGroup(name="gpu", partition="gpu", node_prefix="burst-nodes-", max_nodes=4,
                                            gcp=GcpGroup(targets=(GcpTarget(instance_template="t", zone="z",
                                                                            machine_type="g2-standard-8"),))),))
    slurm = FakeSlurm(["burst-nodes-1", "burst-nodes-2"], busy=("burst-nodes-1", "burst-nodes-2"))
    slurm.shown["burst-nodes-3"] = Node(name="burst-nodes-3", state="IDLE", flags=frozenset({"CLOUD", "POWERING_UP"}))
    slurm.shown["burst-nodes-4"] = Node(name="burst-nodes-4", state="IDLE", flags=frozenset({"CLOUD", "POWERED_DOWN"}))
    sync(config, slurm, PowerState(config.state_dir, config.metrics_file, ["gpu"]))
    return (tmp_path / "power.prom").read_text()


def test_sync_writes_nodes_up_and_busy_and_the_row_reads_only_what_is_written(tmp_path):
    text = written_after_sync(tmp_path)
    tool = require_tool("promtool", "install it with `apt-get install -y prometheus`")
    linted = subprocess.run([tool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    assert linted.returncode == 0, linted.stdout + linted.stderr
    assert 'gpufleet_power_nodes_up{group="gpu"} 3' in text
    assert 'gpufleet_power_nodes_busy{group="gpu"} 2' in text
    written = set(re.findall(r"^# TYPE (\w+) ", text, re.MULTILINE))
    exprs = exprs_after_row(jobs_board("gcp-burst"), ROW)
    assert len(exprs) == 12
    read = {name for expr in exprs for name in re.findall(r"\bgpufleet_\w+", expr)}
    assert read <= written, read - written
    rules = {"groups": [{"name": "row", "rules": [{"record": f"q{index}", "expr": at_one_hour(expr)}
                                                  for index, expr in enumerate(exprs)]}]}
    (tmp_path / "row.yml").write_text(yaml.safe_dump(rules))
    checked = promtool("check", "rules", "row.yml", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_gpu_hours_used_against_paid_over_an_hour(tmp_path):
    """Group `a` (one GPU a node, $0.50) has two nodes up for the hour, one busy; group `b` (eight GPUs, $10) one
    node up and busy: 10 GPU-hours paid, 9 used, 90%, and one idle node-hour of `a`: $0.50."""
    elastic = (ElasticGroup("a", 1, 0.5, 0, 4), ElasticGroup("b", 8, 10.0, 0, 2))
    board = json.loads(dashboards(SHIPPED_PRICING, 8, slurm=True, elastic=elastic)["gpufleet-jobs.json"])
    panels = {panel["title"]: panel["targets"][0]["expr"] for panel in board["panels"] if panel.get("targets")}
    recorded = {"used": panels["GPU-hours used (range)"], "paid": panels["GPU-hours paid (range)"],
                "share": panels["GPU-hours used / paid"], "idle": panels["Idle node spend (range, USD)"]}
    (tmp_path / "rules.yml").write_text(yaml.safe_dump({"groups": [{"name": "row", "rules": [
        {"record": name, "expr": at_one_hour(expr)} for name, expr in recorded.items()]}]}))
    series = 'gpufleet_power_nodes_{}{{job="gpufleet-slurm",group="{}",instance="ctl:9100"}}'
    expected = {"used": 9, "paid": 10, "share": 0.9, "idle": 0.5}
    (tmp_path / "rules.test.yml").write_text(yaml.safe_dump({
        "rule_files": ["rules.yml"], "evaluation_interval": "1m",
        "tests": [{"interval": "1m",
                   "input_series": [{"series": series.format("up", "a"), "values": "2x60"},
                                    {"series": series.format("busy", "a"), "values": "1x60"},
                                    {"series": series.format("up", "b"), "values": "1x60"},
                                    {"series": series.format("busy", "b"), "values": "1x60"}],
                   "promql_expr_test": [{"expr": name, "eval_time": "60m",
                                         "exp_samples": [{"labels": name, "value": value}]}
                                        for name, value in expected.items()]}]}))
    tested = promtool("test", "rules", "rules.test.yml", cwd=tmp_path)
    assert tested.returncode == 0, tested.stdout + tested.stderr
