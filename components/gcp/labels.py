"""GCP labels and descriptions: gpufleet's provenance on every resource, from `components.tags` (R11).

GCP labels are lowercase: keys start with a lowercase letter, keys and values use only lowercase letters (of any
script: "international characters are allowed"), digits, `_` and `-`, at most 63 characters (Resource Manager,
"Requirements for labels"). User tags are lowercased (GCP has no uppercase labels); a tag that still breaks the rules, or two tags
that become the same key, is an input error, never dropped. gpufleet's own values (stack, component, role) are
normalised. Only instance templates (and the instances and disks they create) take labels; the other resources
carry the same provenance in their `description`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping

from ..spec.errors import Problem
from ..tags import provenance_tags

COMPONENT = "GcpGpuCluster"
LABEL_MAX_CHARS = 63
INVALID_CHARS = re.compile(r"[^a-z0-9_-]+")
EXPECTED = ("GCP labels take lowercase letters (any script), digits, `_` and `-`, at most 63 characters, and keys "
            "start with a letter; rename the tag")

Labeler = Callable[[str], dict[str, str]]
Describer = Callable[[str], str]


def normalise_value(text: str) -> str:
    """A label value from free text: lowercase, other characters become `-`, cut to 63."""
    return INVALID_CHARS.sub("-", text.lower()).strip("-")[:63]


def user_labels(tags: Mapping[str, str]) -> dict[str, str]:
    """The user's tags as labels: lowercased keys and values (check `label_problems` first)."""
    return {key.lower(): value.lower() for key, value in tags.items()}


def is_label_text(text: str, key: bool) -> bool:
    """GCP's label rules for a (lowercased) key or value."""
    if len(text) > LABEL_MAX_CHARS or (key and not (text[:1].isalpha() and text[:1].islower())):
        return False
    return all(c in "_-" or c.isdigit() or (c.isalpha() and not c.isupper()) for c in text)


def label_problems(tags: Mapping[str, str]) -> list[Problem]:
    """Tags that cannot be GCP labels, even lowercased, and tags that collide once lowercased."""
    problems: list[Problem] = []
    seen: dict[str, str] = {}
    for key, value in tags.items():
        lower_key, lower_value = key.lower(), value.lower()
        if not is_label_text(lower_key, key=True):
            problems.append(Problem(f"tags.{key}", key, f"not a valid GCP label key; {EXPECTED}"))
        elif not is_label_text(lower_value, key=False):
            problems.append(Problem(f"tags.{key}", value, f"not a valid GCP label value; {EXPECTED}"))
        elif lower_key in seen:
            problems.append(Problem(f"tags.{key}", key, f"becomes the same GCP label as `tags.{seen[lower_key]}` "
                                    "once lowercased; keep one of them"))
        seen.setdefault(lower_key, key)
    return problems


def labeler(stack: str, user_tags: Mapping[str, str]) -> Labeler:
    """`label(role)` -> the labels for the child in that role."""
    users = user_labels(user_tags)

    def label(role: str) -> dict[str, str]:
        tags = provenance_tags(stack, COMPONENT, role, users)
        return {key: normalise_value(value) if key.startswith("gpufleet-") else value for key, value in tags.items()}

    return label


def describer(stack: str) -> Describer:
    """`describe(role)` -> the provenance line for resources without labels."""

    def describe(role: str) -> str:
        return f"gpufleet: stack={stack} component={COMPONENT} role={role}"

    return describe


def short_name(text: str, max_length: int, allowed: str = "a-z0-9-", sep: str = "-") -> str:
    """`text` as a GCP name: lowercase, starts with a letter, other characters become `sep`; when it must be cut,
    a hash of the whole keeps it unique (deterministic: no random parts)."""
    clean = re.sub(f"[^{allowed}]+", sep, text.lower()).strip(sep)
    clean = clean if clean[:1].isalpha() else f"g{sep}{clean}"
    if len(clean) <= max_length:
        return clean
    digest = hashlib.sha256(text.encode()).hexdigest()[:6]
    return f"{clean[:max_length - 7].rstrip(sep)}{sep}{digest}"
