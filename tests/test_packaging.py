"""The installed import package is `gpufleet`, built from the project's fixed top-level folders."""

from __future__ import annotations

from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]
SETUPTOOLS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def source_packages() -> set[str]:
    """Every Python package under the mapped source folders, named as it is installed."""
    names = set()
    for package, folder in SETUPTOOLS["package-dir"].items():
        # A mapped folder without Python code (the Ansible collection, `ansible/`) is package data only: it has no
        # __init__.py, so that `import ansible` from the checkout's root never finds it instead of Ansible itself.
        if not (ROOT / folder / "__init__.py").exists() and any(SETUPTOOLS["package-data"].get(package, [])):
            names.add(package)
        for init in (ROOT / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(ROOT / folder).parts
            names.add(".".join((package, *relative)))
    return names


def test_every_source_package_is_installed_under_gpufleet():
    assert set(SETUPTOOLS["packages"]) == source_packages()


def test_no_generic_top_level_package_is_installed():
    assert {name.split(".")[0] for name in SETUPTOOLS["packages"]} == {"gpufleet"}


def test_the_library_is_imported_as_gpufleet_everywhere():
    offenders = []
    for folder in ("components", "cloud_init", "tests", "benchmarks", "examples", "policy"):
        for path in (ROOT / folder).rglob("*.py"):
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if line.lstrip().startswith(("from components", "import components", "from cloud_init",
                                             "import cloud_init")):
                    offenders.append(f"{path.relative_to(ROOT)}:{number}")
    assert not offenders, offenders
