"""Runs a Pulumi project's program (the same `__main__.py` that `pulumi up` runs) under mocks, for one stack's config.

The project is the one the Pulumi CLI would use from the current directory (`project.find_project`), not this
package's own checkout: an installed gpufleet plans the user's project."""

from __future__ import annotations

import copy
import json
import runpy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi.runtime.settings import ROOT, SETTINGS
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from ..deploytime.lookups import offline_lookups
from .mocks import DeclaredResource, PlanMocks, RecordingMonitor
from .project import PulumiProject, find_project


@dataclass(frozen=True)
class PlanResult:
    """What the stack would declare and export. Ids and computed outputs are placeholders."""

    stack: str
    resources: list[DeclaredResource]
    outputs: dict[str, Any]


def run_program(stack: str, config: dict[str, Any], program: Callable[[], None] | None = None,
                monitor: RecordingMonitor | None = None, project: PulumiProject | None = None,
                preview: bool = False) -> PlanResult:
    """Declares the stack's resources against a fresh mock runtime and returns them with the resolved exports.

    `config` maps full keys (`gpufleet:cluster`, `aws:region`) to values; objects are passed as JSON, as the CLI does.
    Raises `pulumi.RunError` with the spec's message when the config is invalid; pass your own `monitor` to see
    what was declared before a failure (nothing, for spec errors). `project`: default, the current directory's.
    `preview`: unknown values stay unknown, as in `pulumi preview` (for tests of components with pending Inputs).
    """
    project = project or find_project()
    monitor = monitor or RecordingMonitor(PlanMocks())
    mocks = monitor.mocks
    pulumi.runtime.set_all_config({key: _config_text(value) for key, value in config.items()})
    ROOT.set(None)  # a fresh root stack: exports of an earlier (possibly failed) run must not leak into this one
    pulumi.runtime.set_mocks(mocks, project=project.name, stack=stack, preview=preview, monitor=monitor)
    SETTINGS.rpc_manager.clear()
    SETTINGS.outputs.clear()
    declare = program or (lambda: runpy.run_path(str(project.program), run_name="__main__"))

    def run() -> None:
        pulumi.runtime.register_stack_transformation(_without_aliases)
        declare()

    with offline_lookups():  # no credentials, no network: deploy-time lookups say what they will resolve
        _sync_await(run_pulumi_func(run))
        root = pulumi.runtime.get_root_resource()
        exports = getattr(root, "outputs", None)  # the Stack resource's exports
        outputs = _sync_await(pulumi.Output.from_input(dict(exports)).future()) if exports else {}
    return PlanResult(stack=stack, resources=monitor.declared_resources(), outputs=outputs or {})


def _without_aliases(args: pulumi.ResourceTransformationArgs) -> pulumi.ResourceTransformationResult | None:
    """Drops each resource's aliases before the SDK resolves them. Aliases only tell a real engine which old URNs a
    resource may have had; a plan has no state to match them against. azure-native resources carry dozens each (one
    per API version), and resolving them was about a third of an Azure plan's time. Plans record no aliases and
    `gpufleet diff` matches resources by URN alone, so a resource renamed with an alias shows there as one removed
    and one added."""
    if not args.opts.aliases:
        return None
    opts = copy.copy(args.opts)
    opts.aliases = None
    return pulumi.ResourceTransformationResult(args.props, opts)


def _config_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)
