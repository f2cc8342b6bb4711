"""Builds the cluster component for a stack's `gpufleet:cluster` mapping. Each cloud is imported only when used."""

from __future__ import annotations

from importlib import import_module
from typing import Any

import pulumi

from .component import GpuClusterOutputs
from .request import ClusterRefused
from .spec import SpecError, parse_cluster_spec

CLOUD_COMPONENTS = {
    "aws": ("gpufleet.aws", "AwsGpuCluster"),
    "azure": ("gpufleet.azure", "AzureGpuCluster"),
    "gcp": ("gpufleet.gcp", "GcpGpuCluster"),
}


def build_cluster(name: str, raw: Any, opts: pulumi.ResourceOptions | None = None) -> GpuClusterOutputs:
    """The `gpufleet:index:<Cloud>GpuCluster` component for `raw["cloud"]`, given the rest as its args."""
    cloud = raw.get("cloud") if isinstance(raw, dict) else None
    if cloud not in CLOUD_COMPONENTS:
        try:
            parse_cluster_spec(raw)  # names `cloud` (and every other problem) the way a stack file user expects
        except SpecError as err:
            raise ClusterRefused(err.problems) from None
        raise AssertionError(f"unreachable: {cloud!r} passed the spec's cloud check")  # pragma: no cover
    module_name, class_name = CLOUD_COMPONENTS[cloud]
    component_class = getattr(import_module(module_name), class_name)
    return component_class(name, {key: value for key, value in raw.items() if key != "cloud"}, opts)
