"""The program `pulumi up` runs: read the spec from stack config, declare the cluster, export its outputs."""

from __future__ import annotations

import pulumi

from .cluster import build_cluster
from .pipeline import check_cluster_input
from .spec import SpecError

CONFIG_NAMESPACE = "gpufleet"
CONFIG_KEY = "cluster"
COMPONENT_NAME = "gpufleet"


def declare_stack() -> None:
    """Raises `pulumi.RunError` (message only, no traceback) when the spec is invalid; nothing is declared then."""
    raw = pulumi.Config(CONFIG_NAMESPACE).get_object(CONFIG_KEY)
    if raw is None:
        raise pulumi.RunError(f"`{CONFIG_NAMESPACE}:{CONFIG_KEY}` is not set; see stacks/ for examples")
    try:
        spec = check_cluster_input(raw)  # every stage's problems at once
        cluster = build_cluster(COMPONENT_NAME, spec)
    except SpecError as err:
        raise pulumi.RunError(str(err)) from None
    for key, value in cluster.outputs.items():  # type: ignore[attr-defined]  # every cloud component sets it
        pulumi.export(key, value)
