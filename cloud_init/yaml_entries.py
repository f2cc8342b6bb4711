"""A cloud-config document's YAML, its `write_files` entries emitted one at a time, each once per process.

The entries (scripts, units, dashboards) are the same on most machines and most of the text, and YAML emission of
them was most of a plan's time. A block sequence's entries are emitted independently of each other, so joining
them is byte-identical to emitting the whole document; tests/cloud_init/test_render.py and
tests/monitoring/test_server_config.py check that for the node's and the monitoring server's documents.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from typing import Any

from .content_cache import cached_text, module_salt

Dump = Callable[[Any], str]


def yaml_by_entry(document: dict, dump: Dump, key: str = "write_files") -> str:
    """`dump(document)`, with `document[key]`'s entries emitted (and cached) one by one."""
    if not document.get(key):
        return dump(document)
    keys = list(document)
    split = keys.index(key)
    before = {name: document[name] for name in keys[:split]}
    after = {name: document[name] for name in keys[split + 1:]}
    # A lone entry whose last scalar keeps its trailing newlines (`|2+`) ends with an explicit document end, `...`,
    # which would end the joined document there.
    entries = "".join(_dumped(dump, json.dumps([entry])).removesuffix("...\n") for entry in document[key])
    return _part(dump, before) + f"{key}:\n" + entries + _part(dump, after)


def _part(dump: Dump, mapping: dict) -> str:
    return _dumped(dump, json.dumps(mapping)) if mapping else ""


@functools.lru_cache(maxsize=1024)
def _dumped(dump: Dump, value_json: str) -> str:
    """Once per process, and on disk across processes (`content_cache`): the entries are mostly shipped files."""
    return cached_text("yaml-entry", _dump_salt(dump), value_json, lambda: dump(json.loads(value_json)))


def _dump_salt(dump: Dump) -> str | None:
    """What `dump`'s output depends on besides its input: PyYAML's version and the source of the module that
    defines `dump` (its Dumper, representers and options live there)."""
    module = getattr(dump, "__module__", None)
    yaml = sys.modules.get("yaml")
    salt = module_salt(module) if module else None
    if salt is None or yaml is None:
        return None
    return f"PyYAML {yaml.__version__} {dump.__qualname__} {salt}"
