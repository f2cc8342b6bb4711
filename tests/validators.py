"""External validators for tests: skip locally with an install hint, fail in CI (CI=true) where they must exist."""

from __future__ import annotations

import os
import shutil
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
