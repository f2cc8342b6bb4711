"""Grafana provisioning: the local Prometheus as the only datasource, and gpufleet's dashboards from files."""

from __future__ import annotations

import yaml

from ..pricing import DATASOURCE_UID
from . import paths


def datasource_provisioning() -> str:
    return yaml.safe_dump({"apiVersion": 1, "datasources": [{
        "name": "Prometheus", "uid": DATASOURCE_UID, "type": "prometheus", "access": "proxy",
        "url": f"http://{paths.PROMETHEUS_LISTEN}", "isDefault": True, "editable": False,
        "jsonData": {"timeInterval": "30s"}}]}, sort_keys=False)


def dashboard_provisioning() -> str:
    return yaml.safe_dump({"apiVersion": 1, "providers": [{
        "name": "gpufleet", "folder": "gpufleet", "type": "file", "disableDeletion": True, "allowUiUpdates": False,
        "options": {"path": paths.GRAFANA_DASHBOARDS}}]}, sort_keys=False)
