"""Grafana dashboards as code, built with Grafana's own grafana-foundation-sdk (pinned in requirements.txt).

Two dashboards: the cluster overview (GPU health, utilisation, memory, power, temperature, XID / ECC / row remaps,
NVLink, InfiniBand/EFA and NIC throughput, and the cost panels) and a per-node view of what jobs get (host CPU and
memory beside each GPU). Every query uses only metrics from the node's dcgm-exporter counters file
(cloud_init/files/etc/gpufleet/dcgm-counters.csv) or node_exporter; tests load the JSON back through the SDK's model
and check that. Cost comes from the catalog: `$usd_per_node_hour` times the nodes answering, and the share of it
spent on GPUs below 5% utilisation for 30 minutes (the GpuIdle alert's question, in money). Prices are per node,
never per cluster, so a change of node count leaves the dashboards (and the server's user data) as they are.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from grafana_foundation_sdk.builders import dashboard, prometheus, stat, timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.dashboard import DataSourceRef

DATASOURCE_UID = "gpufleet-prometheus"
DATASOURCE = DataSourceRef(type_val="prometheus", uid=DATASOURCE_UID)
GPU = '{node="$node"}'
IDLE_GPU = "(avg_over_time(DCGM_FI_DEV_GPU_UTIL[30m]) < 5)"
MEMORY_PERCENT = ("100 * DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE + DCGM_FI_DEV_FB_RESERVED)")
PER_GPU = "{{node}} GPU {{gpu}}"
NODES_UP = 'sum(up{job="gpufleet-node"})'
# Mixed markets: the first `$base_nodes` nodes are on demand, the rest spot.
CLUSTER_COST = (f"clamp_max({NODES_UP}, $base_nodes) * $usd_per_base_node_hour"
                f" + clamp_min({NODES_UP} - $base_nodes, 0) * $usd_per_node_hour")


@dataclass(frozen=True)
class NodePricing:
    """USD per node-hour from the catalog: `base_nodes` (mixed markets' on-demand base) at `usd_per_base_node_hour`,
    every other node at `usd_per_node_hour`."""

    usd_per_node_hour: float
    usd_per_base_node_hour: float = 0.0
    base_nodes: int = 0


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


def cluster_overview(pricing: NodePricing, gpus_per_node: int) -> dict:
    """The cluster at a glance; the constants come from the stack's catalog selection."""
    builder = (
        dashboard.Dashboard("gpufleet: GPU cluster overview").uid("gpufleet-overview").tags(["gpufleet", "gpu"])
        .readonly().time("now-6h", "now").refresh("1m")
        .with_variable(_constant("usd_per_node_hour", pricing.usd_per_node_hour, "USD per node-hour (catalog)"))
        .with_variable(_constant("usd_per_base_node_hour", pricing.usd_per_base_node_hour,
                                 "USD per on-demand base node-hour (catalog)"))
        .with_variable(_constant("base_nodes", pricing.base_nodes, "On-demand base nodes"))
        .with_variable(_constant("gpus_per_node", gpus_per_node, "GPUs per node"))
        .with_row(dashboard.Row("Health"))
        .with_panel(_stat("GPUs reporting", "none", "count(DCGM_FI_DEV_GPU_TEMP)"))
        .with_panel(_stat("GPUs expected", "none", 'sum(up{job="gpufleet-node"}) * $gpus_per_node'))
        .with_panel(_stat("Exporters down", "none", 'count(up{job=~"gpufleet-.*"} == 0) or vector(0)'))
        .with_panel(_stat("Nodes failing the boot check", "none", "count(gpufleet_node_healthy == 0) or vector(0)"))
        .with_panel(_stat("Cluster cost (USD/h, nodes up)", "currencyUSD", CLUSTER_COST))
        .with_panel(_stat("Idle GPU spend (USD/h)", "currencyUSD",
                          f"(count({IDLE_GPU}) or vector(0)) * $usd_per_node_hour / $gpus_per_node"))
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
    return builder.build().to_json()


def node_jobs(pricing: NodePricing) -> dict:
    """One node: what its jobs use of each GPU and of the host, to find the job that starves or idles a node."""
    node = (dashboard.QueryVariable("node").label("Node").datasource(DATASOURCE)
            .query('label_values(up{job="gpufleet-node"}, node)'))
    builder = (
        dashboard.Dashboard("gpufleet: node and job view").uid("gpufleet-node-jobs").tags(["gpufleet", "gpu"])
        .readonly().time("now-3h", "now").refresh("1m")
        .with_variable(node)
        .with_variable(_constant("usd_per_node_hour", pricing.usd_per_node_hour, "USD per node-hour (catalog)"))
        .with_panel(_series("GPU utilisation", "percent", (f"DCGM_FI_DEV_GPU_UTIL{GPU}", "GPU {{gpu}}")))
        .with_panel(_series("SM activity", "percentunit", (f"DCGM_FI_PROF_SM_ACTIVE{GPU}", "GPU {{gpu}}")))
        .with_panel(_series("GPU memory used", "decmbytes", (f"DCGM_FI_DEV_FB_USED{GPU}", "GPU {{gpu}}")))
        .with_panel(_series("PCIe throughput", "Bps", (f"rate(DCGM_FI_PROF_PCIE_TX_BYTES{GPU}[5m])", "GPU {{gpu}} tx"),
                            (f"rate(DCGM_FI_PROF_PCIE_RX_BYTES{GPU}[5m])", "GPU {{gpu}} rx")))
        .with_panel(_series("Host CPU busy", "percentunit",
                            ('1 - avg(rate(node_cpu_seconds_total{node="$node",mode="idle"}[5m]))', "cpu")))
        .with_panel(_series("Host memory available", "bytes", (f"node_memory_MemAvailable_bytes{GPU}", "available")))
        .with_panel(_stat("Node cost (USD/h, spot or on-demand rate)", "currencyUSD",
                          'up{job="gpufleet-node",node="$node"} * $usd_per_node_hour'))
    )
    return builder.build().to_json()


@lru_cache(maxsize=32)
def dashboards(pricing: NodePricing, gpus_per_node: int) -> dict[str, str]:
    """File name -> dashboard JSON, byte-stable for the same inputs."""
    boards = {"gpufleet-overview.json": cluster_overview(pricing, gpus_per_node),
              "gpufleet-node-jobs.json": node_jobs(pricing)}
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
