"""Every module imports when it is the first of gpufleet's to be imported, as a user's program or a script may do.

The static cycle test (`test_import_cycles.py`) sees module-to-module edges; a package's `__init__` runs whenever
one of its modules is imported, which adds edges it does not see (`gpufleet.groups.resolve` -> `gpufleet.spec` ->
its parser -> `gpufleet.groups.checks` -> back). Each module is imported here in a fresh interpreter state: every
`gpufleet` module is dropped from `sys.modules` first, while third-party packages stay loaded (seconds, not minutes).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.test_import_cycles import module_names

SCRIPT = """
import contextlib, importlib, io, sys
failed = []
for name in sys.argv[1:]:
    for loaded in [m for m in sys.modules if m == "gpufleet" or m.startswith("gpufleet.")]:
        del sys.modules[loaded]
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            importlib.import_module(name)
    except Exception as error:
        failed.append(f"{name}: {error!r}")
print("\\n".join(failed))
"""
SPEC_AND_GROUPS = ("gpufleet.spec", "gpufleet.groups")


def first_import_failures(names: list[str]) -> str:
    done = subprocess.run([sys.executable, "-c", SCRIPT, *names], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_spec_and_groups_modules_import_first():
    names = sorted(n for n in module_names() if n.startswith(SPEC_AND_GROUPS))
    assert len(names) > 10
    assert first_import_failures(names) == ""


@pytest.mark.slow  # every module (about 15 s of CPU): `.ci/run` runs it
def test_every_module_imports_first():
    assert first_import_failures(sorted(module_names())) == ""
