"""Reads the monitoring secrets the spec names from Pulumi config, as Pulumi secrets, before anything is declared.

A `*_secret` field names a config key (`slackWebhook` in the project namespace, or `ns:key`); its value must have
been set with `pulumi config set --secret`. Each value stays a secret Output: Pulumi encrypts it in state and masks
it in previews, and the cloud component writes it only into the cloud's secret store.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from ..groups.plans import NodeGroupPlans
from ..spec import ClusterSpec, Problem, SpecError
from ..spec.monitoring import server_enabled

PROJECT_NAMESPACE = "gpufleet"
FIELDS = {"slack-webhook": "monitoring.alerts.slack_webhook_secret",
          "smtp-password": "monitoring.alerts.email_password_secret",
          "pagerduty-key": "monitoring.alerts.pagerduty_key_secret"}


@dataclass(frozen=True)
class MonitoringPlan:
    """Whether the server is declared, and the secret values (role -> secret Output) it needs."""

    enabled: bool
    secrets: dict[str, pulumi.Output[str]]


def read_secrets(spec: ClusterSpec) -> dict[str, pulumi.Output[str]]:
    """Role -> secret Output for every `*_secret` the spec names; raises `SpecError` naming each one not set.

    Called before the component registers itself (gpufleet.cluster.build_cluster), so a missing secret declares
    nothing, and again by the cloud component, for programs that construct it directly.
    """
    secrets, problems = {}, []
    for role, key in sorted(spec.monitoring.alerts.secret_keys().items()):
        value = _config_secret(key)
        if value is None:
            problems.append(Problem(FIELDS[role], key, f"a Pulumi config key that is set: run `pulumi config set "
                                                        f"--secret {key} <value>`"))
        else:
            secrets[role] = value
    if problems:
        raise SpecError(problems)
    grafana = _config_secret(spec.monitoring.grafana_admin_password_secret)
    if grafana is not None:
        secrets["grafana-admin"] = grafana
    return secrets


def plan_monitoring(plans: NodeGroupPlans) -> MonitoringPlan:
    """Whether the server is declared (the `monitoring.server` default needs the selected fabric: any group's, and
    every group's nodes) and its secrets."""
    spec = plans.first.spec
    secrets = read_secrets(spec)
    if not server_wanted(plans):
        return MonitoringPlan(False, {})
    return MonitoringPlan(True, secrets)


def server_wanted(plans: NodeGroupPlans) -> bool:
    """`monitoring.server` for the whole cluster: on for several nodes or any group on an RDMA fabric."""
    fabric = next((plan.fabric for plan in plans.groups if plan.fabric is not None), None)
    return server_enabled(plans.first.spec.monitoring, plans.nodes, fabric)


def _config_secret(key: str) -> pulumi.Output[str] | None:
    namespace, _, name = key.rpartition(":")
    return pulumi.Config(namespace or PROJECT_NAMESPACE).get_secret(name)
