"""What every gpufleet cluster component publishes: typed `pulumi.Output` attributes, the same on every cloud.

Each cloud's component adds its own attributes (network, placement, fleet ids, how to connect). The stack
program exports exactly these attributes (`exported_outputs`), under the names README.md documents; Pulumi's
Analyzer reads the same annotations to write the package schema's outputs.
"""

# No `from __future__ import annotations` here: Pulumi's Analyzer reads these annotations as real types.
import typing
from typing import Any, Optional

import pulumi


class GpuClusterOutputs(pulumi.ComponentResource):
    """Outputs shared by every cloud's cluster component."""

    cloud: pulumi.Output[str]
    """"aws", "azure" or "gcp"."""
    region: pulumi.Output[str]
    """The cluster's region."""
    zone: pulumi.Output[Optional[str]]
    """The cluster's zone, where it has one."""
    instance_type: pulumi.Output[str]
    """The instance type chosen from the catalog."""
    nodes: pulumi.Output[int]
    """Number of GPU nodes."""
    gpu: pulumi.Output[str]
    """GPU model."""
    gpus_per_node: pulumi.Output[int]
    """GPUs per node."""
    gpus_total: pulumi.Output[int]
    """GPUs in the cluster."""
    fabric: pulumi.Output[str]
    """The RDMA fabric in use, or "tcp"."""
    market: pulumi.Output[str]
    """"on-demand", "spot" or "mixed"."""
    estimated_usd_per_hour: pulumi.Output[Optional[float]]
    """Estimated cluster price per hour at the chosen market (catalog prices)."""
    estimated_usd_per_month: pulumi.Output[Optional[float]]
    """Estimated cluster price per month at the chosen market."""
    cost: pulumi.Output[list[dict[str, Any]]]
    """The cost table: the cluster at each market, with savings against on-demand."""
    warnings: pulumi.Output[list[str]]
    """Things the user should know about this cluster."""
    list_nodes: pulumi.Output[str]
    """Shell command listing the nodes' private IPs."""
    hostfile: pulumi.Output[str]
    """Shell command writing an MPI hostfile."""
    connect: pulumi.Output[str]
    """Shell command opening a session on a node."""
    prometheus_scrape_config: pulumi.Output[str]
    """Prometheus scrape configuration (cloud service discovery) for the node exporters."""

    def publish(self, values: dict[str, Any]) -> None:
        """Sets every output attribute from `values` (plain values or Inputs) and registers them."""
        names = output_names(type(self))
        missing, unknown = set(names) - set(values), set(values) - set(names)
        if missing or unknown:
            raise AssertionError(f"outputs of {type(self).__name__}: missing {sorted(missing)}, unknown {sorted(unknown)}")
        for key in names:
            setattr(self, key, pulumi.Output.from_input(values[key]))
        self.register_outputs({key: getattr(self, key) for key in names})


def output_names(component: type) -> list[str]:
    """The names of the `pulumi.Output` attributes `component` declares, its base classes' first."""
    names: list[str] = []
    for cls in reversed(component.__mro__):
        for key, annotation in vars(cls).get("__annotations__", {}).items():
            if typing.get_origin(annotation) is pulumi.Output and key not in names:
                names.append(key)
    return names


def exported_outputs(component: GpuClusterOutputs) -> dict[str, pulumi.Output]:
    """The stack outputs of a cluster: every output attribute, by name."""
    return {key: getattr(component, key) for key in output_names(type(component))}
