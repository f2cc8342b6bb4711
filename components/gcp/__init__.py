"""GCP: A2/A3/A4/G2 GPU clusters with GPUDirect networking on an instance template and a managed instance group."""

from .cluster import GcpGpuCluster

__all__ = ["GcpGpuCluster"]
