"""A short hash per Pulumi project, stack and component, for physical names and IAM conditions.

Pulumi's own auto-naming keeps most physical names unique, but some names are chosen by gpufleet (GCP service
account and role ids, instance name prefixes) and some IAM conditions match resources by a tag or a name prefix.
Those include this hash, so that two projects, or stacks whose names extend each other (`gcp-dev` and
`gcp-dev-b`), never collide or match each other's nodes. It is derived from names only, so it never changes
between runs: a node-count change still touches only the fleet.
"""

from __future__ import annotations

import hashlib

import pulumi

HASH_LENGTH = 6


def cluster_hash(component_name: str, project: str | None = None, stack: str | None = None) -> str:
    """6 hex digits of sha256("<project>/<stack>/<component>") for the running program unless given."""
    project = pulumi.get_project() if project is None else project
    stack = pulumi.get_stack() if stack is None else stack
    return hashlib.sha256(f"{project}/{stack}/{component_name}".encode()).hexdigest()[:HASH_LENGTH]
