"""Turns the raw `gpufleet:cluster` object into a `ClusterSpec`, or one `SpecError` listing every problem."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails

from .errors import MISSING, Problem, SpecError
from .model import ClusterSpec
from .raw import raw_problems
from .rules import check_rules
from .shapes import mapping_expected, model_at


def parse_cluster_spec(raw: Any) -> ClusterSpec:
    """Validates structure, shape and types, then the cross-field rules. Catalog rules run later, in the pipeline
    (`gpufleet.pipeline`); `gpufleet.pipeline.check_cluster_input` reports both stages at once."""
    if not isinstance(raw, dict):
        raise SpecError([Problem("gpufleet:cluster", raw, "expected a mapping with at least `cloud`, `region`, "
                                 "`nodes` and `accelerator`")])
    structural = raw_problems(raw)
    if structural:
        raise SpecError(structural)
    try:
        spec = ClusterSpec.model_validate(raw)
    except ValidationError as err:
        raise SpecError([_problem_from(e) for e in err.errors()]) from None
    problems = check_rules(spec)
    if problems:
        raise SpecError(problems)
    return spec


def field_path(loc: tuple) -> str:
    """("access", "ssh_cidrs", 0) -> "access.ssh_cidrs[0]"."""
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif not str(part).startswith(("function-", "literal[")):
            path += f".{part}" if path else str(part)
    return path


def _problem_from(error: ErrorDetails) -> Problem:
    loc = tuple(error["loc"])
    kind = error["type"]
    value = error.get("input", MISSING)
    if kind == "extra_forbidden":
        parent = loc[:-1]
        return Problem(field_path(loc), value, f"unknown key; expected one of {_known_keys(parent)}")
    if kind == "missing":
        return Problem(field_path(loc), MISSING, "this field is required")
    if kind in ("model_type", "model_attributes_type"):
        return Problem(field_path(loc), value, mapping_expected(model_at(ClusterSpec, loc), value))
    if kind == "dict_type":
        return Problem(field_path(loc), value, "expected a mapping of names to text, e.g. {name: value}")
    if kind == "literal_error":
        return Problem(field_path(loc), value, f"expected one of {error['ctx']['expected']}")
    if kind in BOUND_ERRORS:
        return Problem(field_path(loc), value, _range_expected(loc, error))
    if kind == "string_pattern_mismatch":
        examples = _field_examples(loc)
        like = f" like {', '.join(repr(e) for e in examples)}" if examples else f" matching {error['ctx']['pattern']}"
        return Problem(field_path(loc), value, f"expected a value{like}")
    message = error["msg"]
    if message.startswith("Value error, "):
        message = message[len("Value error, "):]
    return Problem(field_path(loc), value, _lower_first(message))


BOUND_ERRORS = {"greater_than", "greater_than_equal", "less_than", "less_than_equal"}
_BOUND_WORDS = {"gt": "greater than", "ge": "at least", "lt": "less than", "le": "at most"}


def _range_expected(loc: tuple, error: ErrorDetails) -> str:
    """The field's whole range, not only the bound that was crossed: "expected a number greater than 0 and less
    than 1, e.g. 0.25" rather than pydantic's "input should be less than 1"."""
    field = _field(loc)
    limits = {name: getattr(rule, name) for rule in (field.metadata if field else []) for name in _BOUND_WORDS
              if hasattr(rule, name)}
    if not field or not limits:
        return _lower_first(error["msg"])
    whole = "int" in str(field.annotation)
    example = f", e.g. {field.examples[0]}" if field.examples else ""
    if limits.keys() == {"ge", "le"}:
        allowed = f"from {limits['ge']} to {limits['le']}"
    else:
        allowed = " and ".join(f"{_BOUND_WORDS[name]} {limit}" for name, limit in limits.items())
    return f"expected {'a whole number' if whole else 'a number'} {allowed}{example}"


def _known_keys(parent: tuple) -> str:
    return ", ".join(f"`{name}`" for name in model_at(ClusterSpec, parent).model_fields)


def _field(loc: tuple) -> FieldInfo | None:
    """The model field an error's location names (None for a list item or a mapping's key)."""
    return model_at(ClusterSpec, loc[:-1]).model_fields.get(loc[-1]) if isinstance(loc[-1], str) else None


def _field_examples(loc: tuple) -> list:
    field = _field(loc)
    return list(field.examples or []) if field else []


def _lower_first(text: str) -> str:
    """"Input should be ..." -> "input should be ..."; acronyms ("YAML read ...") stay."""
    return text if text[1:2].isupper() else text[:1].lower() + text[1:]
