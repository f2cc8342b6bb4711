"""Runs the gpufleet program (the same `__main__.py` that `pulumi up` runs) under mocks, for one stack's config."""

from __future__ import annotations

import json
import runpy
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi
from pulumi.runtime.settings import SETTINGS
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from .mocks import DeclaredResource, PlanMocks, RecordingMonitor

PROJECT = "gpufleet"
PROJECT_DIR = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class PlanResult:
    """What the stack would declare and export. Ids and computed outputs are placeholders."""

    stack: str
    resources: list[DeclaredResource]
    outputs: dict[str, Any]


def run_program(stack: str, config: dict[str, Any], program: Callable[[], None] | None = None,
                monitor: RecordingMonitor | None = None) -> PlanResult:
    """Declares the stack's resources against a fresh mock runtime and returns them with the resolved exports.

    `config` maps full keys (`gpufleet:cluster`, `aws:region`) to values; objects are passed as JSON, as the CLI does.
    Raises `pulumi.RunError` with the spec's message when the config is invalid; pass your own `monitor` to see
    what was declared before a failure (nothing, for spec errors).
    """
    monitor = monitor or RecordingMonitor(PlanMocks())
    mocks = monitor.mocks
    pulumi.runtime.set_all_config({key: _config_text(value) for key, value in config.items()})
    pulumi.runtime.set_mocks(mocks, project=PROJECT, stack=stack, preview=False, monitor=monitor)
    SETTINGS.rpc_manager.clear()
    SETTINGS.outputs.clear()
    run = program or (lambda: runpy.run_path(str(PROJECT_DIR / "__main__.py"), run_name="__main__"))
    _sync_await(run_pulumi_func(run))
    root = pulumi.runtime.get_root_resource()
    exports = getattr(root, "outputs", None)  # the Stack resource's exports
    outputs = _sync_await(pulumi.Output.from_input(dict(exports)).future()) if exports else {}
    return PlanResult(stack=stack, resources=monitor.declared_resources(), outputs=outputs or {})


def _config_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)
