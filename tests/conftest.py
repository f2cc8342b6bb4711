"""Shared fixtures: a fresh mock runtime per test, and the plan of a spec."""

from __future__ import annotations

import atexit
import gc
import json
import os
import shutil
import sys
import tempfile
from functools import cache
from pathlib import Path

import pulumi
import pulumi.runtime.resource as _pulumi_resource
import pytest
from pulumi.runtime.proto import source_pb2 as _source_pb2

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
# Tests read the shipped catalog, never a refreshed one in the developer's own data folder.
os.environ["XDG_DATA_HOME"] = tempfile.mkdtemp(prefix="gpufleet-test-xdg-")
atexit.register(shutil.rmtree, os.environ["XDG_DATA_HOME"], True)  # one per test process; gone when it exits
os.environ.pop("GPUFLEET_DATA_DIR", None)
# The content cache (gpufleet.cloud_init.content_cache) in the test runs' own folder, `.venv/test-content-cache`
# (git ignores it), shared by the xdist workers and the CLIs they start (they
# inherit the controlling process's environment): tests never read entries a developer's own plans left, nor leave
# any in the developer's cache folder. Each user-data document is compressed once, not once per worker, and not
# again by the next run: entries are keyed by their input and the digest of the code that made them, so an edited
# transform misses the cache, and they are written atomically. Zopfli, the write_files YAML, the checked catalog and
# the dashboards took about 15 s of the default suite's CPU with a fresh folder per run. A folder grown past
# TEST_CACHE_MAX_BYTES (old code's entries pile up) is emptied when a run starts. CI's clean clone starts empty.
TEST_CACHE = Path(__file__).resolve().parents[1] / ".venv" / "test-content-cache"
TEST_CACHE_MAX_BYTES = 256 * 2**20


def _folder_bytes(folder: Path) -> int:
    return sum(entry.stat().st_size for entry in folder.rglob("*") if entry.is_file())


if not (os.environ.get("PYTEST_XDIST_WORKER") and os.environ.get("GPUFLEET_CACHE_DIR")):
    if TEST_CACHE.parent.is_dir():
        if TEST_CACHE.is_dir() and _folder_bytes(TEST_CACHE) > TEST_CACHE_MAX_BYTES:
            shutil.rmtree(TEST_CACHE, ignore_errors=True)
        os.environ["GPUFLEET_CACHE_DIR"] = str(TEST_CACHE)
    else:  # no venv beside the tests (an installed copy): a folder of this run
        os.environ["GPUFLEET_CACHE_DIR"] = tempfile.mkdtemp(prefix="gpufleet-test-cache-")
        atexit.register(shutil.rmtree, os.environ["GPUFLEET_CACHE_DIR"], True)

from gpufleet.plan.mocks import PlanMocks, RecordingMonitor  # noqa: E402
from gpufleet.plan.runner import PlanResult, run_program  # noqa: E402

# The SDK records the Python call stack of every resource it registers (source positions for the engine), about a
# sixth of a mocked plan's time under pytest's deep stacks. No test reads them, so tests send an empty trace.
assert hasattr(_pulumi_resource, "_get_stack_trace"), "the pulumi SDK renamed _get_stack_trace: update tests/conftest.py"
_pulumi_resource._get_stack_trace = _source_pb2.StackTrace


# Suites that run only when their marker is selected (`-m fuzz`, as `.ci/run` does); otherwise each test is
# skipped with this hint, so a default run says what it left out and how to run it.
OPT_IN_MARKERS = {
    "fuzz": "fuzz test",
    "migrate": "end-to-end migration test",
    "ansible_slow": "slow Ansible test",
}


def pytest_collection_modifyitems(config, items):
    """Long tests (`runs_first`) go to the front: xdist hands out tests in collection order, and the wheel build,
    collected last, otherwise ran alone at the end while the other workers idled. Opt-in suites are skipped unless
    selected."""
    selected = config.getoption("-m") or ""
    for marker, kind in OPT_IN_MARKERS.items():
        if marker in selected and f"not {marker}" not in selected:
            continue
        skip = pytest.mark.skip(reason=f"{kind}: run with `-m {marker}` (bash .ci/run does)")
        for item in items:
            if item.get_closest_marker(marker):
                item.add_marker(skip)
    items.sort(key=lambda item: item.get_closest_marker("runs_first") is None)


def pytest_collection_finish(session):
    """The garbage collector's young generation is collected every 50,000 net allocations instead of 700, and the
    whole heap less often: a mocked plan makes about a million short-lived objects (the SDK's futures and tasks), and
    each full collection walks the provider SDKs' large modules. Garbage collection took 17 s of the suite's CPU
    time with the defaults, 6 s with these.

    What is alive now (and every `FREEZE_EVERY` tests, after a collection) is moved out of the collector's sight
    (`gc.freeze`): the provider SDKs' modules, the catalog, cached plans, which later full collections would walk
    again and again. tests/aws, azure and gcp with -n 0: 17.4 s of CPU instead of 20.6 s, peak memory 333 MB
    instead of 343 MB."""
    gc.set_threshold(50_000, 20, 100)
    _collect_and_freeze()


FREEZE_EVERY = 50
_tests_done = [0]


def pytest_runtest_teardown(item, nextitem):
    _tests_done[0] += 1
    if _tests_done[0] % FREEZE_EVERY == 0:
        _collect_and_freeze()


def _collect_and_freeze() -> None:
    """Frees the garbage there is, then freezes what is left: only live objects are frozen, never garbage."""
    gc.collect()
    gc.freeze()


def plan_spec(spec: dict, stack: str = "test", extra_config: dict | None = None) -> PlanResult:
    """Runs `__main__.py` for `spec` under a fresh mock runtime (preview=False) and returns what it declared."""
    return run_program(stack, {"gpufleet:cluster": spec, **(extra_config or {})})


@pytest.fixture
def plan():
    """`plan(spec_dict)` -> PlanResult, each call on a fresh mock runtime."""
    return plan_spec


def cached_plan(spec: dict, extra_config: dict | None = None) -> PlanResult:
    """`plan_spec`, run once per distinct spec in a test session: tests only read the declared data."""
    return _cached_plan(json.dumps(spec, sort_keys=True), json.dumps(extra_config or {}, sort_keys=True))


@cache
def _cached_plan(spec_json: str, config_json: str) -> PlanResult:
    return plan_spec(json.loads(spec_json), extra_config=json.loads(config_json))


def of_type(result: PlanResult, token: str) -> list:
    """The declared resources of one type token."""
    return [r for r in result.resources if r.type == token]


def one(result: PlanResult, token: str):
    """The only declared resource of `token`; fails when there are none or several."""
    found = of_type(result, token)
    assert len(found) == 1, [r.name for r in found]
    return found[0]


def refusal(spec: dict) -> str:
    """The `pulumi.RunError` message `spec` gets; fails the test if anything was declared before the refusal."""
    monitor = RecordingMonitor(PlanMocks())
    with pytest.raises(pulumi.RunError) as caught:
        run_program("test", {"gpufleet:cluster": spec}, monitor=monitor)
    assert monitor.declared_resources() == [], "a refused spec must declare nothing"
    return str(caught.value)
