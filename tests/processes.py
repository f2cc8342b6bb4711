"""Processes a test started through helpers it cannot wait for itself (tunnels a ProxyCommand opened), found by a
text unique to the test in their command lines."""

from __future__ import annotations

import time
from pathlib import Path


def processes_naming(text: str) -> list[str]:
    """The pids of the processes whose command line holds `text`."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if text.encode() in cmdline.read_bytes():
                found.append(cmdline.parent.name)
        except OSError:
            continue
    return found


def left_running(text: str, seconds: float = 10) -> list[str]:
    """The processes naming `text` still running after up to `seconds` of waiting for them to end."""
    deadline = time.monotonic() + seconds
    while processes_naming(text) and time.monotonic() < deadline:
        time.sleep(0.1)
    return processes_naming(text)
