"""alertmanager.yml from `monitoring.alerts`: each configured receiver reads its secret from a file.

Alertmanager's `*_file` fields (slack `api_url_file`, pagerduty `routing_key_file`, email `auth_password_file`)
keep the secret values out of the config and out of user data: the setup script writes those files from the
cloud's secret store at boot. With no receiver configured, alerts still reach Alertmanager's UI and Grafana.
"""

from __future__ import annotations

from typing import Any

import yaml

from ...spec.monitoring import Alerts
from . import paths

RECEIVER = "gpufleet"


def alertmanager_config(alerts: Alerts) -> str:
    receiver: dict[str, Any] = {"name": RECEIVER}
    if alerts.slack_webhook_secret:
        slack = {"api_url_file": paths.secret_file("slack-webhook"), "send_resolved": True,
                 "title": '[{{ .Status | toUpper }}] {{ .CommonLabels.alertname }}',
                 "text": '{{ range .Alerts }}{{ .Annotations.summary }}\n{{ end }}'}
        if alerts.slack_channel:
            slack["channel"] = alerts.slack_channel
        receiver["slack_configs"] = [slack]
    if alerts.pagerduty_key_secret:
        receiver["pagerduty_configs"] = [{"routing_key_file": paths.secret_file("pagerduty-key"),
                                          "send_resolved": True}]
    if alerts.email:
        email: dict[str, Any] = {"to": alerts.email, "from": alerts.email_from or alerts.email,
                                 "smarthost": alerts.email_smarthost, "require_tls": True, "send_resolved": True}
        if alerts.email_username:
            email["auth_username"] = alerts.email_username
        if alerts.email_password_secret:
            email["auth_password_file"] = paths.secret_file("smtp-password")
        receiver["email_configs"] = [email]
    config = {
        "route": {"receiver": RECEIVER, "group_by": ["alertname", "instance"], "group_wait": "30s",
                  "group_interval": "5m", "repeat_interval": "4h",
                  # info alerts (idle GPUs, memory near full) stay in Grafana; warning and critical are sent
                  "routes": [{"receiver": "quiet", "matchers": ['severity="info"']}]},
        "inhibit_rules": [{"source_matchers": ['severity="critical"'], "target_matchers": ['severity="warning"'],
                           "equal": ["instance"]}],
        "receivers": [receiver, {"name": "quiet"}],
    }
    return yaml.safe_dump(config, sort_keys=False, default_flow_style=False)


def alertmanager_args() -> str:
    """ARGS for /etc/default/prometheus-alertmanager: localhost only, no gossip port (one instance), its silences
    and notification log on the data disk."""
    return (f"--config.file={paths.ALERTMANAGER_CONFIG} --web.listen-address={paths.ALERTMANAGER_LISTEN} "
            f"--cluster.listen-address= --storage.path={paths.ALERTMANAGER_DATA}")
