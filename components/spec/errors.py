"""Spec errors: every bad input becomes one `Problem` naming the field path, the value and what is accepted.

All problems found in one pass are raised together as a `SpecError`, so a user fixes a stack file in one round.
`__main__.py` turns a `SpecError` into `pulumi.RunError` (message only, no traceback); the CLI exits with code 2.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Problem:
    """One invalid input: where it is, what was given and what would be accepted."""

    path: str
    value: Any
    expected: str

    def __str__(self) -> str:
        return f"`{self.path}`: got {format_value(self.value)}; {self.expected}"


class SpecError(ValueError):
    """Raised before any resource is declared; carries every problem found."""

    def __init__(self, problems: Iterable[Problem], root: str = "gpufleet:cluster"):
        self.problems = list(problems)
        self.root = root
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"invalid `{root}` ({len(self.problems)} problem(s)):\n{lines}")


def format_value(value: Any) -> str:
    """Renders a value the way the user wrote it in YAML, short enough for one line."""
    if value is MISSING:
        return "nothing"
    if isinstance(value, bool):
        return "true" if value else "false"
    try:
        text = repr(value) if isinstance(value, str) else str(value)
    except ValueError:  # an integer over Python's 4,300-digit conversion limit
        text = "(a very large number)"
    return text if len(text) <= 80 else text[:77] + "..."


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


def raise_if(problems: list[Problem]) -> None:
    """Raises one `SpecError` with all `problems`, if there are any."""
    if problems:
        raise SpecError(problems)
