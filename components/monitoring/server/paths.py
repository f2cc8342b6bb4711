"""Where things live on the monitoring server (Ubuntu 24.04 packages' own layout), in one place."""

from __future__ import annotations

PROMETHEUS_CONFIG = "/etc/prometheus/prometheus.yml"
ALERT_RULES = "/etc/prometheus/gpufleet-alerts.yml"
SLURM_ALERT_RULES = "/etc/prometheus/gpufleet-slurm-alerts.yml"
ELASTIC_ALERT_RULES = "/etc/prometheus/gpufleet-elastic-alerts.yml"
PROMETHEUS_DATA = "/var/lib/prometheus"
ALERTMANAGER_DATA = "/var/lib/prometheus/alertmanager"
ALERTMANAGER_CONFIG = "/etc/prometheus/alertmanager.yml"
GRAFANA_DATASOURCES = "/etc/grafana/provisioning/datasources/gpufleet.yaml"
GRAFANA_DASHBOARD_PROVIDER = "/etc/grafana/provisioning/dashboards/gpufleet.yaml"
GRAFANA_DASHBOARDS = "/var/lib/grafana/dashboards/gpufleet"
GRAFANA_ADMIN_PASSWORD = "/etc/grafana/gpufleet-admin-password"
SECRETS_DIR = "/etc/gpufleet-monitoring/secrets"
SETUP_ENV = "/etc/gpufleet-monitoring/setup.env"
SETUP_SCRIPT = "/usr/local/sbin/gpufleet-monitoring-setup"

PROMETHEUS_LISTEN = "127.0.0.1:9090"
ALERTMANAGER_LISTEN = "127.0.0.1:9093"
GRAFANA_ADDR, GRAFANA_PORT = "127.0.0.1", 3000


def secret_file(role: str) -> str:
    """The file the setup script writes a secret from the cloud's secret store into (root:prometheus 0640)."""
    return f"{SECRETS_DIR}/{role}"
