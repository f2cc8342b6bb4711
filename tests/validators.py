"""External validators for tests: skip locally with an install hint, fail in CI (CI=true) where they must exist."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

VENV_BIN = Path(sys.executable).parent


def require_tool(name: str, install_hint: str) -> str:
    """The tool's path; skips the test locally, fails it in CI, when the tool is missing."""
    path = shutil.which(name) or shutil.which(name, path=str(VENV_BIN))
    if path:
        return path
    message = f"`{name}` is not installed; {install_hint}"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{message} (required in CI)")
    pytest.skip(message)


CLOUD_INIT_HINT = "install it with `apt-get install -y cloud-init` (Debian/Ubuntu package)"
# The function `cloud-init schema -c FILE` calls, run on many files in one process of cloud-init's own Python:
# the CLI spends ~0.3 s of imports per file.
_VALIDATE_CLOUD_CONFIGS = """
import json, sys
from cloudinit.config.schema import get_schema, validate_cloudconfig_file
schema, problems = get_schema(), {}
for path in sys.argv[1:]:
    try:
        validate_cloudconfig_file(path, schema)
    except Exception as err:
        problems[path] = str(err) or type(err).__name__
print(json.dumps(problems))
"""


def cloud_config_problems(*paths: Path) -> dict[str, str]:
    """cloud-init's schema validation of each file: {path: what is wrong} for the invalid ones, {} when all pass."""
    tool = require_tool("cloud-init", CLOUD_INIT_HINT)
    with open(tool) as script:
        interpreter = script.readline()[2:].strip().split()[0]
    done = subprocess.run([interpreter, "-c", _VALIDATE_CLOUD_CONFIGS, *map(str, paths)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])  # cloud-init prints its own notes before
