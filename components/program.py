"""The program `pulumi up` runs: read the spec from stack config, declare the cluster, export its outputs."""

from __future__ import annotations

import pulumi

from .cluster import build_cluster
from .component import exported_outputs
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
        check_cluster_input(raw)  # every stage's problems at once; the component refuses unset secrets itself
        cluster = build_cluster(COMPONENT_NAME, raw)
    except SpecError as err:
        raise pulumi.RunError(str(err)) from None
    for key, value in exported_outputs(cluster).items():
        pulumi.export(key, value)
