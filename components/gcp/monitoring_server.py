"""The monitoring server on GCP: one e2 VM in the cluster subnet, no external IP, reached through IAP.

- identity: its own service account with one custom role holding `compute.instances.list` (GCE service discovery,
  nothing else on the project), and `roles/secretmanager.secretAccessor` on its own secrets only (resource-level
  bindings, not project-wide). No logging or monitoring writer roles: it ships nothing to Cloud Logging.
- secrets: each Pulumi secret becomes a Secret Manager secret version, read at boot through the metadata server's
  token.
- disk: a separate pd-balanced disk (encrypted at rest with Google-managed keys, as every PD) for Prometheus' TSDB,
  kept when the VM is replaced; it appears as /dev/disk/by-id/google-prometheus-data.
- network: the cluster subnet already admits the exporters from inside the subnet (fw-exporters), so the server
  scrapes with no new node rule; the one new rule admits IAP (35.235.240.0/20) on port 22 to this VM's service
  account only, for `gcloud compute ssh --tunnel-through-iap` port forwarding.
Children are named f"{name}-monitoring-{role}" (roles: sa, sd-role, sa-sd, secret-<secret role>,
secret-<secret role>-version, secret-<secret role>-access, data, fw-iap, server).
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_gcp as gcp

from ..groups.plans import NodeGroupPlans
from ..monitoring.outputs import monitoring_outputs, stack_dashboards
from ..monitoring.scrape import SLURM_JOB, gcp_jobs, slurm_controller_job
from ..monitoring.secrets import MonitoringPlan, plan_monitoring
from ..monitoring.server.cloud_config import ServerSettings, server_user_data
from ..outputs import exporter_jobs
from .elastic import elastic_zones
from .labels import Describer, Labeler, normalise_value, short_name
from .private_instance import SECRET_ACCESSOR, iap_ssh_rule, private_instance

__all__ = ["build_monitoring_server", "plan_monitoring"]

DEFAULT_MACHINE_TYPE = "e2-medium"
DATA_DEVICE_NAME = "prometheus-data"
DISCOVERY_PERMISSIONS = ["compute.instances.list"]
ROOT_DISK_GB = 20


def server_names(stack: str, name: str) -> dict[str, str]:
    """Deterministic ids for the VM, its account, its discovery role and its secrets' prefix."""
    return {"instance": short_name(f"{name}-{stack}-monitoring", 63), "account": short_name(f"{name}-{stack}-mon", 30),
            "role": short_name(f"{name}_{stack}_monitoring_sd", 64, allowed="a-z0-9_", sep="_"),
            "secret": short_name(f"{name}-{stack}-monitoring", 200, allowed="a-z0-9_-")}


