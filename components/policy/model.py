"""The shapes the rules work on: one declared resource, one finding, one rule."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

MANDATORY = "mandatory"
ADVISORY = "advisory"


@dataclass(frozen=True)
class Resource:
    """A resource as a policy sees it: type token, camelCase properties, URN and name (from a plan or CrossGuard)."""

    type: str
    props: dict[str, Any]
    urn: str = ""
    name: str = ""

    @property
    def stack(self) -> str:
        """`urn:pulumi:<stack>::<project>::...` -> stack ("" when the URN has another shape)."""
        parts = self.urn.split(":", 3)
        return parts[2] if len(parts) > 3 and parts[0] == "urn" else ""

    def ids(self) -> set[str]:
        """Values other resources use to refer to this one: its id, the offline plan's `<name>-id`, its name."""
        found = {f"{self.name}-id", self.name} if self.name else set()
        for key in ("id", "name", "arn", "selfLink"):
            if isinstance(self.props.get(key), str):
                found.add(self.props[key])
        return found


@dataclass(frozen=True)
class Finding:
    """One broken rule on one resource: why it is wrong and how to fix it."""

    why: str
    fix: str


@dataclass(frozen=True)
class Violation:
    policy: str
    level: str
    urn: str
    why: str
    fix: str

    def line(self) -> str:
        return f"{self.level} {self.policy} {self.urn}: {self.why}; fix: {self.fix}"


ResourceCheck = Callable[[Resource, dict], Iterable[Finding]]
StackCheck = Callable[[list[Resource], dict], Iterable[tuple[Resource, Finding]]]


@dataclass(frozen=True)
class Rule:
    """A resource rule (`check(resource, config)`) or a stack rule (`stack_check(resources, config)`)."""

    name: str
    description: str
    level: str
    check: ResourceCheck | None = None
    stack_check: StackCheck | None = None
    config: dict[str, Any] = field(default_factory=dict)  # defaults; the CrossGuard pack exposes them as config
