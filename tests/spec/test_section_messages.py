"""A section of the spec given something other than a mapping (`monitoring: true`, `storage.shared: lustre`) is
refused with one message in the stack file's terms: a mapping, its keys, an example, never a pydantic class name.
Every nested section of the spec is checked, so a section added later is covered without a new case."""

from __future__ import annotations

import copy
import re

import pytest
from pydantic import BaseModel

from gpufleet.plan.stackfile import CLUSTER_KEY, read_stack_config
from gpufleet.spec import SpecError, parse_cluster_spec
from gpufleet.spec.model import INTERNAL_FIELDS, ClusterSpec
from gpufleet.spec.shapes import _is_list, example, nested_model

# The inference stack, so the inference sections (models, autoscaling...) have valid neighbours.
BASE = read_stack_config("aws-infer")[CLUSTER_KEY]
NOT_MAPPINGS = [True, False, "lustre", 3, [], ["a"]]


def _is_mapping(annotation) -> bool:
    return "dict[" in str(annotation) and nested_model(annotation) is not None


def sections(model: type[BaseModel] = ClusterSpec, path: tuple = ()) -> list[tuple[tuple, type[BaseModel]]]:
    """(path, model) of every nested section; a list of sections is entered at its first item, a mapping of
    sections (`node_groups`) at one entry."""
    found = []
    for name, field in model.model_fields.items():
        inner = nested_model(field.annotation)
        if inner is None or name in INTERNAL_FIELDS:  # `nodes_range` is written as `nodes: {min, max}`
            continue
        here = (*path, name, 0) if _is_list(field.annotation) else (*path, name)
        if _is_mapping(field.annotation):
            here = (*path, name, "train")
        found.append((here, inner))
        if inner is not model:
            found += sections(inner, here)
    return found


SECTIONS = sections()
CLASS_NAMES = {model.__name__ for _, model in SECTIONS}


def shown(path: tuple) -> str:
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in path).lstrip(".")


def with_value(path: tuple, value) -> dict:
    """BASE with `value` at `path`; a list on the way keeps (or gets) one item."""
    raw = copy.deepcopy(BASE)
    _put(raw, path, value)
    return raw


def _put(container, path: tuple, value) -> None:
    head, rest = path[0], path[1:]
    if not rest:
        container[head] = value
        return
    if isinstance(container, list):
        child = container[head]
    else:
        empty: list | dict = [{}] if isinstance(rest[0], int) else {}
        child = container.get(head)
        if type(child) is not type(empty) or not child:
            child = container[head] = empty
    _put(child, rest, value)


def test_every_section_is_enumerated():
    paths = {shown(path) for path, _ in SECTIONS}
    assert {"monitoring", "monitoring.alerts", "storage.shared", "node.health", "access", "inference.models[0]",
            "inference.models[0].inputs[0]", "access.role_assignments[0]"} <= paths


@pytest.mark.parametrize("path, model", SECTIONS, ids=[shown(path) for path, _ in SECTIONS])
@pytest.mark.parametrize("value", NOT_MAPPINGS, ids=repr)
def test_a_section_that_is_not_a_mapping_gets_its_keys_and_an_example(path, model, value):
    if path[-1] == "market" and isinstance(value, str):
        pytest.skip("`market: spot` is short for `market: {type: spot}`")
    with pytest.raises(SpecError) as caught:
        parse_cluster_spec(with_value(path, value))
    problems = [p for p in caught.value.problems if p.path == shown(path)]
    assert len(problems) == 1 and len(caught.value.problems) == 1, caught.value
    message = problems[0].expected
    assert message.startswith("expected a mapping with the keys "), message
    assert all(f"`{key}`" in message for key in model.model_fields if key not in INTERNAL_FIELDS), message
    assert re.search(r", e\.g\. \{.+\}$", message), message
    keys_part = message.split(", e.g. ")[0]  # an example value may be a word like "Storage"
    assert not re.search(r"instance of|valid dictionary|\b(" + "|".join(CLASS_NAMES) + r")\b", keys_part), message


@pytest.mark.parametrize("path, model", SECTIONS, ids=[shown(path) for path, _ in SECTIONS])
def test_each_sections_example_is_accepted_where_it_names_real_values(path, model):
    """The example is valid for the section, unless a required free-text key has no sample (shown as `<key>`)."""
    sample = example(model)
    if "<" in repr(sample):
        pytest.skip(f"{shown(path)}: a required free-text key: {sample}")
    model.model_validate(sample)


@pytest.mark.parametrize("value, expected", [
    (True, "{server: true}"), ("lustre", "{kind: lustre}"), (False, "{dcgm_diag: false}"),
    ([], "{ssh_cidrs: [203.0.113.0/24]}")])
def test_the_example_uses_the_users_value_where_it_fits(value, expected):
    path = {True: ("monitoring",), "lustre": ("storage", "shared"), False: ("node", "health")}.get(
        value if not isinstance(value, list) else None, ("access",))
    with pytest.raises(SpecError) as caught:
        parse_cluster_spec(with_value(path, value))
    assert caught.value.problems[0].expected.endswith(f"e.g. {expected}"), caught.value


def test_an_unknown_key_in_an_optional_section_lists_that_sections_keys():
    """`storage.shared` is `SharedStorage | None`: its keys, not `storage`'s."""
    with pytest.raises(SpecError) as caught:
        parse_cluster_spec(with_value(("storage", "shared"), {"kind": "lustre", "size": 1}))
    assert "`capacity_gib`" in str(caught.value) and "`local_nvme`" not in str(caught.value), caught.value
