"""Generates the spec reference table in README.md from the models' field docstrings (docs never drift, R15).

    .venv/bin/python -m gpufleet.spec.reference           # prints the markdown table
    .venv/bin/python -m gpufleet.spec.reference --write   # replaces it in README.md
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from .model import ClusterSpec

README = Path(__file__).resolve().parents[2] / "README.md"
BEGIN = "<!-- spec-reference:begin -->"
END = "<!-- spec-reference:end -->"


def reference_rows(model: type[BaseModel] = ClusterSpec, prefix: str = "") -> Iterator[tuple[str, str, str]]:
    """(field path, default, description) for every field, nested models expanded in place."""
    for name, field in model.model_fields.items():
        path = f"{prefix}{name}"
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            yield from reference_rows(annotation, f"{path}.")
            continue
        yield path, _default(field), (field.description or "").replace("|", "\\|").replace("\n", " ")


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


def write_readme(readme: Path = README) -> None:
    text = readme.read_text()
    start, end = text.index(BEGIN), text.index(END) + len(END)
    readme.write_text(text[:start] + reference_table() + text[end:])


if __name__ == "__main__":
    if "--write" in sys.argv:
        write_readme()
    else:
        print(reference_table())
