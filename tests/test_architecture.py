"""The house rules that code review alone would let slip: one-way data flow and a short program."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CLOUDS = ("aws", "azure", "gcp")
# Source folders and the installed package each one becomes (pyproject.toml's package-dir).
PACKAGE_OF_FOLDER = {"components": ("gpufleet",), "cloud_init": ("gpufleet", "cloud_init")}


def imports_of(path: Path) -> set[str]:
    """Absolute module names a file imports, with relative imports resolved against its package."""
    folder, *rest = path.relative_to(ROOT).with_suffix("").parts
    package = PACKAGE_OF_FOLDER[folder] + tuple(rest[:-1])
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = list(package[:len(package) - node.level + 1]) if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            found |= {module} | {f"{module}.{alias.name}" for alias in node.names}
    return found


def python_files(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


@pytest.mark.parametrize("cloud", CLOUDS)
def test_no_cloud_folder_imports_another_cloud(cloud):
    others = tuple(f"gpufleet.{c}" for c in CLOUDS if c != cloud)
    for path in python_files(f"components/{cloud}"):
        bad = {name for name in imports_of(path) if name.startswith(others)}
        assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


def test_cloud_init_does_not_import_components():
    for path in python_files("cloud_init"):
        bad = {name for name in imports_of(path)
               if name.startswith("gpufleet") and not name.startswith("gpufleet.cloud_init")}
        assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}: data flows spec -> cloud -> cloud_init"


# The root of components/ holds only modules every cloud shares; a new capability is a package of its own (storage
# moved into components/storage/ for issue 43). A module added here needs a reason every cloud shares.
ROOT_MODULES = {"__init__", "args", "boot", "cluster", "component", "naming", "outputs", "pipeline", "program",
                "request", "serving", "tags"}


def test_the_root_of_components_holds_only_the_shared_modules():
    assert {path.stem for path in (ROOT / "components").glob("*.py")} == ROOT_MODULES


def test_main_program_stays_a_few_lines():
    code = [line for line in (ROOT / "__main__.py").read_text().splitlines()
            if line.strip() and not line.lstrip().startswith(("#", '"""'))]
    assert len(code) <= 5


def test_component_type_tokens_use_the_index_module():
    tokens = set()
    for cloud in CLOUDS:
        for path in python_files(f"components/{cloud}"):
            tokens |= set(re.findall(r'"(gpufleet:[A-Za-z]+:[A-Za-z]+)"', path.read_text()))
    assert tokens, "no component type token found"
    assert all(re.fullmatch(r"gpufleet:index:[A-Z][A-Za-z]+", token) for token in tokens), tokens
