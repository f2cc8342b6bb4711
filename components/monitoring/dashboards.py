"""Grafana dashboards as code, built with Grafana's own grafana-foundation-sdk (pinned in requirements.txt).

Three dashboards: the cluster overview (GPU health, utilisation, memory, power, temperature, XID / ECC / row remaps,
NVLink, InfiniBand/EFA and NIC throughput, and the cost panels), a per-node view (host CPU and memory beside each
GPU, and the job on each GPU) and the job view: each job in `gpufleet-jobs.slice`, by the `hpc_job` label that
dcgm-exporter puts on the GPUs `gpufleet-run` recorded for the job and that the node's job-metrics collector puts on
the job's cgroup figures. Every query uses only metrics from the node's dcgm-exporter counters file
(cloud_init/files/etc/gpufleet/dcgm-counters.csv), node_exporter or the job-metrics collector (JOB_METRICS); tests
load the JSON back through the SDK's model and check that. A GPU shared by two jobs is exported once per job, so
counts of GPUs go through `count by (node, gpu)`. Cost comes from the catalog: `$usd_per_node_hour` times the nodes answering, and the share of it
spent on GPUs below 5% utilisation for 30 minutes (the GpuIdle alert's question, in money). Prices are per node,
never per cluster, so a change of node count leaves the dashboards (and the server's user data) as they are.
"""

from __future__ import annotations

import json
import sys
from functools import lru_cache
from pathlib import Path

from grafana_foundation_sdk.builders import dashboard, prometheus, stat, timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.dashboard import DataSourceRef, VariableOption, VariableRefresh

from .pricing import DATASOURCE_UID, ElasticGroup, GroupPricing, NodePricing

DATASOURCE = DataSourceRef(type_val="prometheus", uid=DATASOURCE_UID)
GPU = '{node="$node"}'
# Idle: every series of the GPU in the window (one per job it ran, see the module doc) averaged under 5%.
IDLE_GPU_OF = "(max by (node, gpu) (avg_over_time(DCGM_FI_DEV_GPU_UTIL{selector}[30m])) < 5)"
IDLE_GPU = IDLE_GPU_OF.format(selector="")
MEMORY_PERCENT = ("100 * DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE + DCGM_FI_DEV_FB_RESERVED)")
PER_GPU = "{{node}} GPU {{gpu}}"
# What the node's job-metrics collector exports (cloud_init/files/usr/local/lib/gpufleet/job-metrics).
JOB_METRICS = ("gpufleet_job_cpu_seconds_total", "gpufleet_job_memory_bytes", "gpufleet_job_memory_peak_bytes",
               "gpufleet_job_tasks")
JOB = '{hpc_job=~"$hpc_job",node=~"$node"}'
# What the node's performance check exports (cloud_init/files/usr/local/lib/gpufleet/perf-check), per metric.
PERF_METRICS = ("gpufleet_perf_achieved", "gpufleet_perf_expected", "gpufleet_perf_floor", "gpufleet_perf_compared",
                "gpufleet_perf_ok")
PER_NODE_METRIC = "{{node}} {{metric}}"
PER_JOB = "{{hpc_job}}"
GPU_JOB = "GPU {{gpu}} {{hpc_job}}"
NODES_UP = 'sum(up{job="gpufleet-node"})'
# Mixed markets: the first `$base_nodes` nodes are on demand, the rest spot.
CLUSTER_COST = (f"clamp_max({NODES_UP}, $base_nodes) * $usd_per_base_node_hour"
                f" + clamp_min({NODES_UP} - $base_nodes, 0) * $usd_per_node_hour")
