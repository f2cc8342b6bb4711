"""Pydantic's validation errors said in the stack file's terms: the field path, the value, what is accepted.

Used for the cluster spec and for each node group's resolved spec (`gpufleet.groups.resolve`), whose locations are
ClusterSpec paths too.
"""

from __future__ import annotations

from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails

from .errors import MISSING, Problem
from .model import INTERNAL_FIELDS, ClusterSpec
from .shapes import mapping_expected, model_at, nested_model


def field_path(loc: tuple) -> str:
    """("access", "ssh_cidrs", 0) -> "access.ssh_cidrs[0]"."""
    path = ""
    loc = tuple("nodes" if part == "nodes_range" else part for part in loc)  # written as `nodes: {min, max}`
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif not str(part).startswith(("function-", "literal[")):
            path += f".{part}" if path else str(part)
    return path


def problem_from(error: ErrorDetails) -> Problem:
    loc = tuple(error["loc"])
    kind = error["type"]
    value = error.get("input", MISSING)
    if loc and loc[-1] == "[key]":  # a mapping's key: the path names the entry, the value is the key itself
        expected = KEY_EXPECTATIONS.get(str(loc[0]), "expected a key matching {pattern}")
        return Problem(field_path(loc[:-1]), loc[-2], expected.format(**error.get("ctx", {"pattern": ""})))
    if kind == "extra_forbidden":
        parent = loc[:-1]
        return Problem(field_path(loc), value, f"unknown key; expected one of {_known_keys(parent)}")
    if kind == "missing":
        return Problem(field_path(loc), MISSING, "this field is required")
    if kind in ("model_type", "model_attributes_type"):
        return Problem(field_path(loc), value, mapping_expected(model_at(ClusterSpec, loc), value))
    if kind == "dict_type":
        entry = _mapped_model(loc)
        if entry is not None:  # `node_groups`: names to sections
            return Problem(field_path(loc), value, f"expected a mapping of names to sections, each "
                           f"{mapping_expected(entry, None)[len('expected '):].replace(', e.g. ', ', e.g. {train: ', 1)}}}")
        return Problem(field_path(loc), value, "expected a mapping of names to text, e.g. {name: value}")
    if kind in ("too_short", "too_long") and isinstance(value, (dict, list)):
        bound = error.get("ctx", {})
        count = bound.get("min_length") if kind == "too_short" else bound.get("max_length")
        what = ("entry" if count == 1 else "entries") if isinstance(value, dict) else ("item" if count == 1 else "items")
        limit = "at least" if kind == "too_short" else "at most"
        return Problem(field_path(loc), value, f"expected {limit} {count} {what}")
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


KEY_EXPECTATIONS = {
    "node_groups": "expected a group name of lower-case letters, digits and inner hyphens, starting with a letter, at "
                   "most 15 characters (it names the group's cloud resources and its Slurm partition), e.g. 'train'",
}
"""What a mapping's keys must look like, by the mapping's top-level field."""
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
    return ", ".join(f"`{name}`" for name in model_at(ClusterSpec, parent).model_fields if name not in INTERNAL_FIELDS)


def _mapped_model(loc: tuple) -> type | None:
    """The model of a mapping's values, where the field at `loc` maps names to sections (`node_groups`)."""
    field = _field(loc)
    if field is None or "dict[" not in str(field.annotation):
        return None
    return nested_model(field.annotation)


def _field(loc: tuple) -> FieldInfo | None:
    """The model field an error's location names (None for a list item or a mapping's key)."""
    return model_at(ClusterSpec, loc[:-1]).model_fields.get(loc[-1]) if isinstance(loc[-1], str) else None


def _field_examples(loc: tuple) -> list:
    field = _field(loc)
    return list(field.examples or []) if field else []


def _lower_first(text: str) -> str:
    """"Input should be ..." -> "input should be ..."; acronyms ("YAML read ...") stay."""
    return text if text[1:2].isupper() else text[:1].lower() + text[1:]
