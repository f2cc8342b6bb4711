"""The end-to-end migration tests (real venvs, a real sshd on loopback) run only when asked (`-m migrate`, as
`.ci/run` does): they build several virtual environments and copy files over ssh, seconds each on 2 cores."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(config, items):
    selected = config.getoption("-m") or ""
    if "migrate" in selected and "not migrate" not in selected:
        return
    skip = pytest.mark.skip(reason="end-to-end migration test: run with `-m migrate` (bash .ci/run does)")
    for item in items:
        if item.get_closest_marker("migrate"):
            item.add_marker(skip)
