"""A stack with `node_groups` in its inventory: one Ansible group per node group beside `gpu_nodes`, and host
variables that are the host's own group's.

Each cloud finds a host's group from what the host's API record carries: the `gpufleet-node-group` tag (AWS) or
label (GCP) that every named group's nodes carry, and on Azure the scale set (azure_rm gives a scale set's VM only
the set's id and name, and its own tags, which gpufleet does not rely on carrying the set's). The values a group
has in the spec (its fabric) are looked up by that key in a mapping written into the expression, so the plugin
computes them per host without a call of its own.
"""

from __future__ import annotations

import json

GROUP_PREFIX = "node_group_"


def ansible_group(group: str) -> str:
    """`node_group_<group>` with hyphens as underscores: Ansible warns about (or rewrites) a group name that is not
    letters, digits and underscores, or that starts with a digit (ansible-core's INVALID_VARIABLE_NAMES). gpufleet's
    group names are lowercase letters, digits and hyphens (spec GROUP_NAME_PATTERN), so no two give the same name."""
    return GROUP_PREFIX + group.replace("-", "_")


def looked_up(mapping: dict[str, str], key: str, default: str) -> str:
    """A Jinja expression: `mapping[key]`, or `default` for a key it lacks (a JSON object reads as a Jinja dict)."""
    return f"{json.dumps(dict(sorted(mapping.items())))}.get({key}, {json.dumps(default)})"
