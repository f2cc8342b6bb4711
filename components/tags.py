"""Provenance tags for every resource, from one helper (R11): who made it, for which stack, in which role."""

from __future__ import annotations

from collections.abc import Mapping


def provenance_tags(stack: str, component: str, role: str, user_tags: Mapping[str, str]) -> dict[str, str]:
    """User tags plus gpufleet's own, which win; sorted so resource inputs are byte-identical between runs."""
    tags = {**user_tags, "gpufleet-stack": stack, "gpufleet-component": component, "gpufleet-role": role}
    return {key: tags[key] for key in sorted(tags)}
