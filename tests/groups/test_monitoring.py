"""Monitoring a cluster of node groups: each node's group is the `node_group` label (set by every cloud's scrape
jobs), which every alert carries and which the dashboards price and count each group by. Checked by promtool
itself: the scrape configs (`check config`), the alerts (`test rules`), and the dashboards' cost query evaluated on
sample series (`test rules` of a recording rule)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest
import yaml

from gpufleet.monitoring.dashboards import dashboards
from gpufleet.monitoring.pricing import GroupPricing, NodePricing
from gpufleet.monitoring.scrape import ALERT_RULES
from tests.validators import require_tool
from tests.yaml_reader import read_yaml

from .test_plans import CLOUDS, doc, spec

PROMTOOL_HINT = "install it with `apt-get install -y prometheus` (Debian package, ships /usr/bin/promtool)"
GROUPS = (GroupPricing("train", NodePricing(usd_per_node_hour=11.5), 8),
          GroupPricing("mixed", NodePricing(usd_per_node_hour=2.0, usd_per_base_node_hour=5.0, base_nodes=1), 1))


def promtool(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([require_tool("promtool", PROMTOOL_HINT), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=60)


@pytest.mark.parametrize("cloud", CLOUDS)
def test_every_clouds_scrape_jobs_label_each_node_with_its_group_and_promtool_accepts_them(cloud, tmp_path):
    jobs = read_yaml(doc(spec(cloud))["outputs"]["prometheus_scrape_config"])["scrape_configs"]
    for job in jobs:
        relabels = [r for r in job["relabel_configs"] if r.get("target_label") == "node_group"]
        if cloud == "azure":  # by the scale set's name: one rule per group's scale set
            assert sorted(r["replacement"] for r in relabels) == ["debug", "eval", "train"], relabels
        else:
            assert len(relabels) == 1 and "gpufleet_node_group" in relabels[0]["source_labels"][0], relabels
    shutil.copy(ALERT_RULES, tmp_path / "alerts.yml")
    config = {"global": {"scrape_interval": "30s"}, "rule_files": ["alerts.yml"], "scrape_configs": jobs}
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    done = promtool("check", "config", "prometheus.yml", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_one_group_clusters_scrape_as_before():
    plain = doc({"cloud": "aws", "region": "us-east-2", "zone": "use2-az2", "nodes": 2,
                 "accelerator": {"instance_type": "p5.48xlarge"}})
    assert "node_group" not in plain["outputs"]["prometheus_scrape_config"]


def test_an_alert_carries_the_nodes_group(tmp_path):
    shutil.copy(ALERT_RULES, tmp_path / "alerts.yml")
    tests = {"rule_files": ["alerts.yml"], "evaluation_interval": "1m", "tests": [{
        "interval": "1m",
        "input_series": [{"series": 'gpufleet_node_healthy{job="gpufleet-node", instance="n1:9100", '
                                    'node_group="eval"}', "values": "0x10"}],
        "alert_rule_test": [{"eval_time": "5m", "alertname": "GpufleetNodeUnhealthy", "exp_alerts": [{
            "exp_labels": {"severity": "critical", "job": "gpufleet-node", "instance": "n1:9100",
                           "node_group": "eval"},
            "exp_annotations": {"summary": "n1:9100 failed the gpufleet boot acceptance check (see "
                                           "/var/lib/gpufleet/health.json)"}}]}]}]}
    (tmp_path / "groups.test.yml").write_text(yaml.safe_dump(tests))
    done = promtool("test", "rules", "groups.test.yml", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def panel_exprs(board: dict) -> dict[str, list[str]]:
    return {panel["title"]: [target["expr"] for target in panel.get("targets", [])] for panel in board["panels"]}


def test_the_overview_prices_each_group_at_its_rate_and_promtool_computes_it(tmp_path):
    """Two train nodes at $11.50 and three nodes of a mixed group (one on demand at $5, two spot at $2): $32 (prices that binary floats hold exactly)."""
    overview = json.loads(dashboards(NodePricing(11.56), 8, groups=GROUPS)["gpufleet-overview.json"])
    exprs = panel_exprs(overview)
    assert "Node groups" in exprs and exprs["Cost by group (USD/h, nodes up)"]
    cost = exprs["Cluster cost (USD/h, nodes up)"][0]
    expected_gpus = exprs["GPUs expected"][0]
    rules = {"groups": [{"name": "q", "rules": [{"record": "cost", "expr": cost},
                                                 {"record": "gpus", "expr": expected_gpus}]}]}
    (tmp_path / "queries.yml").write_text(yaml.safe_dump(rules))
    series = [{"series": f'up{{job="gpufleet-node", instance="{group}{i}", node_group="{group}"}}', "values": "1x5"}
              for group, count in (("train", 2), ("mixed", 3)) for i in range(count)]
    tests = {"rule_files": ["queries.yml"], "evaluation_interval": "1m", "tests": [{
        "interval": "1m", "input_series": series,
        "promql_expr_test": [{"expr": "cost", "eval_time": "2m", "exp_samples": [{"labels": "cost", "value": 32}]},
                             {"expr": "gpus", "eval_time": "2m", "exp_samples": [{"labels": "gpus", "value": 19}]}]}]}
    (tmp_path / "queries.test.yml").write_text(yaml.safe_dump(tests))
    done = promtool("test", "rules", "queries.test.yml", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_grouped_dashboard_query_parses(tmp_path):
    boards = dashboards(NodePricing(11.56), 8, groups=GROUPS)
    rules = []
    for text in boards.values():
        for panel in json.loads(text)["panels"]:
            for target in panel.get("targets", []):
                expr = re.sub(r"\$(node|hpc_job)\b", ".+", target["expr"])
                rules.append({"record": f"q{len(rules)}", "expr": re.sub(r"\$\w+", "2", expr)})
    (tmp_path / "queries.yml").write_text(yaml.safe_dump({"groups": [{"name": "q", "rules": rules}]}))
    done = promtool("check", "rules", "queries.yml", cwd=tmp_path)
    assert done.returncode == 0 and f"SUCCESS: {len(rules)} rules found" in done.stdout, done.stdout + done.stderr


def test_one_group_dashboards_are_unchanged():
    assert dashboards(NodePricing(11.56), 8) == dashboards(NodePricing(11.56), 8, groups=())
    assert "Node groups" not in dashboards(NodePricing(11.56), 8)["gpufleet-overview.json"]
