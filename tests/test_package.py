"""The Pulumi component package: the Analyzer's schema is the checked-in one, and a hosted component (built the
way `component_provider_host` builds it, from camelCase inputs mapped to a plain dict) declares exactly what the
Python class declares."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from pulumi.provider.experimental.component import ComponentProvider

from gpufleet import AwsGpuCluster, AzureGpuCluster, GcpGpuCluster
from gpufleet.plan.mocks import PlanMocks, RecordingMonitor
from gpufleet.plan.project import find_project
from gpufleet.plan.runner import run_program
from gpufleet.plan.stackfile import read_stack_config
from gpufleet.provider import PACKAGE_NAME, SCHEMA_FILE, components, schema_text
from tests.yaml_reader import read_yaml

ROOT = Path(__file__).resolve().parents[1]
COMPONENTS = {"aws": AwsGpuCluster, "azure": AzureGpuCluster, "gcp": GcpGpuCluster}


def test_the_checked_in_schema_is_the_one_the_analyzer_infers():
    assert SCHEMA_FILE.read_text() == schema_text(), (
        "components/provider/schema.json is stale: regenerate it with `.venv/bin/python -m gpufleet.provider "
        "--write-schema`")


def test_the_schema_offers_every_component_with_typed_inputs_and_outputs():
    schema = json.loads(SCHEMA_FILE.read_text())
    assert sorted(schema["resources"]) == [f"gpufleet:index:{c.__name__}" for c in components()]
    aws = schema["resources"]["gpufleet:index:AwsGpuCluster"]
    assert aws["isComponent"] is True
    # `nodes` and `accelerator` may come from each node group instead (`node_groups`); the component refuses a spec
    # that has neither, with the field's name (tests/groups).
    assert set(aws["requiredInputs"]) == {"region"}
    groups = aws["inputProperties"]["nodeGroups"]
    assert groups["type"] == "object"
    assert groups["additionalProperties"]["$ref"] == "#/types/gpufleet:index:NodeGroupArgs"
    assert {"slurmPartition", "slurmDefault", "accelerator", "market"} <= set(
        schema["types"]["gpufleet:index:NodeGroupArgs"]["properties"])
    assert aws["inputProperties"]["network"]["$ref"] == "#/types/gpufleet:index:NetworkArgs"
    assert schema["types"]["gpufleet:index:NetworkArgs"]["properties"]["existingSubnetId"]["type"] == "string"
    assert aws["properties"]["fleetName"] == {"type": "string", "description": "The nodes' Auto Scaling group."}


def test_the_plugin_runs_on_python():
    plugin = read_yaml((ROOT / "components" / "provider" / "PulumiPlugin.yaml").read_text())
    assert plugin["runtime"]["name"] == "python"


def camel(value):
    """Inputs as another language sends them: camelCase keys on the schema's objects (`node`/`rollout` are free
    maps, passed as written)."""
    if isinstance(value, dict):
        return {_camel(k) if k not in ("node", "rollout") else k: (camel(v) if k not in ("node", "rollout") else v)
                for k, v in value.items()}
    return value


def _camel(key: str) -> str:
    first, *rest = key.split("_")
    return first + "".join(part.title() for part in rest)


def declared(program, zone: str | None = None) -> list[tuple[str, str, str, dict]]:
    """`zone`: where the offline mocks place an existing subnet (gpufleet.plan.calls.aws reads the stack's zone)."""
    monitor = RecordingMonitor(PlanMocks())
    config = {"gpufleet:cluster": {"zone": zone}} if zone else {}
    run_program("test", config, program=program, monitor=monitor, project=replace(find_project(), name="gpufleet"))
    return [(r.type, r.name, r.parent.split("::")[-1], r.inputs) for r in monitor.declared_resources()]


@pytest.mark.parametrize("cloud,stack", [("aws", "aws-train"), ("azure", "azure-dev"), ("gcp", "gcp-dev")])
def test_a_hosted_component_declares_what_the_python_class_declares(cloud, stack):
    args = {k: v for k, v in read_stack_config(stack)["gpufleet:cluster"].items() if k != "cloud"}
    if isinstance(args.get("market"), str):
        args["market"] = {"type": args["market"]}  # the schema's MarketArgs object: the YAML shorthand is Python-only
    component = COMPONENTS[cloud]
    provider = ComponentProvider(components(), PACKAGE_NAME, "0.0.0")
    hosted = declared(lambda: provider.construct("gpufleet", f"gpufleet:index:{component.__name__}", camel(args)))
    direct = declared(lambda: component("gpufleet", args))
    assert len(direct) > 5 and hosted == direct


@pytest.mark.parametrize("cloud", ["aws", "azure", "gcp"])
def test_a_hosted_component_with_node_groups_declares_what_the_python_class_declares(cloud):
    from tests.groups.test_plans import SPECS

    args = {**{k: v for k, v in SPECS[cloud].items() if k != "cloud"}, "scheduler": {"kind": "slurm"}}
    args["node_groups"] = {name: {**group, **({"market": {"type": group["market"]}} if isinstance(
        group.get("market"), str) else {})} for name, group in args["node_groups"].items()}  # no shorthand in the schema
    component = COMPONENTS[cloud]
    provider = ComponentProvider(components(), PACKAGE_NAME, "0.0.0")
    hosted = declared(lambda: provider.construct("gpufleet", f"gpufleet:index:{component.__name__}", camel(args)))
    direct = declared(lambda: component("gpufleet", args))
    assert hosted == direct and any(name == "gpufleet-debug-nodes" for _, name, _, _ in direct)


def test_a_hosted_component_refuses_bad_input_by_field():
    provider = ComponentProvider(components(), PACKAGE_NAME, "0.0.0")
    args = {k: v for k, v in read_stack_config("aws-dev")["gpufleet:cluster"].items() if k != "cloud"}
    with pytest.raises(Exception) as caught:
        declared(lambda: provider.construct("gpufleet", "gpufleet:index:AwsGpuCluster", camel({**args, "nodes": 0})))
    assert "`nodes`: got 0; expected a whole number from 1 to 4096" in str(caught.value)


def test_the_yaml_example_uses_only_schema_properties_and_declares_a_cluster():
    example = read_yaml((ROOT / "examples" / "yaml" / "Pulumi.yaml").read_text())
    schema = json.loads(SCHEMA_FILE.read_text())
    clusters = {name: r for name, r in example["resources"].items() if r["type"].startswith("gpufleet:")}
    assert clusters
    for name, resource in clusters.items():
        declared_type = schema["resources"][resource["type"]]
        unknown = _unknown_keys(resource["properties"], declared_type["inputProperties"], schema)
        assert unknown == [], unknown
        for output in example["outputs"].values():
            if output.startswith(f"${{{name}."):
                assert output[len(name) + 3:-1] in declared_type["properties"], output
    # Built the way the host builds it, with the StackReference's output as a plain value.
    properties = json.loads(json.dumps(clusters["train"]["properties"]).replace(
        '"${network.outputs[\\"private_subnet_id\\"]}"', '"subnet-0fa7f0e5b1c2d3e4f"'))
    provider = ComponentProvider(components(), PACKAGE_NAME, "0.0.0")
    resources = declared(lambda: provider.construct("train", clusters["train"]["type"], properties),
                         zone=properties.get("zone"))
    group = [r for r in resources if r[1] == "train-nodes"][0]
    assert group[3]["vpcZoneIdentifiers"] == ["subnet-0fa7f0e5b1c2d3e4f"]
    team = declared(lambda: provider.construct("team", clusters["team"]["type"], clusters["team"]["properties"]))
    assert sorted(r[1] for r in team if r[0] == "aws:autoscaling/group:Group") == ["team-eval-nodes",
                                                                                   "team-train-nodes"]


def _unknown_keys(value: dict, properties: dict, schema: dict, path: str = "") -> list[str]:
    unknown = []
    for key, item in value.items():
        if key not in properties:
            unknown.append(f"{path}{key}")
            continue
        ref = properties[key].get("$ref", "")
        if ref.startswith("#/types/") and isinstance(item, dict):
            nested = schema["types"][ref[len("#/types/"):]]["properties"]
            unknown += _unknown_keys(item, nested, schema, f"{path}{key}.")
        entries = properties[key].get("additionalProperties", {}).get("$ref", "")  # a map of objects (nodeGroups)
        if entries.startswith("#/types/") and isinstance(item, dict):
            nested = schema["types"][entries[len("#/types/"):]]["properties"]
            for name, entry in item.items():
                unknown += _unknown_keys(entry, nested, schema, f"{path}{key}.{name}.")
    return unknown


def test_the_typescript_example_names_only_schema_properties():
    """No TypeScript SDK can be generated here (that needs the Pulumi CLI), so the example's argument and output
    names are checked against the schema the SDK would be generated from."""
    source = (ROOT / "examples" / "typescript" / "index.ts").read_text()
    schema = json.loads(SCHEMA_FILE.read_text())
    cluster = schema["resources"]["gpufleet:index:AwsGpuCluster"]
    call = re.search(r"new gpufleet\.AwsGpuCluster\(\"\w+\", \{\n(.*?)\n\}, ", source, re.S).group(1)
    top = re.findall(r"^    (\w+):", call, re.M)
    assert top and set(top) <= set(cluster["inputProperties"]), top
    for name, body in re.findall(r"^    (\w+): \{ (.*?) \}", call, re.M):
        ref = cluster["inputProperties"][name].get("$ref", "")
        if ref.startswith("#/types/"):
            nested = schema["types"][ref[len("#/types/"):]]["properties"]
            assert set(re.findall(r"(\w+): ", body)) <= set(nested), (name, body)
    assert set(re.findall(r"cluster\.(\w+)", source)) <= set(cluster["properties"])


def test_the_args_cover_every_spec_field():
    """`GpuClusterArgs` mirrors the spec, so every language can set every field: a new spec field or section needs
    its entry in components/args.py (and a regenerated schema)."""
    import typing

    from pydantic import BaseModel

    from gpufleet.args import GpuClusterArgs
    from gpufleet.spec import ClusterSpec

    def missing(model: type[BaseModel], args: type, path: str = "") -> list[str]:
        hints = {key: _required(value) for cls in reversed(args.__mro__)
                 for key, value in vars(cls).get("__annotations__", {}).items()}
        gaps = []
        for name, field in model.model_fields.items():
            if name == "cloud" and not path:
                continue
            if name not in hints:
                gaps.append(f"{path}{name}")
                continue
            annotation, nested = field.annotation, hints[name]
            if isinstance(annotation, type) and issubclass(annotation, BaseModel) and typing.is_typeddict(nested):
                gaps += missing(annotation, nested, f"{path}{name}.")
        return gaps

    assert missing(ClusterSpec, GpuClusterArgs) == []


def _required(annotation):
    """`NotRequired[X]` -> X."""
    import typing
    return typing.get_args(annotation)[0] if getattr(annotation, "__origin__", None) is not None and \
        "NotRequired" in repr(annotation) else annotation
