"""What the dashboards take from the rest of gpufleet, in a module that does not load grafana-foundation-sdk: a plan
builds its dashboards from the content cache (`gpufleet.monitoring.dashboard_cache`) without importing the SDK."""

from __future__ import annotations

from dataclasses import dataclass

DATASOURCE_UID = "gpufleet-prometheus"


@dataclass(frozen=True)
class NodePricing:
    """USD per node-hour from the catalog: `base_nodes` (mixed markets' on-demand base) at `usd_per_base_node_hour`,
    every other node at `usd_per_node_hour`."""

    usd_per_node_hour: float
    usd_per_base_node_hour: float = 0.0
    base_nodes: int = 0


@dataclass(frozen=True)
class GroupPricing:
    """One node group's catalog price per node and its GPUs per node, for a cluster of several groups, whose
    dashboards price each group's nodes at its own rate (by the `node_group` label the scrape jobs set)."""

    group: str
    pricing: NodePricing
    gpus_per_node: int


@dataclass(frozen=True)
class ElasticGroup:
    """One elastic node group, for the jobs dashboard's elastic row: its GPUs and price per node (what a node the
    power programs keep up costs) and its size range."""

    group: str
    gpus_per_node: int
    usd_per_node_hour: float
    min_nodes: int
    max_nodes: int
