"""Stack outputs every cloud shares; each cloud component adds how to connect, list nodes and write a hostfile."""

from __future__ import annotations

from typing import Any

import pulumi

from .boot import node_fabric
from .catalog.selection_cost import cluster_cost, cost_table
from .catalog.selector import Selection
from .groups.cost import group_cost_rows
from .groups.plans import NodeGroupPlans
from .monitoring.scrape import enabled_jobs
from .spec import ClusterSpec
from .storage.cost import shared_filesystem_output


def common_outputs(plans: NodeGroupPlans) -> dict[str, Any]:
    """Cloud-neutral facts and the estimated cost at the chosen market, as plain values. With node groups: the
    default group's type, GPU, fabric and market; the cluster's nodes, GPUs, cost (one row per group and the
    total) and warnings; each group's own in the `node_groups` output."""
    outputs = group_facts(plans.first)
    if not plans.grouped and plans.first.spec.nodes_range is None:
        return outputs  # an elastic one-group cluster's cost is its group row: per node-hour, idle and full
    rows = group_cost_rows(plans)
    return {**outputs, "nodes": plans.nodes,
            "gpus_total": sum(plan.instance.gpus * plan.spec.nodes for plan in plans.groups),
            "estimated_usd_per_hour": rows[-1]["usd_per_hour"], "estimated_usd_per_month": rows[-1]["usd_per_month"],
            "cost": rows, "warnings": list(plans.warnings)}


def group_facts(selection: Selection) -> dict[str, Any]:
    """One group's facts and its estimated cost at its market (a one-group cluster's outputs)."""
    spec, instance = selection.spec, selection.instance
    cost = cluster_cost(selection)
    return {
        "cloud": spec.cloud,
        "region": spec.region,
        "zone": spec.zone,
        "instance_type": instance.name,
        "nodes": spec.nodes,
        "gpu": instance.gpu,
        "gpus_per_node": instance.gpus,
        "gpus_total": instance.gpus * spec.nodes,
        "fabric": node_fabric(selection) or "tcp",  # what NCCL runs over: "tcp-multinic" where GPUDirect is not set up
        "market": spec.market.type,
        "estimated_usd_per_hour": cost.usd_per_hour,
        "estimated_usd_per_month": cost.usd_per_month,
        "cost": cost_table(selection),
        "shared_filesystem": shared_filesystem_output(spec),
        "warnings": list(selection.warnings),
        **({"job_cost": job_cost(selection)} if spec.job is not None else {}),
    }


def job_cost(selection: Selection) -> dict:
    """`job:` in the spec: the named MLPerf workload's hours and cost on this cluster at its market."""
    from .bench.mlperf import job_cost_row
    spec = selection.spec
    assert spec.job is not None
    hourly = next((r["usd_per_hour"] for r in cost_table(selection) if r["chosen"]), None)
    return job_cost_row(spec.job.mlperf, spec.job.samples, selection.instance.gpu,
                        selection.instance.gpus * spec.nodes, hourly)


def exporter_jobs(spec: ClusterSpec) -> list[tuple[str, int]]:
    """(Prometheus job, port) of each exporter the spec turns on."""
    triton = [("gpufleet-triton", 8002)] if spec.inference is not None else []  # Triton's metrics port (README "Inference")
    return enabled_jobs(dcgm=spec.node.exporters.dcgm, node=spec.node.exporters.node) + triton


def exporter_ports(spec: ClusterSpec) -> list[int]:
    """The exporter ports the node software opens, in a fixed order (monitoring.scrape.EXPORTER_JOBS, the one
    place they are written): what every cloud's firewall opens to the cluster and `access.monitoring_cidrs`."""
    return [port for _, port in exporter_jobs(spec)]


def hostfile_command(list_nodes: pulumi.Input[str], gpus_per_node: int) -> pulumi.Output[str]:
    """The shell command that writes an MPI hostfile: one node IP per line with its GPU slots."""
    return pulumi.Output.concat(list_nodes, f" | sed 's/$/ slots={gpus_per_node}/' > hostfile")
