"""AWS: GPU clusters with EFA on an Auto Scaling group (one file per concern)."""

from .cluster import AwsGpuCluster

__all__ = ["AwsGpuCluster"]
