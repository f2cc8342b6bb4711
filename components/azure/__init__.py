"""Azure: GPU clusters with InfiniBand on one Uniform scale set (one file per concern)."""

from .cluster import AzureGpuCluster

__all__ = ["AzureGpuCluster"]
