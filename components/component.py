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
    shared_filesystem: pulumi.Output[Optional[dict[str, Any]]]
    """The shared filesystem asked for (`storage.shared`): kind, service, mount path, capacity and its cost row."""
    grafana_dashboards: pulumi.Output[dict[str, str]]
    """The Grafana dashboards (file name -> JSON) for this cluster's GPUs and prices."""
    prometheus_alert_rules: pulumi.Output[str]
    """The Prometheus alert rules (YAML) for the node exporters."""
    grafana_port_forward: pulumi.Output[Optional[str]]
    """Shell command forwarding the monitoring server's Grafana to localhost:3000 (with `monitoring.server`)."""
    slurm_controller_address: pulumi.Output[Optional[str]]
    """The Slurm controller's private address (with `scheduler.kind: slurm`)."""
    slurm_shell: pulumi.Output[Optional[str]]
    """Shell command opening a session on the Slurm controller, where `sinfo`, `squeue` and `sbatch` work (with
    `scheduler.kind: slurm`)."""
    inference_endpoint: pulumi.Output[Optional[str]]
    """Triton's HTTP endpoint behind the load balancer (with `inference`)."""
    inference_grpc_endpoint: pulumi.Output[Optional[str]]
    """Triton's gRPC endpoint (with `inference`)."""
    inference_health_command: pulumi.Output[Optional[str]]
    """Shell command checking the endpoint's readiness (with `inference`)."""
    inference_perf_command: pulumi.Output[Optional[str]]
    """perf_analyzer command measuring the endpoint's latency (with `inference`)."""
    inference_cost: pulumi.Output[Optional[dict[str, Any]]]
    """The serving fleet's cost at its minimum and maximum size, and per million requests (with `inference`)."""
    inference_warnings: pulumi.Output[Optional[list[str]]]
    """Things to know about the serving setup (with `inference`)."""
    job_cost: pulumi.Output[Optional[dict[str, Any]]]
    """Hours and cost of the spec's `job` (an MLPerf workload) on this cluster, with the MLPerf row used (with `job`)."""
    node_groups: pulumi.Output[Optional[dict[str, Any]]]
    """Each node group by name (with `node_groups`): its instance type, GPUs, nodes, market, fabric, placement, Slurm
    partition, cost (at each market) and its fleet (name, template, how to list and reach its nodes)."""

    def publish(self, values: dict[str, Any]) -> None:
        """Sets every output attribute from `values` (plain values or Inputs) and registers them.

        An output typed `Optional[...]` may be left out of `values` when its feature is off (inference, the
        monitoring server, shared storage): it is then None and not exported, so a stack without the feature
        exports the same outputs as before."""
        names = output_names(type(self))
        optional = set(optional_output_names(type(self)))
        missing, unknown = set(names) - set(values) - optional, set(values) - set(names)
        if missing or unknown:
            raise AssertionError(f"outputs of {type(self).__name__}: missing {sorted(missing)}, unknown {sorted(unknown)}")
        self._published = [key for key in names if key in values]
        for key in names:
            setattr(self, key, _output_of(values.get(key)))
        self.register_outputs({key: getattr(self, key) for key in self._published})


def _output_of(value: Any) -> pulumi.Output:
    """`value` as an Output. A plain list or dict (the cost table, dashboards, warnings) becomes one Output: deep
    wrapping, as `Output.from_input` does, makes an Output and a task per element, about a sixth of a plan's time."""
    if isinstance(value, (list, tuple, dict)) and _is_plain(value):
        return pulumi.Output.from_input(None).apply(lambda _: value)
    return pulumi.Output.from_input(value)


def _is_plain(value: Any) -> bool:
    if value is None or isinstance(value, (str, int, float)):
        return True
    if isinstance(value, (list, tuple)):
        return all(_is_plain(item) for item in value)
    if isinstance(value, dict):
        return all(isinstance(key, str) and _is_plain(item) for key, item in value.items())
    return False


def output_names(component: type) -> list[str]:
    """The names of the `pulumi.Output` attributes `component` declares, its base classes' first."""
    return list(_output_annotations(component))


def optional_output_names(component: type) -> list[str]:
    """The output attributes typed `pulumi.Output[Optional[...]]`."""
    return [key for key, annotation in _output_annotations(component).items()
            if type(None) in typing.get_args(typing.get_args(annotation)[0])]


def _output_annotations(component: type) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for cls in reversed(component.__mro__):
        for key, annotation in vars(cls).get("__annotations__", {}).items():
            if typing.get_origin(annotation) is pulumi.Output and key not in found:
                found[key] = annotation
    return found


def exported_outputs(component: GpuClusterOutputs) -> dict[str, pulumi.Output]:
    """The stack outputs of a cluster: every output attribute it published, by name."""
    published = getattr(component, "_published", None) or output_names(type(component))
    return {key: getattr(component, key) for key in published}
