"""The node's `NAME='value'` files (node.env, job.env, triton.env): one line per value, single-quoted, which both
`sh` and systemd's EnvironmentFile= read literally.

Apart from env.py (which values a node gets, from its BootConfig) so that triton.py, which config.py imports, writes
its file the same way without an import cycle.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")


def quote_env_value(name: str, value: str) -> str:
    """One `NAME='value'` line; raises ValueError on what neither sh nor systemd would read back unchanged."""
    if not ENV_NAME.match(name):
        raise ValueError(f"environment name {name!r} must match {ENV_NAME.pattern}")
    if "'" in value or "\n" in value or "\\" in value:
        raise ValueError(f"value of {name} may not contain a single quote, backslash or newline: {value!r}")
    return f"{name}='{value}'"


def render_env_file(items: Iterable[tuple[str, str]], header: str) -> str:
    lines = [f"# {line}".rstrip() for line in header.splitlines()]
    lines += [quote_env_value(name, value) for name, value in items]
    return "\n".join(lines) + "\n"
