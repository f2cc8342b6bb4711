"""Proof that each node is as fast as its type should be: the expected figures (with sources), the comparison
rules the node check and `gpufleet bench` share, and the multi-node all-reduce benchmark."""

from .expected import DEFAULT_TOLERANCE, Figure, NodeFigures, figures_for, load_expected

__all__ = ["DEFAULT_TOLERANCE", "Figure", "NodeFigures", "figures_for", "load_expected"]
