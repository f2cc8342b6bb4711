"""The cluster spec: a typed, validated, cloud-neutral description of a GPU cluster."""

from .errors import Problem, SpecError
from .model import Accelerator, Access, ClusterSpec, Image, Market, Network
from .node import NodeSoftware
from .parse import parse_cluster_spec

__all__ = ["Access", "Accelerator", "ClusterSpec", "Image", "Market", "Network", "NodeSoftware", "Problem",
           "SpecError", "parse_cluster_spec"]
