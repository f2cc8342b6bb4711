"""The jobs dashboard's Slurm row: present only where the monitoring server scrapes a Slurm controller, every query
parsed by Prometheus' own parser (promtool check rules, one recording rule per query), every Slurm metric it reads
written by the controller's script."""

from __future__ import annotations

import json
import re
import subprocess

import yaml

from gpufleet.cloud_init.slurm_controller import METRICS_SCRIPT
from gpufleet.monitoring.dashboards import SHIPPED_GPUS_PER_NODE as GPUS
from gpufleet.monitoring.dashboards import SHIPPED_PRICING as PRICING
from gpufleet.monitoring.dashboards import dashboards, shipped_dashboards
from tests.validators import require_tool

SLURM_ROW = "Slurm (controller: squeue and sinfo every 30 s)"


def exprs_after_row(board: dict, row_title: str) -> list[str]:
    panels, found = board["panels"], []
    start = next(i for i, p in enumerate(panels) if p["type"] == "row" and p["title"] == row_title)
    for panel in panels[start + 1:]:
        if panel["type"] == "row":
            break
        found += [target["expr"] for target in panel.get("targets", [])]
    return found


def test_the_slurm_row_comes_only_with_slurm_and_its_queries_parse(tmp_path):
    plain = json.loads(dashboards(PRICING, GPUS)["gpufleet-jobs.json"])
    assert plain == json.loads(shipped_dashboards()["gpufleet-jobs.json"])
    assert SLURM_ROW not in {p.get("title") for p in plain["panels"]}
    board = json.loads(dashboards(PRICING, GPUS, slurm=True)["gpufleet-jobs.json"])
    exprs = exprs_after_row(board, SLURM_ROW)
    assert len(exprs) == 9
    rules = {"groups": [{"name": "dashboard", "rules": [{"record": f"q{i}", "expr": e} for i, e in enumerate(exprs)]}]}
    (tmp_path / "queries.yml").write_text(yaml.safe_dump(rules))
    promtool = require_tool("promtool", "install it with `apt-get install -y prometheus`")
    done = subprocess.run([promtool, "check", "rules", "queries.yml"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    written = set(re.findall(r"# TYPE (gpufleet_slurm_\w+) gauge", METRICS_SCRIPT.read_text()))
    used = {name for e in exprs for name in re.findall(r"\bgpufleet_slurm_\w+", e)}
    assert used == written, (used, written)
