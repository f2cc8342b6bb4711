"""Tags every Azure resource with gpufleet's provenance tags plus the user's.

Azure tag names may not contain `<>%&\\?/` (Azure Resource Manager "Tag resources" rules); `rules.py` refuses user tags
that break this instead of dropping them.
"""

from __future__ import annotations

from collections.abc import Callable

from ..tags import provenance_tags

COMPONENT = "AzureGpuCluster"

Tagger = Callable[[str], dict[str, str]]


def tagger(stack: str, user_tags: dict[str, str]) -> Tagger:
    """`tag(role)` -> the tags for the child `f"{name}-{role}"`."""

    def tag(role: str) -> dict[str, str]:
        return provenance_tags(stack, COMPONENT, role, user_tags)

    return tag
