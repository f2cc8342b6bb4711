"""Tags every AWS resource with gpufleet's provenance tags plus the user's, and a Name tag."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pulumi

from ..tags import provenance_tags

COMPONENT = "AwsGpuCluster"
CLUSTER_TAG = "gpufleet-cluster"
"""Carries `naming.cluster_hash`: what the nodes' IAM conditions match, unique per project, stack and component."""

Tagger = Callable[[str], dict[str, str]]


def tagger(stack: str, name: str, user_tags: Mapping[str, pulumi.Input[str]], cluster_id: str) -> Tagger:
    """`tag(role)` -> the tags for the child `f"{name}-{role}"`. User tag values may be Outputs."""

    def tag(role: str) -> dict[str, str]:
        values: dict = {**user_tags, CLUSTER_TAG: cluster_id}  # user values may be Outputs; Pulumi resolves them
        tags = provenance_tags(stack, COMPONENT, role, values)
        return {**tags, "Name": f"{stack}-{name}-{role}"}

    return tag
