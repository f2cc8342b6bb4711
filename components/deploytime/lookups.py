"""Whether deploy-time lookups reach the network.

Under the Pulumi engine (`pulumi up`, `pulumi preview`) they do: the program asks Azure for the newest marketplace
image version and the container registry for the digest of a tag, then pins what it got. gpufleet's offline plan
(`components/plan/runner.py`) runs the same program under mocks, with no credentials and no network: it turns
lookups off, and each lookup then returns a value that says it will be resolved at deploy time (`deferred`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

RESOLVED_AT_DEPLOY = "resolved-at-pulumi-up"
"""What an offline plan shows in place of a looked-up value (an image version, a digest's hex)."""

_lock = threading.Lock()
_offline_depth = 0


def lookups_enabled() -> bool:
    """True unless an offline plan is running (see the module docstring)."""
    return _offline_depth == 0


@contextmanager
def offline_lookups() -> Iterator[None]:
    """Within this block deploy-time lookups return `RESOLVED_AT_DEPLOY` stand-ins instead of calling out."""
    global _offline_depth
    with _lock:
        _offline_depth += 1
    try:
        yield
    finally:
        with _lock:
            _offline_depth -= 1