# vGPU slices (AWS G6f, Azure NVadsA10 v5 partial sizes, GCP G4 fractional): metrics of the physical GPU, which other
# tenants' VMs share, that the GRID guest driver does not give a slice, so their panels would be empty. A slice
# cluster's dashboards say so in those panels (Grafana's "no value" text) instead. UNVERIFIED in detail: what a guest
# can read depends on the vGPU release and profile; profiling (DCP) metrics need the host to enable them per VM,
# power, temperature, clocks and throttling belong to the shared board, and GPU utilisation reads N/A in a field
# report on an Azure A10 slice. Frame-buffer memory, XIDs and the exporters' own `up` are read on a slice.
SLICE_UNREADABLE = ("DCGM_FI_PROF_", "DCGM_FI_DEV_POWER", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_MEMORY_TEMP",
                    "DCGM_FI_DEV_THERMAL_VIOLATION", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_ECC_",
                    "DCGM_FI_DEV_ROW_REMAP", "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "node_infiniband_")
SLICE_NO_VALUE = "Not readable on a vGPU slice: the GRID guest driver does not expose this metric of the shared GPU"
# The overview counts GPUs by temperature; on a slice, by the frame buffer, which the guest reads.
GPUS_REPORTING = "count(count by (node, gpu) (DCGM_FI_DEV_GPU_TEMP))"
SLICES_REPORTING = "count(count by (node, gpu) (DCGM_FI_DEV_FB_USED))"


def slice_aware(board: dict) -> dict:
    """A vGPU slice cluster's dashboard: each panel whose every query reads a metric a slice cannot read shows
    SLICE_NO_VALUE (and says so in its description) instead of an empty panel; GPUs are counted by memory."""
    for panel in board.get("panels", []):
        targets = panel.get("targets") or []
        for target in targets:
            if target.get("expr") == GPUS_REPORTING:
                target["expr"] = SLICES_REPORTING
        if targets and all(any(name in target.get("expr", "") for name in SLICE_UNREADABLE) for target in targets):
            panel.setdefault("fieldConfig", {}).setdefault("defaults", {})["noValue"] = SLICE_NO_VALUE
            panel["description"] = SLICE_NO_VALUE + "."
            for target in targets:  # a "0" from `or vector(0)` would read as a measured zero
                target["expr"] = target["expr"].replace(" or vector(0)", "")
    return board


def _query(expr: str, legend: str = "", ref: str = "A") -> prometheus.Dataquery:
    return prometheus.Dataquery().expr(expr).legend_format(legend or "__auto").ref_id(ref).datasource(DATASOURCE)


def _series(title: str, unit: str, *queries: tuple[str, str], width: int = 12) -> timeseries.Panel:
    panel = timeseries.Panel().title(title).unit(unit).datasource(DATASOURCE).height(8).span(width)
    for index, (expr, legend) in enumerate(queries):
        panel = panel.with_target(_query(expr, legend, chr(ord("A") + index)))
    return panel


def _stat(title: str, unit: str, expr: str, width: int = 4) -> stat.Panel:
    return stat.Panel().title(title).unit(unit).datasource(DATASOURCE).height(4).span(width).with_target(
        _query(expr))


def _constant(name: str, value: float, label: str) -> dashboard.ConstantVariable:
    return dashboard.ConstantVariable(name).label(label).value(f"{value:g}")


def performance_row(builder: dashboard.Dashboard) -> dashboard.Dashboard:
    """node.health.performance: each node's measured speed against its type's figure (components/bench)."""
    return (
        builder.with_row(dashboard.Row("Speed against the type's figures (boot check)"))
        .with_panel(_stat("Nodes below a figure", "none", "count(count by (node) (gpufleet_perf_ok == 0)) or vector(0)"))
        .with_panel(_stat("Metrics not compared", "none", "count(gpufleet_perf_compared == 0) or vector(0)"))
        .with_panel(_series("Achieved / expected per node", "percentunit",
                            ("gpufleet_perf_achieved / on (node, metric) gpufleet_perf_expected", PER_NODE_METRIC),
                            ("gpufleet_perf_floor / on (node, metric) gpufleet_perf_expected", "{{node}} {{metric}} floor"),
                            width=8))
        .with_panel(_series("Achieved per node (GB/s, TFLOP/s)", "none",
                            ("gpufleet_perf_achieved", PER_NODE_METRIC),
                            ("gpufleet_perf_expected", "{{node}} {{metric}} expected"), width=8))
    )


NODE_JOB, CHOSEN_NODE = 'job="gpufleet-node"', 'node="$node"'


def _in_group(group: GroupPricing, *matchers: str) -> str:
    return "{" + ",".join([*matchers, f'node_group="{group.group}"']) + "}"


def group_cost(group: GroupPricing) -> str:
    """One group's cost per hour: its nodes answering, each at its group's rate (mixed: the base on demand)."""
    up, price = f"sum(up{_in_group(group, NODE_JOB)}) or vector(0)", group.pricing
    if not price.base_nodes:
        return f"({up}) * {price.usd_per_node_hour:g}"
    return (f"clamp_max({up}, {price.base_nodes}) * {price.usd_per_base_node_hour:g}"
            f" + clamp_min(({up}) - {price.base_nodes}, 0) * {price.usd_per_node_hour:g}")


def groups_row(builder: dashboard.Dashboard, groups: tuple[GroupPricing, ...]) -> dashboard.Dashboard:
    """Node groups: each group's nodes, GPUs and cost, by the `node_group` label of the scrape jobs."""
    builder = builder.with_row(dashboard.Row("Node groups"))
    builder = builder.with_panel(_series("Nodes up by group", "none",
                                         ('sum by (node_group) (up{job="gpufleet-node"})', "{{node_group}}"), width=8))
    builder = builder.with_panel(_series("GPU utilisation by group", "percent",
                                         ("avg by (node_group) (DCGM_FI_DEV_GPU_UTIL)", "{{node_group}}"), width=8))
    return builder.with_panel(_series("Cost by group (USD/h, nodes up)", "currencyUSD",
                                      *((group_cost(g), g.group) for g in groups), width=8))


def cluster_overview(pricing: NodePricing, gpus_per_node: int, performance: bool = False,
                     groups: tuple[GroupPricing, ...] = ()) -> dict:
    """The cluster at a glance; the constants come from the stack's catalog selection. `performance`: the
    node.health.performance row (only for clusters that run that check, so others render as before). `groups`: a
    cluster of several node groups, whose GPUs and cost are each group's own, summed."""
    expected_gpus = 'sum(up{job="gpufleet-node"}) * $gpus_per_node'
    cost, idle_spend = CLUSTER_COST, f"(count({IDLE_GPU}) or vector(0)) * $usd_per_node_hour / $gpus_per_node"
    if groups:
        expected_gpus = " + ".join(f"(sum(up{_in_group(g, NODE_JOB)}) or vector(0)) * {g.gpus_per_node}"
                                   for g in groups)
        cost = " + ".join(f"({group_cost(g)})" for g in groups)
        idle_spend = " + ".join(
            f"(count({IDLE_GPU_OF.format(selector=_in_group(g))}) or vector(0)) * "
            f"{g.pricing.usd_per_node_hour / g.gpus_per_node:g}" for g in groups)
    builder = (
        dashboard.Dashboard("gpufleet: GPU cluster overview").uid("gpufleet-overview").tags(["gpufleet", "gpu"])
        .readonly().time("now-6h", "now").refresh("1m")
        .with_variable(_constant("usd_per_node_hour", pricing.usd_per_node_hour, "USD per node-hour (catalog)"))
        .with_variable(_constant("usd_per_base_node_hour", pricing.usd_per_base_node_hour,
                                 "USD per on-demand base node-hour (catalog)"))
        .with_variable(_constant("base_nodes", pricing.base_nodes, "On-demand base nodes"))
        .with_variable(_constant("gpus_per_node", gpus_per_node, "GPUs per node"))
        .with_row(dashboard.Row("Health"))
        .with_panel(_stat("GPUs reporting", "none", GPUS_REPORTING))
        .with_panel(_stat("GPUs expected", "none", expected_gpus))
        .with_panel(_stat("Exporters down", "none", 'count(up{job=~"gpufleet-.*"} == 0) or vector(0)'))
        .with_panel(_stat("Nodes failing the boot check", "none", "count(gpufleet_node_healthy == 0) or vector(0)"))
        .with_panel(_stat("Cluster cost (USD/h, nodes up)", "currencyUSD", cost))
        .with_panel(_stat("Idle GPU spend (USD/h)", "currencyUSD", idle_spend))
        .with_row(dashboard.Row("Utilisation"))
        .with_panel(_series("GPU utilisation", "percent", ("DCGM_FI_DEV_GPU_UTIL", PER_GPU)))
        .with_panel(_series("Tensor core activity", "percentunit", ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", PER_GPU)))
        .with_panel(_series("GPU memory used", "percent", (MEMORY_PERCENT, PER_GPU)))
        .with_panel(_series("Power", "watt", ("DCGM_FI_DEV_POWER_USAGE", PER_GPU)))
        .with_panel(_series("Temperature", "celsius", ("DCGM_FI_DEV_GPU_TEMP", PER_GPU),
                            ("DCGM_FI_DEV_MEMORY_TEMP", "{{node}} GPU {{gpu}} memory")))
        .with_panel(_series("Throttling (power / thermal)", "ns",
                            ("rate(DCGM_FI_DEV_POWER_VIOLATION[5m])", "{{node}} GPU {{gpu}} power"),
                            ("rate(DCGM_FI_DEV_THERMAL_VIOLATION[5m])", "{{node}} GPU {{gpu}} thermal")))
        .with_row(dashboard.Row("Errors"))
        .with_panel(_series("Last XID per GPU", "none", ("DCGM_FI_DEV_XID_ERRORS", PER_GPU), width=8))
        .with_panel(_series("ECC errors (1h)", "none",
                            ("increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL[1h])", "{{node}} GPU {{gpu}} double-bit"),
                            ("increase(DCGM_FI_DEV_ECC_SBE_VOL_TOTAL[1h])", "{{node}} GPU {{gpu}} single-bit"),
                            width=8))
        .with_panel(_series("Row remapping", "none",
                            ("DCGM_FI_DEV_ROW_REMAP_PENDING", "{{node}} GPU {{gpu}} pending"),
                            ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "{{node}} GPU {{gpu}} failed"),
                            ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "{{node}} GPU {{gpu}} uncorrectable"),
                            width=8))
        .with_row(dashboard.Row("Interconnect"))
        .with_panel(_series("NVLink throughput", "Bps",
                            ("rate(DCGM_FI_PROF_NVLINK_TX_BYTES[5m])", "{{node}} GPU {{gpu}} tx"),
                            ("rate(DCGM_FI_PROF_NVLINK_RX_BYTES[5m])", "{{node}} GPU {{gpu}} rx"), width=8))
        .with_panel(_series("RDMA fabric (EFA / InfiniBand) throughput", "Bps",
                            ("sum by (node) (rate(node_infiniband_port_data_transmitted_bytes_total[5m]))",
                             "{{node}} tx"),
                            ("sum by (node) (rate(node_infiniband_port_data_received_bytes_total[5m]))",
                             "{{node}} rx"), width=8))
        .with_panel(_series("NIC throughput", "Bps",
                            ('sum by (node) (rate(node_network_transmit_bytes_total{device!="lo"}[5m]))',
                             "{{node}} tx"),
                            ('sum by (node) (rate(node_network_receive_bytes_total{device!="lo"}[5m]))',
                             "{{node}} rx"), width=8))
    )
    if groups:
        builder = groups_row(builder, groups)
    if performance:
        builder = performance_row(builder)
    return builder.build().to_json()


def node_jobs(pricing: NodePricing, groups: tuple[GroupPricing, ...] = ()) -> dict:
    """One node: what its jobs use of each GPU and of the host, to find the job that starves or idles a node."""
    node = (dashboard.QueryVariable("node").label("Node").datasource(DATASOURCE)
            .query('label_values(up{job="gpufleet-node"}, node)'))
    builder = (
        dashboard.Dashboard("gpufleet: node and job view").uid("gpufleet-node-jobs").tags(["gpufleet", "gpu"])
        .readonly().time("now-3h", "now").refresh("1m")
        .with_variable(node)
        .with_variable(_constant("usd_per_node_hour", pricing.usd_per_node_hour, "USD per node-hour (catalog)"))
        .with_panel(_series("GPU utilisation", "percent", (f"DCGM_FI_DEV_GPU_UTIL{GPU}", GPU_JOB)))
        .with_panel(_series("SM activity", "percentunit", (f"DCGM_FI_PROF_SM_ACTIVE{GPU}", GPU_JOB)))
        .with_panel(_series("GPU memory used", "decmbytes", (f"DCGM_FI_DEV_FB_USED{GPU}", GPU_JOB)))
        .with_panel(_series("PCIe throughput", "Bps", (f"rate(DCGM_FI_PROF_PCIE_TX_BYTES{GPU}[5m])", "GPU {{gpu}} tx"),
                            (f"rate(DCGM_FI_PROF_PCIE_RX_BYTES{GPU}[5m])", "GPU {{gpu}} rx")))
        .with_panel(_series("Host CPU busy", "percentunit",
                            ('1 - avg(rate(node_cpu_seconds_total{node="$node",mode="idle"}[5m]))', "cpu")))
        .with_panel(_series("Host memory available", "bytes", (f"node_memory_MemAvailable_bytes{GPU}", "available")))
        .with_panel(_stat("Node cost (USD/h, spot or on-demand rate)", "currencyUSD", node_cost(groups)))
    )
    return builder.build().to_json()


def node_cost(groups: tuple[GroupPricing, ...]) -> str:
    """The chosen node's rate; in a cluster of several groups, its own group's."""
    if not groups:
        return 'up{job="gpufleet-node",node="$node"} * $usd_per_node_hour'
    return " or ".join(f"up{_in_group(g, NODE_JOB, CHOSEN_NODE)} * {g.pricing.usd_per_node_hour:g}" for g in groups)


def _multi(name: str, label: str, query: str) -> dashboard.QueryVariable:
    """A query variable that can hold several values, on "All" at first; "All" is the regex `.+`, so a job that
    started after the page loaded shows too."""
    every = VariableOption(selected=True, text=["All"], value=["$__all"])
    return (dashboard.QueryVariable(name).label(label).datasource(DATASOURCE).query(query).multi(True)
            .include_all(True).all_value(".+").current(every).refresh(VariableRefresh.ON_TIME_RANGE_CHANGED))


def slurm_row(builder: dashboard.Dashboard) -> dashboard.Dashboard:
    """The Slurm controller's queue, jobs and nodes by state (gpufleet-slurm-metrics through its node_exporter);
    each job's GPUs above carry its Slurm job id as `hpc_job` (the Prolog's mapping)."""
    return (
        builder.with_row(dashboard.Row("Slurm (controller: squeue and sinfo every 30 s)"))
        .with_panel(_stat("Jobs waiting in the queue", "none", "max(gpufleet_slurm_queue_jobs)"))
        .with_panel(_stat("Jobs running", "none", 'max(gpufleet_slurm_jobs{state="running"})'))
        .with_panel(_stat("Nodes idle", "none", 'max(gpufleet_slurm_nodes{state="idle"})'))
        .with_panel(_stat("Nodes drained or down", "none",
                          'sum(gpufleet_slurm_nodes{state=~"drained|draining|down"}) or vector(0)'))
        .with_panel(_stat("Nodes not responding", "none", "max(gpufleet_slurm_nodes_not_responding)"))
        .with_panel(_stat("Slurm metrics fresh", "none", "max(gpufleet_slurm_up) * on () "
                          "(time() - max(gpufleet_slurm_metrics_timestamp_seconds) < bool 300)"))
        .with_panel(_series("Queue length (pending jobs)", "none", ("max(gpufleet_slurm_queue_jobs)", "pending"),
                            width=8))
        .with_panel(_series("Jobs by state", "none", ("max by (state) (gpufleet_slurm_jobs)", "{{state}}"), width=8))
        .with_panel(_series("Nodes by state", "none", ("max by (state) (gpufleet_slurm_nodes)", "{{state}}"),
                            width=8))
    )


POWER = 'job="gpufleet-slurm"'
RANGE_HOURS = "($__range_s / 3600)"


def _power(metric: str, group: str) -> str:
    return f'max(gpufleet_power_{metric}{{{POWER},group="{group}"}})'


def _over_range(metric: str, groups: tuple[ElasticGroup, ...], per_node: str) -> str:
    """The range's total of `metric` (nodes up or busy, sampled each minute) times a per-node figure of each group:
    GPU-hours when `per_node` is "gpus_per_node", USD for "usd_per_node_hour"."""
    terms = [f'(sum(avg_over_time(gpufleet_power_{metric}{{{POWER},group="{group.group}"}}[$__range])) or '
             f"vector(0)) * {getattr(group, per_node):g}" for group in groups]  # summed: no labels left to match
    return f"({' + '.join(terms)}) * {RANGE_HOURS}"


def elastic_row(builder: dashboard.Dashboard, groups: tuple[ElasticGroup, ...]) -> dashboard.Dashboard:
    """Elastic groups, from what the power programs on the controller write each minute (their node_exporter,
    scraped as gpufleet-slurm): nodes up (billed) and busy by group, GPU-hours used against paid over the
    dashboard's range, the idle share of the spend, groups short of capacity or quota, and resume failures."""
    used, paid = _over_range("nodes_busy", groups, "gpus_per_node"), _over_range("nodes_up", groups, "gpus_per_node")
    idle_spend = (f"{_over_range('nodes_up', groups, 'usd_per_node_hour')}"
                  f" - {_over_range('nodes_busy', groups, 'usd_per_node_hour')}")
    ranges = ", ".join(f"{g.group} {g.min_nodes}-{g.max_nodes}" for g in groups)
    return (
        builder.with_row(dashboard.Row(f"Elastic groups ({ranges} nodes; power programs, each minute)"))
        .with_panel(_stat("Nodes up (billed)", "none",
                          f"sum(max by (group) (gpufleet_power_nodes_up{{{POWER}}})) or vector(0)"))
        .with_panel(_stat("Groups short of capacity or quota", "none",
                          f"count(max by (group) (gpufleet_capacity_short{{{POWER}}}) == 1) or vector(0)"))
        .with_panel(_stat("GPU-hours used (range)", "none", used))
        .with_panel(_stat("GPU-hours paid (range)", "none", paid))
        .with_panel(_stat("GPU-hours used / paid", "percentunit", f"({used}) / clamp_min({paid}, 1e-9)"))
        .with_panel(_stat("Idle node spend (range, USD)", "currencyUSD", idle_spend))
        .with_panel(_series("Nodes up and busy by group", "none",
                            *[query for g in groups for query in ((_power("nodes_up", g.group), f"{g.group} up"),
                                                                  (_power("nodes_busy", g.group), f"{g.group} busy"))],
                            width=8))
        .with_panel(_series("GPUs paid and used by group", "none",
                            *[query for g in groups for query in (
                                (f"{_power('nodes_up', g.group)} * {g.gpus_per_node}", f"{g.group} paid"),
                                (f"{_power('nodes_busy', g.group)} * {g.gpus_per_node}", f"{g.group} used"))],
                            width=8))
        .with_panel(_series("Resume failures (nodes, last hour) and groups short", "none",
                            (f"sum by (group, reason) (increase(gpufleet_power_resume_failures_total{{{POWER}}}[1h]))",
                             "{{group}} {{reason}}"),
                            (f"max by (group, reason) (gpufleet_capacity_short{{{POWER}}}) == 1",
                             "{{group}} short: {{reason}}"), width=8))
    )


def jobs(pricing: NodePricing, gpus_per_node: int, slurm: bool = False,
         elastic: tuple[ElasticGroup, ...] = ()) -> dict:
    """Each job in gpufleet-jobs.slice across the chosen nodes: what it gets of its GPUs and of the host, and what
    its idle GPUs cost. A job that runs under one name on several nodes is summed over them."""
    builder = (
        dashboard.Dashboard("gpufleet: jobs (gpufleet-jobs.slice)").uid("gpufleet-jobs").tags(["gpufleet", "gpu"])
        .readonly().time("now-6h", "now").refresh("1m")
        .with_variable(_multi("node", "Node", 'label_values(up{job="gpufleet-node"}, node)'))
        .with_variable(_multi("hpc_job", "Job", 'label_values(gpufleet_job_cpu_seconds_total{node=~"$node"}, hpc_job)'))
        .with_variable(_constant("usd_per_node_hour", pricing.usd_per_node_hour, "USD per node-hour (catalog)"))
        .with_variable(_constant("gpus_per_node", gpus_per_node, "GPUs per node"))
        .with_row(dashboard.Row("Jobs"))
        .with_panel(_stat("Jobs running", "none", f"count(count by (hpc_job) (gpufleet_job_cpu_seconds_total{JOB}))"
                          " or vector(0)"))
        .with_panel(_stat("GPUs held by jobs", "none",
                          f"count(count by (node, gpu) (DCGM_FI_DEV_GPU_UTIL{JOB})) or vector(0)"))
        .with_panel(_stat("Idle GPUs held by jobs", "none",
                          f"count(max by (node, gpu) (avg_over_time(DCGM_FI_DEV_GPU_UTIL{JOB}[30m])) < 5)"
                          " or vector(0)"))
        .with_panel(_stat("Idle GPU spend of jobs (USD/h)", "currencyUSD",
                          f"(count(max by (node, gpu) (avg_over_time(DCGM_FI_DEV_GPU_UTIL{JOB}[30m])) < 5)"
                          " or vector(0)) * $usd_per_node_hour / $gpus_per_node"))
        .with_row(dashboard.Row("GPUs of each job (dcgm-exporter, hpc_job label)"))
        .with_panel(_series("GPU utilisation (mean of the job's GPUs)", "percent",
                            (f"avg by (hpc_job) (DCGM_FI_DEV_GPU_UTIL{JOB})", PER_JOB)))
        .with_panel(_series("SM activity (mean of the job's GPUs)", "percentunit",
                            (f"avg by (hpc_job) (DCGM_FI_PROF_SM_ACTIVE{JOB})", PER_JOB)))
        .with_panel(_series("GPU memory used", "mbytes", (f"sum by (hpc_job) (DCGM_FI_DEV_FB_USED{JOB})", PER_JOB)))
        .with_panel(_series("GPUs", "none", (f"count by (hpc_job) (DCGM_FI_DEV_GPU_UTIL{JOB})", PER_JOB)))
        .with_panel(_series("GPU power", "watt", (f"sum by (hpc_job) (DCGM_FI_DEV_POWER_USAGE{JOB})", PER_JOB)))
        .with_panel(_series("GPU utilisation per node and GPU", "percent",
                            (f"DCGM_FI_DEV_GPU_UTIL{JOB}", "{{hpc_job}} {{node}} GPU {{gpu}}")))
        .with_row(dashboard.Row("Host use of each job (cgroup v2, job-metrics collector)"))
        .with_panel(_series("CPU (cores busy)", "none",
                            (f"sum by (hpc_job) (rate(gpufleet_job_cpu_seconds_total{JOB}[5m]))", PER_JOB), width=8))
        .with_panel(_series("Memory", "bytes", (f"sum by (hpc_job) (gpufleet_job_memory_bytes{JOB})", PER_JOB),
                            (f"max by (hpc_job) (gpufleet_job_memory_peak_bytes{JOB})", "{{hpc_job}} peak (one node)"),
                            width=8))
        .with_panel(_series("Processes and threads", "none", (f"sum by (hpc_job) (gpufleet_job_tasks{JOB})", PER_JOB),
                            width=8))
    )
    if slurm:
        builder = slurm_row(builder)
        if elastic:
            builder = elastic_row(builder, elastic)
    return builder.build().to_json()


@lru_cache(maxsize=32)
def dashboards(pricing: NodePricing, gpus_per_node: int, job_view: bool = True,
               performance: bool = False, vgpu_slice: bool = False, slurm: bool = False,
               groups: tuple[GroupPricing, ...] = (), elastic: tuple[ElasticGroup, ...] = ()) -> dict[str, str]:
    """File name -> dashboard JSON, byte-stable for the same inputs. `job_view`: the jobs dashboard, for nodes that
    run `gpufleet-run` jobs and their collector (training nodes; an inference node's GPUs belong to Triton).
    `performance`: the overview's speed row, for nodes that run node.health.performance. `vgpu_slice`: a cluster of
    vGPU slices, whose panels of metrics a slice cannot read say so (`slice_aware`); other clusters' are unchanged.
    `slurm`: the jobs dashboard's Slurm row, for a Slurm cluster whose monitoring server scrapes the controller.
    `groups`: a cluster of several node groups (each group's price and GPUs; empty for one group). `elastic`: the
    elastic groups, whose row follows the Slurm row (their programs' metrics come from the controller)."""
    boards = {"gpufleet-overview.json": cluster_overview(pricing, gpus_per_node, performance, groups),
              "gpufleet-node-jobs.json": node_jobs(pricing, groups)}
    if job_view:
        boards["gpufleet-jobs.json"] = jobs(pricing, gpus_per_node, slurm, elastic)
    if vgpu_slice:
        boards = {name: slice_aware(json.loads(json.dumps(board, cls=JSONEncoder))) for name, board in boards.items()}
    return {name: json.dumps(board, cls=JSONEncoder, sort_keys=True, indent=2) + "\n" for name, board in boards.items()}


SHIPPED = Path(__file__).parent
SHIPPED_PRICING = NodePricing(usd_per_node_hour=0.0)  # set the constants to your price after importing
SHIPPED_GPUS_PER_NODE = 8


def shipped_dashboards() -> dict[str, str]:
    """The dashboards as shipped in the package (components/monitoring/*.json), priced at 0 for 8-GPU nodes."""
    return dashboards(SHIPPED_PRICING, SHIPPED_GPUS_PER_NODE)


if __name__ == "__main__":
    # .venv/bin/python -m gpufleet.monitoring.dashboards --write   # regenerates the shipped JSON files
    for file_name, text in shipped_dashboards().items():
        if "--write" in sys.argv:
            (SHIPPED / file_name).write_text(text)
        else:
            print(text)
