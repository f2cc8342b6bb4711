"""prometheus.yml for the monitoring server: the stack's exported scrape jobs, gpufleet's rules, local Alertmanager.

The scrape jobs are the same objects `prometheus_scrape_config` exports (components/monitoring/scrape.py), so the
server discovers exactly the nodes the stack output describes. Retention is a command-line flag, not config:
`prometheus_args` carries it.
"""

from __future__ import annotations

from typing import Any

import yaml

from ..scrape import _NoAliases, scrapes_elastic, scrapes_slurm
from . import paths

SCRAPE_INTERVAL = "30s"  # dcgm-exporter collects every 30 s (-c 30000): scraping faster only repeats samples


def prometheus_config(jobs: list[dict[str, Any]]) -> str:
    config = {
        "global": {"scrape_interval": SCRAPE_INTERVAL, "evaluation_interval": SCRAPE_INTERVAL},
        "rule_files": [paths.ALERT_RULES, *([paths.SLURM_ALERT_RULES] if scrapes_slurm(jobs) else []),
                       *([paths.ELASTIC_ALERT_RULES] if scrapes_elastic(jobs) else [])],
        "alerting": {"alertmanagers": [{"static_configs": [{"targets": [paths.ALERTMANAGER_LISTEN]}]}]},
        "scrape_configs": [
            {"job_name": "prometheus", "static_configs": [{"targets": [paths.PROMETHEUS_LISTEN]}]},
            *jobs,
        ],
    }
    return yaml.dump(config, Dumper=_NoAliases, sort_keys=False, default_flow_style=False)


def prometheus_args(retention_days: int) -> str:
    """ARGS for /etc/default/prometheus: listen on localhost only, keep `retention_days` on the data disk."""
    return (f"--config.file={paths.PROMETHEUS_CONFIG} --web.listen-address={paths.PROMETHEUS_LISTEN} "
            f"--storage.tsdb.path={paths.PROMETHEUS_DATA}/metrics2 --storage.tsdb.retention.time={retention_days}d")