def build_monitoring_server(name: str, plans: NodeGroupPlans, monitoring: MonitoringPlan, project: pulumi.Input[str],
                            network_id: pulumi.Input[str], subnet_id: pulumi.Input[str], label: Labeler,
                            describe: Describer, opts: pulumi.ResourceOptions,
                            slurm: tuple[pulumi.Input[str], pulumi.Input[str]] | None = None) -> dict[str, Any]:
    """The server and its outputs when `monitoring.server` is on; the dashboards and rules outputs always.
    `slurm`: the Slurm controller's (service account email, address), whose node_exporter only this server reaches."""
    outputs = monitoring_outputs(plans)
    if not monitoring.enabled:
        return outputs
    spec, stack, role = plans.first.spec, pulumi.get_stack(), f"{name}-monitoring"
    names = server_names(stack, name)
    account = gcp.serviceaccount.Account(f"{role}-sa", account_id=names["account"], project=project,
                                         display_name=f"gpufleet {name} monitoring server",
                                         description=describe("monitoring-sa"), opts=opts)
    email = pulumi.Output.concat(names["account"], "@", project, ".iam.gserviceaccount.com")
    member = pulumi.Output.concat("serviceAccount:", email)
    after_account = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[account]))
    discovery = gcp.projects.IAMCustomRole(
        f"{role}-sd-role", role_id=names["role"], project=project, permissions=DISCOVERY_PERMISSIONS,
        title=f"gpufleet {name} monitoring discovery", description=describe("monitoring-sd-role"), opts=opts)
    gcp.projects.IAMMember(f"{role}-sa-sd", project=project, member=member,
                           role=pulumi.Output.concat("projects/", project, "/roles/", discovery.role_id),
                           opts=pulumi.ResourceOptions.merge(after_account,
                                                             pulumi.ResourceOptions(depends_on=[account, discovery])))
    refs, versions = {}, []
    for secret_role, value in sorted(monitoring.secrets.items()):
        secret = gcp.secretmanager.Secret(
            f"{role}-secret-{secret_role}", secret_id=f"{names['secret']}-{secret_role}", project=project,
            replication=gcp.secretmanager.SecretReplicationArgs(auto=gcp.secretmanager.SecretReplicationAutoArgs()),
            labels=label(f"monitoring-secret-{secret_role}"), opts=opts)
        versions.append(gcp.secretmanager.SecretVersion(f"{role}-secret-{secret_role}-version", secret=secret.id,
                                                        secret_data=value, opts=opts))
        gcp.secretmanager.SecretIamMember(f"{role}-secret-{secret_role}-access", secret_id=secret.id,
                                          project=project, role=SECRET_ACCESSOR, member=member, opts=after_account)
        refs[secret_role] = pulumi.Output.concat("projects/", project, "/secrets/", names["secret"], "-", secret_role)
    data = gcp.compute.Disk(f"{role}-data", zone=spec.zone, project=project, size=spec.monitoring.data_disk_gib,
                            type="pd-balanced", labels=label("monitoring-data"),
                            description=describe("monitoring-data"), opts=opts)
    iap_ssh_rule(f"{role}-fw-iap", "the monitoring server", "monitoring-fw-iap", network_id, project, email, describe, opts)
    jobs = pulumi.Output.from_input(project).apply(
        lambda project_id: gcp_jobs(project_id, spec.zone, normalise_value(stack), exporter_jobs(spec),
                                    grouped=plans.grouped, fallback_zones=elastic_zones(plans)))
    if slurm:
        gcp.compute.Firewall(
            f"{role}-fw-slurm", network=network_id, project=project, direction="INGRESS", priority=1000,
            allows=[gcp.compute.FirewallAllowArgs(protocol="tcp", ports=[str(SLURM_JOB[1])])],
            source_service_accounts=[email], target_service_accounts=[slurm[0]],
            description=f"Slurm metrics scrape from the monitoring server; {describe('monitoring-fw-slurm')}",
            opts=opts)
        elastic = any(plan.spec.nodes_range is not None for plan in plans.groups)
        jobs = pulumi.Output.all(jobs, slurm[1]).apply(
            lambda values: [*values[0], slurm_controller_job(values[1], elastic)])
    user_data = pulumi.Output.all(jobs, pulumi.Output.all(**refs) if refs else {}).apply(
        lambda values: server_user_data(spec.monitoring, values[0], stack_dashboards(plans), ServerSettings(
            "gcp", f"/dev/disk/by-id/google-{DATA_DEVICE_NAME}", dict(values[1]))))
    server = private_instance(
        f"{role}-server", "monitoring", "monitoring-boot-disk", names["instance"], spec.zone, project,
        spec.monitoring.instance_type or DEFAULT_MACHINE_TYPE, ROOT_DISK_GB, data.id, DATA_DEVICE_NAME, subnet_id, email,
        user_data, label, describe, pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[account, *versions])))
    return {
        **outputs,
        "monitoring_server": server.name,
        "monitoring_server_account": email,
        "grafana_port_forward": pulumi.Output.concat(
            "gcloud compute ssh ", server.name, " --zone ", spec.zone, " --tunnel-through-iap -- -N ",
            "-L 3000:localhost:3000  # then open http://localhost:3000"),
    }
