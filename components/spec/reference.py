"""Generates the spec reference table in README.md from the models' field docstrings (docs never drift, R15).

    .venv/bin/python -m gpufleet.spec.reference           # prints the markdown table
    .venv/bin/python -m gpufleet.spec.reference --write   # replaces it in README.md
"""

from __future__ import annotations

import ast
import inspect
import sys
import textwrap
import types
import typing
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from .model import INTERNAL_FIELDS, REQUIRED_WITHOUT_GROUPS, ClusterSpec
from .shapes import nested_model

BEGIN = "<!-- spec-reference:begin -->"
END = "<!-- spec-reference:end -->"


def reference_rows(model: type[BaseModel] = ClusterSpec, prefix: str = "",
                   expand: bool = True) -> Iterator[tuple[str, str, str]]:
    """(field path, default, description) for every field, nested models expanded in place (a mapping of models,
    `node_groups`, as `<name>` once, its fields unexpanded: they repeat the top-level ones)."""
    for name, field in model.model_fields.items():
        if name in INTERNAL_FIELDS:
            continue
        path = f"{prefix}{name}"
        annotation = field.annotation
        if model is ClusterSpec and name in REQUIRED_WITHOUT_GROUPS:
            annotation = _optional_inner(annotation)  # optional only where node groups set it instead
        if expand and isinstance(annotation, type) and issubclass(annotation, BaseModel):
            yield from reference_rows(annotation, f"{path}.")
            continue
        if typing.get_origin(_optional_inner(annotation)) is dict and nested_model(annotation) is not None:
            yield from reference_rows(nested_model(annotation), f"{path}.<name>.", expand=False)
            continue
        text = field.description or field_docstring(model, name)
        default = "required" if model is ClusterSpec and name in REQUIRED_WITHOUT_GROUPS else _default(field)
        yield path, default, text.replace("|", "\\|").replace("\n", " ")


def _optional_inner(annotation: Any) -> Any:
    """`X | None` -> X; anything else as it is."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    return args[0] if typing.get_origin(annotation) in (typing.Union, types.UnionType) and len(args) == 1 else annotation


def field_docstring(model: type[BaseModel], name: str) -> str:
    """The docstring under field `name` in `model`'s source, or in the nearest base class that declares it: what
    pydantic's `use_attribute_docstrings` would have made the field's description (read here, not on every import;
    see gpufleet.spec.strict)."""
    for cls in model.__mro__:
        if isinstance(cls, type) and issubclass(cls, BaseModel) and name in cls.__dict__.get("__annotations__", {}):
            return _docstrings(cls).get(name, "")
    return ""


@cache
def _docstrings(cls: type) -> dict[str, str]:
    """{field: docstring} for the string literals right below a class's annotated fields."""
    body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0]
    assert isinstance(body, ast.ClassDef), cls
    found = {}
    for field, below in zip(body.body, body.body[1:], strict=False):
        if (isinstance(field, ast.AnnAssign) and isinstance(field.target, ast.Name)
                and isinstance(below, ast.Expr) and isinstance(below.value, ast.Constant)
                and isinstance(below.value.value, str)):
            found[field.target.id] = inspect.cleandoc(below.value.value)
    return found


def reference_table() -> str:
    lines = ["| field | default | meaning |", "|---|---|---|"]
    lines += [f"| `{path}` | {default} | {text} |" for path, default, text in reference_rows()]
    return "\n".join([BEGIN, *lines, END])


def _default(field: Any) -> str:
    if field.is_required():
        return "required"
    value = field.default_factory() if field.default is PydanticUndefined else field.default
    if value is None:
        return "-"
    if isinstance(value, BaseModel):
        return "-"
    return f"`{value!s}`" if not isinstance(value, (list, dict)) or value else f"`{value!r}`"


def write_readme(readme: Path | None = None) -> None:
    """Rewrites the table in `readme` (default: README.md in the current directory, this project's checkout)."""
    readme = readme or Path.cwd() / "README.md"
    text = readme.read_text()
    start, end = text.index(BEGIN), text.index(END) + len(END)
    readme.write_text(text[:start] + reference_table() + text[end:])


if __name__ == "__main__":
    if "--write" in sys.argv:
        write_readme()
    else:
        print(reference_table())
