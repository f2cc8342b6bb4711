"""Results of gpufleet's slow, pure transforms kept on disk by a hash of their input, so every plan after the first
reuses them: the gzip (zopfli) of a user-data document, the YAML of a `write_files` entry, a minified node script,
and (from gpufleet's components) the checked catalog and the Grafana dashboards.

A plan spent about a third of its time redoing this work on text that did not change between plans. The key is the
sha256 of the transform's name, a salt and the input. The salt names everything else the result depends on: the
library's version and the digest of the gpufleet module that holds the transform's code, so an upgrade or an edit
of that code misses the cache instead of returning stale bytes. Output is byte-identical with and without the cache
(tests/cloud_init/test_content_cache.py).

Where: `$GPUFLEET_CACHE_DIR`, else `$XDG_CACHE_HOME/gpufleet`, else `~/.cache/gpufleet` (no cache without a home
folder); the installed package may be read-only, so nothing is written beside it. `GPUFLEET_CACHE_DIR=off` turns the
cache off. Each entry carries the sha256 of its bytes and is written to a temporary file then renamed, so a torn or
damaged entry is recomputed, never used; a folder that cannot be written is skipped (the result is computed, as
without a cache). Deleting the folder is always safe.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
from collections.abc import Callable
from functools import cache
from pathlib import Path

CACHE_DIR_ENV = "GPUFLEET_CACHE_DIR"
OFF = "off"
LAYOUT_VERSION = "v1"  # bump when the entry format below changes
_DIGEST_BYTES = 64  # hex sha256 of the value, then a newline, then the value


def cache_dir() -> Path | None:
    """The folder entries live in, or None when the cache is off. Read on every call: tests and the CLI set the
    variable after import."""
    chosen = os.environ.get(CACHE_DIR_ENV)
    if chosen is not None:
        return None if chosen.strip().lower() in ("", OFF) else Path(chosen) / LAYOUT_VERSION
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        try:
            base = str(Path.home() / ".cache")
        except (RuntimeError, KeyError):  # no HOME and no passwd entry (some CI and container users): no cache
            return None
    return Path(base) / "gpufleet" / LAYOUT_VERSION


def cached_bytes(kind: str, salt: str | None, data: bytes, compute: Callable[[], bytes]) -> bytes:
    """`compute()`, or its earlier result for the same `kind`, `salt` and `data`. A None salt (the code's source
    could not be read) computes without the cache."""
    folder = cache_dir()
    if folder is None or salt is None:
        return compute()
    key = hashlib.sha256(b"\0".join((kind.encode(), salt.encode(), data))).hexdigest()
    path = folder / kind / key[:2] / key
    found = _read(path)
    if found is not None:
        return found
    value = compute()
    _write(path, value)
    return value


def cached_text(kind: str, salt: str | None, data: str, compute: Callable[[], str]) -> str:
    """`cached_bytes` for text (UTF-8)."""
    return cached_bytes(kind, salt, data.encode("utf-8"), lambda: compute().encode("utf-8")).decode("utf-8")


@cache
def module_salt(module_name: str) -> str | None:
    """The Python version and the sha256 of a module's source: part of the salt of a transform whose code lives in
    that module, so that editing the code invalidates its entries. None when the source cannot be read. A module not
    loaded yet is found without running it (its packages are imported), so a cache hit can skip importing it."""
    loaded = sys.modules.get(module_name)
    filename = getattr(loaded, "__file__", None) if loaded is not None else _source_file(module_name)
    try:
        source = Path(filename).read_bytes() if filename else None
    except OSError:
        source = None
    if source is None:
        return None
    return f"py{sys.version_info[0]}.{sys.version_info[1]} {module_name} {hashlib.sha256(source).hexdigest()}"


def _source_file(module_name: str) -> str | None:
    try:
        found = importlib.util.find_spec(module_name)
    except (ImportError, ValueError):
        return None
    return found.origin if found is not None else None


def _read(path: Path) -> bytes | None:
    try:
        stored = path.read_bytes()
    except OSError:
        return None
    digest, value = stored[:_DIGEST_BYTES], stored[_DIGEST_BYTES + 1:]
    if stored[_DIGEST_BYTES:_DIGEST_BYTES + 1] != b"\n" or hashlib.sha256(value).hexdigest().encode() != digest:
        return None  # torn or damaged: recomputed and written again
    return value


def _write(path: Path, value: bytes) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(hashlib.sha256(value).hexdigest().encode() + b"\n" + value)
            os.replace(temporary, path)  # atomic: a concurrent plan reads the old entry, the new one or none
        except BaseException:
            os.unlink(temporary)
            raise
    except OSError:
        pass  # read-only or full: the result was computed and is returned all the same
