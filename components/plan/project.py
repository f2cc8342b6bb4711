"""The Pulumi project `gpufleet plan` works on: the folder holding Pulumi.yaml, at or above the current directory.

This is how the Pulumi CLI finds its project, so `gpufleet plan STACK` behaves like `pulumi preview -s STACK` in
the same folder: stacks come from the project's `stackConfigDir` (default: the project folder) and the program
from `main` (default: the project folder's `__main__.py`). Nothing is derived from where gpufleet is installed,
so a wheel installed anywhere plans the user's own project, and never writes into its own package.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

from ..spec.errors import Problem, SpecError

# The command a project or stack-file problem is reported under: `gpufleet plan` unless the CLI sets the command it
# runs (`gpufleet inventory`, `gpufleet bench`, ...), which read stacks through the same functions.
RUNNING_COMMAND: ContextVar[str] = ContextVar("gpufleet_running_command", default="gpufleet plan")

PROJECT_FILES = ("Pulumi.yaml", "Pulumi.yml")


@dataclass(frozen=True)
class PulumiProject:
    root: Path
    name: str
    stacks_dir: Path
    program: Path
    """The Python file the Pulumi CLI would run."""


def find_project(start: Path | None = None) -> PulumiProject:
    """The nearest Pulumi project at or above `start` (default: the current directory); `SpecError` if none."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        for file_name in PROJECT_FILES:
            if (folder / file_name).is_file():
                return read_project(folder / file_name)
    raise SpecError([Problem("Pulumi.yaml", str(here), "expected a Pulumi project: run gpufleet in the folder holding "
                             "Pulumi.yaml (or below it)")], root=RUNNING_COMMAND.get())


def read_project(project_file: Path) -> PulumiProject:
    root = project_file.parent
    document = _parsed(project_file.read_text())
    if not isinstance(document, dict) or not isinstance(document.get("name"), str):
        raise SpecError([Problem("name", document.get("name") if isinstance(document, dict) else document,
                                 f"expected the project's name in {project_file}")], root=RUNNING_COMMAND.get())
    main = root / str(document.get("main") or ".")
    program = main / "__main__.py" if main.is_dir() else main
    return PulumiProject(root=root, name=document["name"], stacks_dir=root / str(document.get("stackConfigDir") or "."),
                         program=program)


@lru_cache(maxsize=16)
def _parsed(text: str) -> object:
    """Pulumi.yaml's document, parsed once per text: every plan reads the project (read-only here)."""
    return yaml.safe_load(text) or {}
