"""The on-disk content cache: a plan's bytes are the same with it empty and with it full, and a damaged or unwritable
cache, or one turned off, never changes a result."""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import zopfli.gzip

from gpufleet.cloud_init import content_cache
from gpufleet.cloud_init.content_cache import CACHE_DIR_ENV, cached_bytes, module_salt
from gpufleet.cloud_init.encode import ZOPFLI_ITERATIONS, gzip_deterministic

ROOT = Path(__file__).resolve().parents[2]


class Counting:
    """A compute function that counts its calls."""

    def __init__(self, value: bytes):
        self.value, self.calls = value, 0

    def __call__(self) -> bytes:
        self.calls += 1
        return self.value


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    return tmp_path / "cache"


def entries(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


def test_a_result_is_computed_once_per_kind_salt_and_input(cache):
    compute = Counting(b"result")
    assert cached_bytes("kind", "salt", b"input", compute) == b"result"
    assert cached_bytes("kind", "salt", b"input", compute) == b"result"
    assert compute.calls == 1
    for kind, salt, data in (("other", "salt", b"input"), ("kind", "salt 2", b"input"), ("kind", "salt", b"input2")):
        cached_bytes(kind, salt, data, compute)
    assert compute.calls == 4
    assert len(entries(cache)) == 4


def test_a_damaged_or_torn_entry_is_recomputed_and_repaired(cache):
    compute = Counting(b"the right bytes")
    cached_bytes("kind", "salt", b"input", compute)
    (entry,) = entries(cache)
    for damaged in (b"", entry.read_bytes()[:70], entry.read_bytes().replace(b"right", b"wrong")):
        entry.write_bytes(damaged)
        assert cached_bytes("kind", "salt", b"input", compute) == b"the right bytes"
    assert compute.calls == 4
    assert cached_bytes("kind", "salt", b"input", compute) == b"the right bytes"
    assert compute.calls == 4, "the repaired entry is used again"


def test_an_unwritable_folder_computes_every_time_and_raises_nothing(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(CACHE_DIR_ENV, str(blocker / "cache"))  # root may write anywhere; a file in the way stops it
    compute = Counting(b"result")
    assert cached_bytes("kind", "salt", b"input", compute) == b"result"
    assert cached_bytes("kind", "salt", b"input", compute) == b"result"
    assert compute.calls == 2


@pytest.mark.parametrize("setting", ["off", "OFF", ""])
def test_the_cache_can_be_turned_off(tmp_path, monkeypatch, setting):
    monkeypatch.setenv(CACHE_DIR_ENV, setting)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    compute = Counting(b"result")
    cached_bytes("kind", "salt", b"input", compute)
    cached_bytes("kind", "salt", b"input", compute)
    assert compute.calls == 2
    assert entries(tmp_path) == []


def test_the_default_folder_is_the_users_cache_folder(monkeypatch, tmp_path):
    monkeypatch.delenv(CACHE_DIR_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert content_cache.cache_dir() == tmp_path / "gpufleet" / content_cache.LAYOUT_VERSION


def test_no_home_folder_means_no_cache(monkeypatch):
    monkeypatch.delenv(CACHE_DIR_ENV)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)

    def no_home():
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    assert content_cache.cache_dir() is None
    assert cached_bytes("kind", "salt", b"input", Counting(b"result")) == b"result"


def test_no_salt_means_no_cache(cache):
    compute = Counting(b"result")
    cached_bytes("kind", None, b"input", compute)
    cached_bytes("kind", None, b"input", compute)
    assert compute.calls == 2
    assert entries(cache) == []


def test_a_modules_salt_follows_its_source(tmp_path, monkeypatch):
    module = tmp_path / "gpufleet_salt_probe.py"
    module.write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("gpufleet_salt_probe")
    try:
        assert hashlib.sha256(module.read_bytes()).hexdigest() in module_salt("gpufleet_salt_probe")
    finally:
        sys.modules.pop("gpufleet_salt_probe")
    assert module_salt("a_module_that_is_not_loaded") is None


def test_the_cached_gzip_is_zopflis_output(cache):
    data = (ROOT / "cloud_init" / "files" / "usr" / "local" / "sbin" / "gpufleet-install").read_bytes() * 3
    gzip_deterministic.cache_clear()
    assert gzip_deterministic(data) == zopfli.gzip.compress(data, numiterations=ZOPFLI_ITERATIONS)
    gzip_deterministic.cache_clear()
    assert gzip_deterministic(data) == zopfli.gzip.compress(data, numiterations=ZOPFLI_ITERATIONS)
    assert [p.parent.parent.name for p in entries(cache)] == ["zopfli"]


def plan_json(cache_setting: str) -> str:
    env = {**os.environ, CACHE_DIR_ENV: cache_setting}
    done = subprocess.run([sys.executable, "-m", "gpufleet.plan.entry", "plan", "aws-train", "--json"], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.slow  # two planning processes: seconds of CPU
def test_a_plan_is_byte_identical_with_an_empty_cache_and_with_a_full_one(tmp_path):
    """Two processes: the cache empty (every result computed, as with the cache off, and written), then full (every
    result read, nothing written)."""
    folder = tmp_path / "cache"
    cold = plan_json(str(folder))
    filled = {path: path.stat().st_mtime_ns for path in entries(folder)}
    warm = plan_json(str(folder))
    assert cold == warm
    assert json.loads(warm)["resources"], "the plan declared nothing"
    assert {path.parent.parent.name for path in filled} == {"zopfli", "yaml-entry", "python-minified", "shell-minified",
                                                            "catalog", "grafana-dashboards"}
    assert {path: path.stat().st_mtime_ns for path in entries(folder)} == filled, "the warm plan recomputed entries"
