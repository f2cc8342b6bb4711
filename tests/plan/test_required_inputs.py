"""Every resource that the shipped stacks plan, and each train stack with its monitoring server, carries the arguments
its provider SDK requires, at every level of nested input. What is required is read from the SDK itself (the keyword
arguments of each `...Args` class's __init__ that have no default), never from a list kept here. A property the
plan's mocks leave empty (a system identity's principal, an output nobody faked) shows up here, before a real
`pulumi up` would refuse it."""

from __future__ import annotations

import collections.abc
import importlib
import inspect
import typing
from functools import cache

import pytest
from pulumi import _types
from pulumi.runtime.rpc import get_resource_module

from gpufleet.plan.stackfile import CLUSTER_KEY, read_stack_config
from tests.conftest import cached_plan

from .plan_docs import STACKS, plan_doc

COMPONENT_PREFIX = "gpufleet:"
SERVER_STACKS = [stack for stack in STACKS if stack.endswith("-train")]  # one per cloud, as monitoring's tests plan


@cache
def args_class(token: str) -> type:
    """The SDK's `...Args` class of a resource type token, found through the module the SDK registers for it."""
    package, module, _ = token.split(":")
    importlib.import_module("pulumi_" + package.replace("-", "_"))  # registers its modules
    registered = get_resource_module(package, module, "")
    assert registered is not None, f"no installed provider SDK registers {token}"
    info = registered.mod_info
    name = info["classes"][token]
    # Where a nested input type already has the name `<Resource>Args` (Bucket's inline
    # BucketServerSideEncryptionConfigurationArgs), the SDK names the resource's own `<Resource>InitArgs`.
    module = importlib.import_module(getattr(importlib.import_module(info["fqn"]), name).__module__)
    return getattr(module, name + "InitArgs", None) or getattr(module, name + "Args")


@cache
def required(cls: type) -> frozenset[str]:
    """The wire (camelCase) names of the arguments `cls.__init__` takes without a default."""
    names = _types.input_type_py_to_pulumi_names(cls)
    return frozenset(names.get(p.name, p.name) for p in inspect.signature(cls.__init__).parameters.values()
                     if p.kind is p.KEYWORD_ONLY and p.default is p.empty)


@cache
def nested(cls: type) -> dict[str, tuple[str, tuple[type, ...]]]:
    """wire name -> (how the value holds input types: 'one', 'list' or 'map'; the input types it may hold)."""
    shapes = {}
    for name, hint in _types.input_type_types(cls).items():
        found: dict[type, str] = {}
        _input_types(hint, "one", found)
        if found:
            shapes[name] = (next(iter(found.values())), tuple(found))
    return shapes


def _input_types(hint, shape: str, found: dict[type, str]) -> None:
    origin = typing.get_origin(hint)
    if origin in (list, collections.abc.Sequence):
        _input_types(typing.get_args(hint)[0], "list", found)
    elif origin in (dict, collections.abc.Mapping):
        _input_types(typing.get_args(hint)[-1], "map", found)
    elif origin is not None:  # Union, Awaitable, Output
        for argument in typing.get_args(hint):
            _input_types(argument, shape, found)
    elif isinstance(hint, type) and _types.is_input_type(hint):
        found.setdefault(hint, shape)


def missing(inputs: dict, classes: tuple[type, ...], path: str) -> list[str]:
    """The paths of required arguments that `inputs` lacks. A value that may be one of several input types (a union)
    must have what all of them require."""
    needed = frozenset.intersection(*(required(cls) for cls in classes))
    problems = [f"{path}.{name}" for name in sorted(needed) if inputs.get(name) is None]
    if len(classes) != 1:
        return problems
    for name, (shape, inner) in nested(classes[0]).items():
        value = inputs.get(name)
        if shape == "list":
            items = [(f"{name}[{i}]", v) for i, v in enumerate(value)] if isinstance(value, list) else []
        elif shape == "map":
            items = [(f"{name}.{k}", v) for k, v in value.items()] if isinstance(value, dict) else []
        else:
            items = [(name, value)]
        for where, item in items:
            if isinstance(item, dict):  # a secret is masked to a string: its content is not checked
                problems += missing(item, inner, f"{path}.{where}")
    return problems


def problems_of(resources: list[tuple[str, str, dict]]) -> list[str]:
    checked = [(token, name, inputs) for token, name, inputs in resources if not token.startswith(COMPONENT_PREFIX)]
    assert checked, "the plan declared no provider resources"
    return [f"{token} {problem}" for token, name, inputs in checked
            for problem in missing(inputs, (args_class(token),), name)]


@pytest.mark.parametrize("stack", STACKS)
def test_every_resource_of_a_shipped_stack_has_what_its_sdk_requires(stack):
    resources = [(r["type"], r["name"], r["inputs"]) for r in plan_doc(stack)["resources"]]
    assert problems_of(resources) == []


@pytest.mark.parametrize("stack", SERVER_STACKS)
def test_every_resource_with_the_monitoring_server_has_what_its_sdk_requires(stack):
    """The server is off in the shipped stacks; its resources (on Azure the role assignments that take the VM's
    system identity) are checked with the spec monitoring's own tests plan."""
    spec = {**read_stack_config(stack)[CLUSTER_KEY], "monitoring": {"server": True}}
    resources = [(r.type, r.name, r.inputs) for r in cached_plan(spec).resources]
    assert any("monitoring" in name for _, name, _ in resources)
    assert problems_of(resources) == []


def test_the_check_finds_a_missing_argument_at_the_top_and_nested():
    """Guards the derivation itself: the SDKs' own required arguments, on resources and on nested inputs."""
    assert required(args_class("azure-native:authorization:RoleAssignment")) == {"principalId", "roleDefinitionId",
                                                                                  "scope"}
    assert problems_of([("azure-native:authorization:RoleAssignment", "sd", {"scope": "/s", "roleDefinitionId": "r"})]) \
        == ["azure-native:authorization:RoleAssignment sd.principalId"]
    instance = {"machineType": "a3-highgpu-8g", "bootDisk": {}, "networkInterfaces": [{}],
                "guestAccelerators": [{"count": 8, "type": "nvidia-h100-80gb"}], "serviceAccount": {"scopes": []}}
    assert problems_of([("gcp:compute/instance:Instance", "vm", instance)]) == []
    del instance["guestAccelerators"][0]["type"], instance["serviceAccount"]["scopes"]
    assert problems_of([("gcp:compute/instance:Instance", "vm", instance)]) == [
        "gcp:compute/instance:Instance vm.guestAccelerators[0].type", "gcp:compute/instance:Instance vm.serviceAccount.scopes"]
