"""The base of every spec model: unknown keys are refused, values are never coerced silently."""

from __future__ import annotations

from ipaddress import IPv4Network
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict


class StrictModel(BaseModel):
    """Rejects typos in stack files (`extra="forbid"`), non-finite numbers, and freezes the parsed spec."""

    # Field docstrings are the spec reference's text (gpufleet.spec.reference reads them when it is generated);
    # `use_attribute_docstrings` would re-read and parse every model's source on each import, a tenth of a plan.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=False, use_attribute_docstrings=False,
                              allow_inf_nan=False)


def _not_a_bool(value: Any) -> Any:
    """YAML's `true` is not a count: pydantic would read `nodes: true` as 1."""
    if isinstance(value, bool):
        raise ValueError("expected a number, not true/false")
    return value


def _digits_as_text(value: Any) -> Any:
    """`branch: 580` unquoted is unambiguous: read it as "580"."""
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


def _version_text(value: Any) -> Any:
    """`cuda: 12.8` unquoted is a float, and 12.10 would silently become 12.1: ask for quotes instead."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        raise ValueError(f"YAML read this as a number; quote versions: '{value}'")
    return value


def _cidr_text(value: Any) -> Any:
    """A CIDR is written as text: pydantic would read `cidr: true` or `cidr: 167772160` as a single address."""
    if isinstance(value, (bool, int, float)):
        raise ValueError("expected a CIDR written as text, e.g. '10.0.0.0/16'")
    return value


Count = Annotated[int, BeforeValidator(_not_a_bool)]
"""An integer field: numbers (or digits as text), never true/false."""
Amount = Annotated[float, BeforeValidator(_not_a_bool)]
"""A finite number, never true/false."""
DigitsText = Annotated[str, BeforeValidator(_digits_as_text)]
"""Text of digits, where an unquoted YAML number means the same."""
VersionText = Annotated[str, BeforeValidator(_version_text)]
"""A dotted version, which must be quoted in YAML."""
Cidr = Annotated[IPv4Network, BeforeValidator(_cidr_text)]
"""An IPv4 network written as text ("10.0.0.0/16"), host bits clear."""
