"""Tags every AWS resource with gpufleet's provenance tags plus the user's, and a Name tag."""

from __future__ import annotations

from collections.abc import Callable

from ..tags import provenance_tags

COMPONENT = "AwsGpuCluster"

Tagger = Callable[[str], dict[str, str]]


def tagger(stack: str, name: str, user_tags: dict[str, str]) -> Tagger:
    """`tag(role)` -> the tags for the child `f"{name}-{role}"`."""

    def tag(role: str) -> dict[str, str]:
        tags = provenance_tags(stack, COMPONENT, role, user_tags)
        return {**tags, "Name": f"{stack}-{name}-{role}"}

    return tag
