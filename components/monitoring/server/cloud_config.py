"""The monitoring server's cloud-config: Ubuntu's signed archive packages, gpufleet's config files, one setup script.

Separate from the GPU nodes' user data (gpufleet.cloud_init): the server runs no GPU stack. It holds secret
*references* (parameter, secret or vault URLs) only; the setup script reads the values with the instance identity.
Prometheus and Alertmanager come from Ubuntu 24.04's archive (apt verifies the archive signature); Grafana from
apt.grafana.com after the script checks the key's fingerprint.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from importlib.resources import files

import yaml

from gpufleet.cloud_init.yaml_entries import yaml_by_entry

from ...spec.monitoring import Monitoring
from ..scrape import ALERT_RULES, ELASTIC_ALERT_RULES, SLURM_ALERT_RULES, scrapes_elastic, scrapes_slurm
from . import paths
from .alertmanager import alertmanager_args, alertmanager_config
from .grafana import dashboard_provisioning, datasource_provisioning
from .hardening import WRITABLE, drop_in
from .prometheus import prometheus_args, prometheus_config

PACKAGES = ["prometheus", "prometheus-alertmanager", "curl", "gnupg", "openssl"]
SECRET_ENV = {"slack-webhook": "SECRET_SLACK_WEBHOOK", "pagerduty-key": "SECRET_PAGERDUTY_KEY",
              "smtp-password": "SECRET_SMTP_PASSWORD", "grafana-admin": "SECRET_GRAFANA_ADMIN"}


@dataclass(frozen=True)
class ServerSettings:
    """What the cloud component knows only at deploy time; every value is a name or a URL, never a secret."""

    cloud: str
    data_device: str
    secret_refs: dict[str, str] = field(default_factory=dict)  # role -> parameter name / secret path / vault URL
    extra_env: dict[str, str] = field(default_factory=dict)


def setup_script() -> str:
    return files(__package__).joinpath("files/gpufleet-monitoring-setup").read_text()


def server_user_data(monitoring: Monitoring, jobs: list[dict], dashboards: dict[str, str],
                     settings: ServerSettings) -> str:
    """The `#cloud-config` text; byte-identical for the same inputs."""
    return emit_cloud_config(server_document(monitoring, jobs, dashboards, settings))


def emit_cloud_config(document: dict) -> str:
    """`#cloud-config` YAML of `document` (its write_files entries, mostly dashboards, emitted once per process)."""
    return "#cloud-config\n" + yaml_by_entry(document, _dump)


def _dump(value: object) -> str:
    return yaml.safe_dump(value, sort_keys=False, default_flow_style=False, width=120)


def server_document(monitoring: Monitoring, jobs: list[dict], dashboards: dict[str, str],
                    settings: ServerSettings) -> dict:
    """The server's cloud-config as data."""
    env = {"CLOUD": settings.cloud, "DATA_DEVICE": settings.data_device, **settings.extra_env,
           **{SECRET_ENV[role]: ref for role, ref in sorted(settings.secret_refs.items())}}
    write = [
        _file(paths.PROMETHEUS_CONFIG, prometheus_config(jobs)),
        _file(paths.ALERT_RULES, ALERT_RULES.read_text()),
        *([_file(paths.SLURM_ALERT_RULES, SLURM_ALERT_RULES.read_text())] if scrapes_slurm(jobs) else []),
        *([_file(paths.ELASTIC_ALERT_RULES, ELASTIC_ALERT_RULES.read_text())] if scrapes_elastic(jobs) else []),
        _file("/etc/default/prometheus", f'ARGS="{prometheus_args(monitoring.retention_days)}"\n'),
        _file(paths.ALERTMANAGER_CONFIG, alertmanager_config(monitoring.alerts)),
        _file("/etc/default/prometheus-alertmanager", f'ARGS="{alertmanager_args()}"\n'),
        _file(paths.GRAFANA_DATASOURCES, datasource_provisioning()),
        _file(paths.GRAFANA_DASHBOARD_PROVIDER, dashboard_provisioning()),
        *(_file(f"{paths.GRAFANA_DASHBOARDS}/{name}", _compact(text)) for name, text in sorted(dashboards.items())),
        *(_file(f"/etc/systemd/system/{service}.service.d/gpufleet.conf", drop_in(service)) for service in WRITABLE),
        _file(paths.SETUP_ENV, "".join(f"{key}={shlex.quote(value)}\n" for key, value in env.items()), "0600"),
        _file(paths.SETUP_SCRIPT, setup_script(), "0755"),
        _file("/etc/systemd/system/gpufleet-monitoring-setup.service", SETUP_UNIT),
    ]
    config = {
        "package_update": True,
        "apt": {"conf": 'APT::Install-Recommends "false";\n'},
        "packages": PACKAGES,
        "write_files": write,
        "runcmd": [["systemctl", "daemon-reload"],
                   ["systemctl", "enable", "--now", "gpufleet-monitoring-setup.service"]],
    }
    return config


# Not After=cloud-final.service: Debian's and Ubuntu's cloud-final is After=multi-user.target, which wants this unit,
# so that ordering is a cycle and systemd deletes a job to break it on every boot after the first. The first boot
# needs no ordering: runcmd (in cloud-final, after packages and write_files) enables and starts it. Later boots find
# the packages and files in place; the condition keeps it off an image booted without this cloud-config's files.
SETUP_UNIT = f"""[Unit]
Description=gpufleet monitoring server setup (data disk, Grafana, secrets from the cloud's secret store)
ConditionPathExists={paths.SETUP_ENV}
Wants=network-online.target
After=network-online.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart={paths.SETUP_SCRIPT}

[Install]
WantedBy=multi-user.target
"""


def _file(path: str, content: str, permissions: str = "0644") -> dict:
    return {"path": path, "content": content, "owner": "root:root", "permissions": permissions}


def _compact(dashboard_json: str) -> str:
    """Dashboards without indentation: user data has a size limit (AWS 16 KiB gzipped, Azure 64 KiB)."""
    return json.dumps(json.loads(dashboard_json), sort_keys=True, separators=(",", ":")) + "\n"
