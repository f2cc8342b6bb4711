"""The cluster spec: a typed, validated, cloud-neutral description of a GPU cluster."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import Problem, SpecError
from .model import Accelerator, Access, ClusterSpec, Image, Market, Network
from .node import NodeSoftware

if TYPE_CHECKING:
    from .parse import parse_cluster_spec

__all__ = ["Access", "Accelerator", "ClusterSpec", "Image", "Market", "Network", "NodeSoftware", "Problem",
           "SpecError", "parse_cluster_spec"]


def __getattr__(name: str) -> Any:
    """`parse_cluster_spec` on first use: the parser checks node groups (`gpufleet.groups`), whose modules import
    this package's model, so loading the parser with the package made `import gpufleet.groups.resolve` fail when it
    came first."""
    if name == "parse_cluster_spec":
        from .parse import parse_cluster_spec
        return parse_cluster_spec
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
