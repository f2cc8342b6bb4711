"""The `monitoring:` section: a Prometheus + Alertmanager + Grafana server per cluster, and where alerts go.

Secrets are never written in the spec: fields ending in `_secret` name a Pulumi config key that the user sets with
`pulumi config set --secret <key> <value>`. The component copies each value into the cloud's secret store (SSM
Parameter Store SecureString, Key Vault, Secret Manager); the server reads it at boot with its own identity.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from .strict import StrictModel

CONFIG_KEY_PATTERN = r"^([a-zA-Z][a-zA-Z0-9_.-]*:)?[a-zA-Z][a-zA-Z0-9_.-]*$"
EMAIL_PATTERN = r"^[^@\s]+@[^@\s]+\.[^@\s]+$"


class Alerts(StrictModel):
    """Where Alertmanager sends alerts. Default: nowhere (alerts show in Grafana and Alertmanager only)."""

    slack_webhook_secret: str | None = Field(None, pattern=CONFIG_KEY_PATTERN, examples=["slackWebhook"])
    """Pulumi config key (set with `--secret`) holding a Slack incoming-webhook URL. Default: no Slack."""
    slack_channel: str | None = None
    """Slack channel, e.g. "#gpu-alerts". Default: the webhook's own channel."""
    email: str | None = Field(None, pattern=EMAIL_PATTERN)
    """Address that receives alert mail; needs `email_smarthost`. Default: no mail."""
    email_from: str | None = Field(None, pattern=EMAIL_PATTERN)
    """Sender address. Default: `email`."""
    email_smarthost: str | None = Field(None, pattern=r"^[A-Za-z0-9.-]+:\d{1,5}$")
    """SMTP relay as host:port, e.g. "smtp.example.com:587" (STARTTLS required). Default: none."""
    email_username: str | None = None
    """SMTP user name. Default: no SMTP authentication."""
    email_password_secret: str | None = Field(None, pattern=CONFIG_KEY_PATTERN)
    """Pulumi config key (set with `--secret`) holding the SMTP password. Default: none."""
    pagerduty_key_secret: str | None = Field(None, pattern=CONFIG_KEY_PATTERN)
    """Pulumi config key (set with `--secret`) holding a PagerDuty Events API v2 routing key. Default: no PagerDuty."""

    @model_validator(mode="after")
    def _mail_needs_a_relay(self):
        if self.email and not self.email_smarthost:
            raise ValueError("`email` needs `email_smarthost` (host:port of an SMTP relay that accepts STARTTLS)")
        if self.email_password_secret and not self.email_username:
            raise ValueError("`email_password_secret` needs `email_username`")
        return self

    def secret_keys(self) -> dict[str, str]:
        """Secret role -> the Pulumi config key that holds it, for the receivers that are configured."""
        roles = {"slack-webhook": self.slack_webhook_secret, "smtp-password": self.email_password_secret,
                 "pagerduty-key": self.pagerduty_key_secret}
        return {role: key for role, key in roles.items() if key}


class Monitoring(StrictModel):
    """A monitoring server in the cluster's private subnet: Prometheus (cloud service discovery of the nodes,
    gpufleet's alert rules), Alertmanager and Grafana with GPU dashboards. No public IP: open Grafana through
    SSM / IAP / Bastion port forwarding (README)."""

    server: bool | None = None
    """Declare the monitoring server. Default: on for training clusters (multi-node, or on an RDMA fabric, so growing
    a one-node EFA/InfiniBand cluster touches only the fleet), off for single-node TCP (dev) clusters, which
    `nvidia-smi` on the node serves better than a second machine billed by the hour."""
    retention_days: int = Field(30, ge=1, le=3650)
    """Days of metrics Prometheus keeps on its data disk. Default: 30."""
    data_disk_gib: int = Field(50, ge=10, le=16384)
    """Encrypted data disk for Prometheus' TSDB, kept when the server is replaced. Default: 50."""
    instance_type: str | None = None
    """Server size. Default: a small CPU instance (AWS t3.medium, Azure Standard_B2s, GCP e2-medium)."""
    grafana_admin_password_secret: str = Field("grafanaAdminPassword", pattern=CONFIG_KEY_PATTERN)
    """Pulumi config key (set with `--secret`) holding Grafana's admin password. Default: "grafanaAdminPassword";
    when that key is not set, the server generates a random password at first boot and keeps it root-only in
    /etc/grafana/gpufleet-admin-password."""
    alerts: Alerts = Field(default_factory=Alerts)


def server_enabled(monitoring: Monitoring, nodes: int, fabric: str | None) -> bool:
    """The `server` default: on for multi-node clusters and any cluster on an RDMA fabric (`fabric` as selected)."""
    if monitoring.server is not None:
        return monitoring.server
    return nodes > 1 or fabric not in (None, "tcp")
