"""Builds the cluster component for a validated spec's cloud. Each cloud package is imported only when used."""

from __future__ import annotations

from importlib import import_module

import pulumi

from .monitoring.secrets import read_secrets
from .spec import ClusterSpec

CLOUD_COMPONENTS = {
    "aws": ("gpufleet.aws", "AwsGpuCluster"),
    "azure": ("gpufleet.azure", "AzureGpuCluster"),
    "gcp": ("gpufleet.gcp", "GcpGpuCluster"),
}


def build_cluster(name: str, spec: ClusterSpec, opts: pulumi.ResourceOptions | None = None) -> pulumi.ComponentResource:
    """The `gpufleet:index:<Cloud>GpuCluster` component for `spec.cloud`; its `outputs` dict is what a stack exports."""
    read_secrets(spec)  # a `monitoring.alerts.*_secret` whose config key is unset is refused before anything exists
    module_name, class_name = CLOUD_COMPONENTS[spec.cloud]
    component_class = getattr(import_module(module_name), class_name)
    return component_class(name, spec, opts)
