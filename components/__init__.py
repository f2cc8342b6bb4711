"""gpufleet: GPU clusters on AWS, Azure and GCP from one short, cloud-neutral Pulumi spec.

The cloud components and the spec are imported on first use (`from gpufleet import AwsGpuCluster`), so importing the
spec or the catalog does not load Pulumi or the three provider SDKs (`gpufleet select` stays fast).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .args import GpuClusterArgs
    from .aws import AwsGpuCluster
    from .azure import AzureGpuCluster
    from .gcp import GcpGpuCluster
    from .spec import ClusterSpec, SpecError, parse_cluster_spec

# The spec too: importing `gpufleet.plan.entry` (the `gpufleet` command) must not build the spec's models before the
# command has turned the garbage collector off.
_LAZY = {"GpuClusterArgs": ".args", "AwsGpuCluster": ".aws", "AzureGpuCluster": ".azure", "GcpGpuCluster": ".gcp",
         "ClusterSpec": ".spec", "SpecError": ".spec", "parse_cluster_spec": ".spec"}

__all__ = ["AwsGpuCluster", "AzureGpuCluster", "ClusterSpec", "GcpGpuCluster", "GpuClusterArgs", "SpecError",
           "parse_cluster_spec"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
