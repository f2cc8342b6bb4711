"""ansible-lint takes about half a minute on two cores: its test runs only when asked (`-m ansible_lint`, as
`.ci/run` does; `.ci/lint` runs the same check)."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(config, items):
    if "ansible_lint" in (config.getoption("-m") or ""):
        return
    skip = pytest.mark.skip(reason="ansible-lint test: run with `-m ansible_lint` (bash .ci/run does)")
    for item in items:
        if "ansible_lint" in item.keywords:
            item.add_marker(skip)
