"""Prometheus scrape jobs that find a cluster's nodes through each cloud's service discovery.

The jobs select nodes by gpufleet's provenance tags or labels, so they follow the fleet as it scales or replaces
spot nodes. Exporters listen on the node's private address: Prometheus must run inside the network or come in
through `access.monitoring_cidrs`. Field names: prometheus docs/configuration/configuration.md
(ec2_sd_configs, gce_sd_configs, azure_sd_configs).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from ..groups.naming import GROUP_LABEL

ALERT_RULES = Path(__file__).with_name("alerts.yml")
SLURM_ALERT_RULES = Path(__file__).with_name("slurm-alerts.yml")
ELASTIC_ALERT_RULES = Path(__file__).with_name("elastic-alerts.yml")
SLURM_METRICS = "gpufleet_slurm_.*"
ELASTIC_METRICS = "gpufleet_slurm_.*|gpufleet_capacity_short|gpufleet_power_.*"
EXPORTER_JOBS = {"dcgm": ("gpufleet-dcgm", 9400), "node": ("gpufleet-node", 9100)}
NODE_ROLE = "node"
SLURM_JOB = ("gpufleet-slurm", 9100)
"""The Slurm controller's packaged node_exporter, whose textfile collector serves gpufleet-slurm-metrics' file."""


def enabled_jobs(dcgm: bool, node: bool) -> list[tuple[str, int]]:
    """(job name, port) for each exporter the nodes run, in a fixed order."""
    enabled = {"dcgm": dcgm, "node": node}
    return [EXPORTER_JOBS[key] for key in EXPORTER_JOBS if enabled[key]]


def aws_jobs(stack: str, region: str, jobs: list[tuple[str, int]], grouped: bool = False) -> list[dict[str, Any]]:
    """EC2 discovery of running instances tagged with the stack (needs ec2:DescribeInstances). `grouped`: a
    cluster of node groups, whose nodes' group tag becomes the `node_group` label."""
    filters = [{"name": "tag:gpufleet-stack", "values": [stack]}, {"name": "tag:gpufleet-role", "values": [NODE_ROLE]},
               {"name": "instance-state-name", "values": ["running"]}]
    group = [_group_label("__meta_ec2_tag_gpufleet_node_group")] if grouped else []
    return [_job(name, "ec2_sd_configs", {"region": region, "port": port, "filters": filters},
                 node_label="__meta_ec2_instance_id", extra_relabel=group) for name, port in jobs]


def gcp_jobs(project: str, zone: str, stack_label: str, jobs: list[tuple[str, int]],
             grouped: bool = False, fallback_zones: Sequence[str] = ()) -> list[dict[str, Any]]:
    """GCE discovery of instances labelled with the stack in the cluster's zone (needs compute.instances.list), kept
    to the GPU nodes' role: the monitoring server carries the stack label too. `grouped`: the nodes' group label
    becomes `node_group`. `fallback_zones`: the other zones elastic groups' nodes may be started in, one discovery
    each (GCE discovery lists one zone)."""
    zones = list(dict.fromkeys([zone, *fallback_zones]))
    nodes_only = {"source_labels": ["__meta_gce_label_gpufleet_role"], "regex": NODE_ROLE, "action": "keep"}
    group = [_group_label("__meta_gce_label_gpufleet_node_group")] if grouped else []
    return [_job(name, "gce_sd_configs", *[{"project": project, "zone": each, "filter":
                                            f'labels.gpufleet-stack="{stack_label}"', "port": port} for each in zones],
                 node_label="__meta_gce_instance_name", extra_relabel=[nodes_only, *group])
            for name, port in jobs]


def _group_label(meta_label: str) -> dict[str, Any]:
    return {"source_labels": [meta_label], "target_label": GROUP_LABEL}


def azure_jobs(subscription_id: str, resource_group: str, scale_sets: list[str],
               jobs: list[tuple[str, int]], groups: Sequence[str | None] = ()) -> list[dict[str, Any]]:
    """Azure discovery in the cluster's resource group, kept to the cluster's scale sets (managed identity).
    `groups`: each scale set's node group (a cluster of node groups), set as the `node_group` label by the scale
    set's name."""
    sd = {"subscription_id": subscription_id, "resource_group": resource_group,
          "authentication_method": "ManagedIdentity"}
    keep = {"source_labels": ["__meta_azure_machine_scale_set"], "regex": "|".join(sorted(scale_sets)),
            "action": "keep"}
    named = sorted((scale_set, group) for scale_set, group in zip(scale_sets, groups, strict=False) if group)
    by_scale_set = [{"source_labels": ["__meta_azure_machine_scale_set"], "regex": re.escape(scale_set),
                     "target_label": GROUP_LABEL, "replacement": group} for scale_set, group in named]
    return [_job(name, "azure_sd_configs", {**sd, "port": port}, node_label="__meta_azure_machine_name",
                 extra_relabel=[keep, *by_scale_set])
            for name, port in jobs]


def scrapes_slurm(jobs: list[dict[str, Any]]) -> bool:
    """Whether the jobs include the Slurm controller's (then the server loads slurm-alerts.yml too)."""
    return any(job["job_name"] == SLURM_JOB[0] for job in jobs)


def slurm_controller_job(address: str, elastic: bool = False) -> dict[str, Any]:
    """The Slurm controller's node_exporter at its fixed private address, kept to the gpufleet_slurm_* metrics (and
    `up`), so the controller's own host metrics stay out of the GPU nodes' dashboards and alerts; with elastic
    groups also the power programs' gpufleet_capacity_short and gpufleet_power_* (elastic-alerts.yml)."""
    name, port = SLURM_JOB
    return {"job_name": name, "static_configs": [{"targets": [f"{address}:{port}"],
                                                 "labels": {"node": "slurm-controller"}}],
            "metric_relabel_configs": [{"source_labels": ["__name__"],
                                        "regex": ELASTIC_METRICS if elastic else SLURM_METRICS, "action": "keep"}]}


def scrapes_elastic(jobs: list[dict[str, Any]]) -> bool:
    """Whether the Slurm controller's job keeps the power programs' metrics (then the server loads
    elastic-alerts.yml too)."""
    return any(job["job_name"] == SLURM_JOB[0] and any(
        config.get("regex") == ELASTIC_METRICS for config in job.get("metric_relabel_configs", [])) for job in jobs)


def scrape_config_text(jobs: list[dict[str, Any]]) -> str:
    """The `scrape_configs:` block to paste into prometheus.yml, with alerts.yml for `rule_files:`."""
    header = ("# gpufleet: scrape jobs for this cluster's exporters; load the alert rules from "
              "components/monitoring/alerts.yml\n")
    return header + yaml.dump({"scrape_configs": jobs}, Dumper=_NoAliases, sort_keys=True, default_flow_style=False)


class _NoAliases(yaml.SafeDumper):
    """Writes shared objects out in full: anchors (&id001) would puzzle whoever pastes the block."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _job(name: str, sd_key: str, *sds: dict, node_label: str, extra_relabel: Sequence[dict] = ()) -> dict[str, Any]:
    relabel = [*extra_relabel, {"source_labels": [node_label], "target_label": "node"}]
    return {"job_name": name, sd_key: list(sds), "relabel_configs": relabel}
