"""ansible-lint (about half a minute on two cores) and the playbooks run over local stand-in nodes (about two
minutes) run only when asked (`-m ansible_slow`, as `.ci/run` does; `.ci/lint` runs ansible-lint too)."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(config, items):
    if "ansible_slow" in (config.getoption("-m") or ""):
        return
    skip = pytest.mark.skip(reason="slow Ansible test: run with `-m ansible_slow` (bash .ci/run does)")
    for item in items:
        if "ansible_slow" in item.keywords:
            item.add_marker(skip)
