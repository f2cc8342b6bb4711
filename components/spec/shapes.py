"""What a nested section of the spec accepts, said in the stack file's terms: a mapping, its keys, an example.

Pydantic names the model class when a section is not a mapping ("input should be a valid dictionary or instance of
Monitoring"); a user wrote `monitoring: true` or `--set storage.shared=lustre` and needs to read which keys the
section takes and how to write it. The example uses the user's own value where it fits a key (`lustre` is a
`kind`), else a sample of the first key that has one.
"""

from __future__ import annotations

import types
import typing
from typing import Any, Literal, Union

import yaml
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

SCALARS = (str, int, float, bool)


def unwrapped(annotation: Any) -> Any:
    """`X | None`, `Annotated[X, ...]`, `list[X]` and `dict[str, X]` -> X (the model a path step lands in)."""
    while True:
        origin = typing.get_origin(annotation)
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if origin in (Union, types.UnionType) and len(args) == 1:
            annotation = args[0]
        elif origin is typing.Annotated or origin in (list, tuple, set, frozenset):
            annotation = args[0]
        elif origin is dict:
            annotation = args[-1]
        else:
            return annotation


def nested_model(annotation: Any) -> type[BaseModel] | None:
    model = unwrapped(annotation)
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


def model_at(root: type[BaseModel], path: tuple) -> type[BaseModel]:
    """The model that holds the fields under `path` (list indexes skipped)."""
    model = root
    for part in path:
        field = model.model_fields.get(part) if isinstance(part, str) else None
        inner = nested_model(field.annotation) if field is not None else None
        model = inner or model
    return model


def mapping_expected(model: type[BaseModel], value: Any) -> str:
    """"expected a mapping with the keys ..., e.g. {...}" for a section of type `model` given `value`."""
    keys = ", ".join(f"`{name}`" + (" (required)" if field.is_required() else "")
                     for name, field in model.model_fields.items() if name != "nodes_range")
    return f"expected a mapping with the keys {keys}, e.g. {_flow(example(model, value))}"


def example(model: type[BaseModel], value: Any = None) -> dict[str, Any]:
    """A small mapping `model` accepts: its required keys, or the one key `value` fits, or the first key with a
    sample. A required key without a sample shows as `<key>`."""
    fields = {name: field for name, field in model.model_fields.items() if name != "nodes_range"}  # `nodes: {..}`
    required = {name: value if _fits(field, value) else _sample(field, name)
                for name, field in fields.items() if field.is_required()}
    if required:
        return required
    fitting = _fitting_key(fields, value)
    if fitting is not None:
        return {fitting: value}
    for has_sample in (_has_examples, _is_literal, _has_scalar_default, _is_switch, _is_section):
        for name, field in fields.items():
            if has_sample(field) and (has_sample is _is_section or not _is_section(field)):
                return {name: _sample(field, name)}
    name, field = next(iter(fields.items()))
    return {name: _sample(field, name)}


def _fitting_key(fields: dict[str, FieldInfo], value: Any) -> str | None:
    """The key a scalar the user gave most likely belongs to: a choice it is one of (`kind: lustre`), or for
    true/false an `enabled` switch or a switch that comes first (`server`, `dcgm_diag`)."""
    if not isinstance(value, SCALARS):
        return None
    if isinstance(value, bool):
        switches = [name for name, field in fields.items() if _is_switch(field)]
        first = next(iter(fields))
        return "enabled" if "enabled" in switches else (first if first in switches else None)
    return next((name for name, field in fields.items() if _fits(field, value)), None)


def _fits(field: FieldInfo, value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, SCALARS) and value in _literal_values(field)


def _literal_values(field: FieldInfo) -> tuple:
    annotation = unwrapped(field.annotation)
    return typing.get_args(annotation) if typing.get_origin(annotation) is Literal else ()


def _has_examples(field: FieldInfo) -> bool:
    return bool(field.examples)


def _is_literal(field: FieldInfo) -> bool:
    return bool(_literal_values(field))


def _has_scalar_default(field: FieldInfo) -> bool:
    """A default written as one value: text, a number, or one shown as text (a CIDR)."""
    default = field.default
    return default is not None and default is not PydanticUndefined and not isinstance(default, (bool, list, dict))


def _is_section(field: FieldInfo) -> bool:
    return nested_model(field.annotation) is not None


def _is_list(annotation: Any) -> bool:
    while typing.get_origin(annotation) in (Union, types.UnionType, typing.Annotated):
        annotation = next(a for a in typing.get_args(annotation) if a is not type(None))
    return typing.get_origin(annotation) is list


def _is_switch(field: FieldInfo) -> bool:
    return unwrapped(field.annotation) is bool


def _sample(field: FieldInfo, name: str) -> Any:
    if field.examples:
        return field.examples[0]
    choices = [choice for choice in _literal_values(field) if choice != ""]
    if choices:
        return choices[0]
    if isinstance(field.default, SCALARS):
        return field.default
    if _has_scalar_default(field):
        return str(field.default)
    if _is_switch(field):
        return False
    inner = nested_model(field.annotation)
    if inner is not None:
        return [example(inner)] if _is_list(field.annotation) else example(inner)
    return f"<{name}>"


def _flow(mapping: dict[str, Any]) -> str:
    """`{kind: lustre}`: YAML flow style, one line."""
    return yaml.safe_dump(mapping, default_flow_style=True, sort_keys=False, width=1 << 16).strip()
