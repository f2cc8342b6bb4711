"""The components as a library: typed args, Inputs from other resources, the caller's providers, unique names."""

from __future__ import annotations

import json
from dataclasses import replace

import pulumi
import pulumi_aws as aws
import pulumi_azure_native as azure_native
import pulumi_gcp as gcp
import pytest

from gpufleet import AwsGpuCluster, AzureGpuCluster, GcpGpuCluster, GpuClusterArgs, SpecError
from gpufleet.component import optional_output_names, output_names
from gpufleet.plan.mocks import PlanMocks, RecordingMonitor
from gpufleet.plan.project import find_project
from gpufleet.plan.runner import run_program
from gpufleet.plan.stackfile import read_stack_config
from gpufleet.request import STAND_INS

COMPONENTS = {"aws": AwsGpuCluster, "azure": AzureGpuCluster, "gcp": GcpGpuCluster}
PROVIDERS = {"aws": lambda: aws.Provider("caller", region="eu-west-1"),
             "azure": lambda: azure_native.Provider("caller"),
             "gcp": lambda: gcp.Provider("caller", project="caller-project")}


def stack_args(stack: str) -> GpuClusterArgs:
    raw = dict(read_stack_config(stack)["gpufleet:cluster"])
    raw.pop("cloud")
    return raw  # type: ignore[return-value]


class CallRecorder(PlanMocks):
    """PlanMocks that also keeps each invoke's token and provider."""

    def __init__(self):
        super().__init__()
        self.invokes: list[tuple[str, str]] = []

    def call(self, args: pulumi.runtime.MockCallArgs):
        self.invokes.append((args.token, args.provider or ""))
        return super().call(args)


def declare(program, stack: str = "test", project: str | None = None,
            config: dict | None = None) -> tuple[RecordingMonitor, CallRecorder]:
    mocks = CallRecorder()
    monitor = RecordingMonitor(mocks)
    here = find_project()
    run_program(stack, config or {}, program=program, monitor=monitor, project=replace(here, name=project or here.name))
    return monitor, mocks


@pytest.mark.parametrize("cloud,stack,how", [("aws", "aws-train", "provider"), ("aws", "aws-dev", "providers"),
                                              ("azure", "azure-dev", "providers"), ("gcp", "gcp-dev", "provider")])
def test_a_callers_provider_reaches_every_child_and_invoke(cloud, stack, how):
    def program():
        provider = PROVIDERS[cloud]()
        opts = pulumi.ResourceOptions(provider=provider) if how == "provider" else \
            pulumi.ResourceOptions(providers=[provider])
        COMPONENTS[cloud]("gpufleet", stack_args(stack), opts)

    monitor, mocks = declare(program)
    resources = monitor.declared_resources()
    providers = [r for r in resources if r.type.startswith("pulumi:providers:")]
    assert [r.name for r in providers] == ["caller"]
    children = [r for r in resources if r.custom and r not in providers]
    assert len(children) > 5
    assert [r.name for r in children if not r.provider.startswith(providers[0].urn)] == []
    assert mocks.invokes and [t for t, p in mocks.invokes if not p.startswith(providers[0].urn)] == []


@pytest.mark.parametrize("cloud,stack", [("aws", "aws-train"), ("azure", "azure-dev"), ("gcp", "gcp-dev")])
def test_without_a_provider_nothing_declares_one_and_aws_names_the_region_per_resource(cloud, stack):
    monitor, _ = declare(lambda: COMPONENTS[cloud]("gpufleet", stack_args(stack)))
    resources = monitor.declared_resources()
    assert [r.type for r in resources if r.type.startswith("pulumi:providers:")] == []
    assert [r.name for r in resources if r.custom and r.provider] == []
    if cloud == "aws":
        regional = [r for r in resources if r.custom and not r.type.startswith("aws:iam/")]
        assert regional and {r.name: r.inputs.get("region") for r in regional} == {r.name: "us-east-2" for r in regional}


def test_stack_outputs_are_the_typed_attributes():
    result = run_program("test", {"gpufleet:cluster": read_stack_config("aws-dev")["gpufleet:cluster"]})
    # every typed attribute, less the feature outputs (inference, monitoring server) of features this stack lacks
    absent = set(output_names(AwsGpuCluster)) - set(result.outputs)
    assert set(result.outputs) <= set(output_names(AwsGpuCluster))
    assert absent and absent <= set(optional_output_names(AwsGpuCluster))
    assert {"vpc_id", "fleet_name", "cost", "warnings", "connect"} <= set(result.outputs)


def subnet_program(subnet_id, policy_arn=None):
    def program():
        network = pulumi.Output.from_input(subnet_id)  # what a StackReference's output looks like to the program
        args = {**stack_args("aws-dev"), "network": {"existing_subnet_id": network},
                "tags": {"team": pulumi.Output.from_input("research")},
                "access": {**stack_args("aws-dev").get("access", {}),
                           "iam_policy_arns": [pulumi.Output.from_input(policy_arn or "arn:aws:iam::aws:policy/Data")]}}
        AwsGpuCluster("gpufleet", args)
    return program


def test_an_existing_subnet_and_tags_from_other_resources_reach_the_nodes():
    # the plan's getSubnet answers with the zone of the stack config's cluster (main's subnet-zone check)
    monitor, mocks = declare(subnet_program("subnet-0abc1234"),
                             config={"gpufleet:cluster": {"zone": stack_args("aws-dev")["zone"]}})
    resources = {r.name: r for r in monitor.declared_resources()}
    assert "gpufleet-vpc" not in resources  # an existing subnet: no network of gpufleet's
    assert ("aws:ec2/getSubnet:getSubnet", "") in mocks.invokes
    group = resources["gpufleet-nodes"].inputs
    assert group["vpcZoneIdentifiers"] == ["subnet-0abc1234"]
    assert {"key": "team", "propagateAtLaunch": True, "value": "research"} in group["tags"]
    assert resources["gpufleet-role-policy-0"].inputs["policyArn"] == "arn:aws:iam::aws:policy/Data"
    stand_ins = {value for by_cloud in STAND_INS.values() for value in by_cloud.values()}
    text = json.dumps([r.inputs for r in resources.values()])
    assert [s for s in stand_ins if s in text] == []


def test_a_bad_value_from_another_resource_is_refused_by_field_once_known():
    with pytest.raises(pulumi.RunError) as caught:
        declare(lambda: AwsGpuCluster("gpufleet", {**stack_args("aws-dev"), "access": {
            "ssh_public_key": pulumi.Output.from_input("not a key")}}))
    assert str(caught.value).startswith("invalid `gpufleet:cluster` (1 problem(s)):\n  - `access.ssh_public_key`: got "
                                        "'not a key'; expected an OpenSSH public key")


def test_known_problems_are_refused_before_anything_is_declared():
    monitor = RecordingMonitor(PlanMocks())
    with pytest.raises(pulumi.RunError) as caught:
        run_program("test", {}, monitor=monitor, program=lambda: GcpGpuCluster("gpufleet", {
            **stack_args("gcp-dev"), "nodes": 0, "network": {"existing_subnet_id": pulumi.Output.from_input("x")}}))
    assert monitor.declared_resources() == []
    assert "`nodes`: got 0" in str(caught.value)
    assert "`network.existing_subnet_id`: got 'an unresolved Output'; expected a plain value: on gcp" in str(caught.value)


def test_a_component_of_one_cloud_refuses_another_clouds_spec():
    with pytest.raises(SpecError, match="`cloud`: got 'gcp'; expected 'aws'"):
        declare(lambda: AwsGpuCluster("gpufleet", {**stack_args("aws-dev"), "cloud": "gcp"}))


def gcp_names(stack: str, project: str | None = None) -> dict[str, str]:
    monitor, _ = declare(lambda: GcpGpuCluster("gpufleet", stack_args("gcp-dev")), stack=stack, project=project)
    resources = {r.name: r.inputs for r in monitor.declared_resources()}
    return {"account": resources["gpufleet-sa"]["accountId"], "role": resources["gpufleet-health-role"]["roleId"],
            "base": resources["gpufleet-nodes"]["baseInstanceName"],
            "condition": resources["gpufleet-sa-health"]["condition"]["expression"]}


def test_similar_stack_names_and_projects_never_collide_nor_match_each_others_nodes():
    dev, dev_b, other = gcp_names("gcp-dev"), gcp_names("gcp-dev-b"), gcp_names("gcp-dev", project="other-project")
    for a, b in ((dev, dev_b), (dev, other), (dev_b, other)):
        assert all(a[key] != b[key] for key in a), (a, b)
    # The condition allows instances named `<base>-xxxx`; neither cluster's prefix covers the other's nodes.
    for a, b in ((dev, dev_b), (dev_b, dev), (dev, other)):
        prefix = a["condition"].split("/instances/")[1].split('"')[0]
        assert not f"{b['base']}-abcd".startswith(prefix)


def test_aws_health_conditions_differ_between_projects():
    def condition(project):
        monitor, _ = declare(lambda: AwsGpuCluster("gpufleet", stack_args("aws-dev")), stack="dev", project=project)
        policy = [r for r in monitor.declared_resources() if r.type == "aws:iam/rolePolicy:RolePolicy"][0]
        return json.loads(policy.inputs["policy"])["Statement"][0]["Condition"]
    assert condition("team-a") != condition("team-b")


@pytest.mark.parametrize("cloud,stack", [("aws", "aws-dev"), ("azure", "azure-dev"), ("gcp", "gcp-dev")])
def test_growing_the_cluster_changes_only_the_fleet_size(cloud, stack):
    def declared(nodes):
        monitor, _ = declare(lambda: COMPONENTS[cloud]("gpufleet", {**stack_args(stack), "nodes": nodes}))
        return {r.urn: r.inputs for r in monitor.declared_resources()}
    small, large = declared(2), declared(3)
    assert small.keys() == large.keys()
    changed = {urn.split("::")[-1] for urn in small if small[urn] != large[urn]}
    assert changed and changed <= {"gpufleet", "gpufleet-nodes", "gpufleet-spot-nodes"}, changed


def test_azure_takes_the_subnet_key_and_tags_from_other_resources():
    subnet = ("/subscriptions/0000/resourceGroups/platform-net/providers/Microsoft.Network/virtualNetworks/hub/"
              "subnets/gpu")
    key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcH"
    monitor, _ = declare(lambda: AzureGpuCluster("gpufleet", {
        **stack_args("azure-dev"), "network": {"existing_subnet_id": pulumi.Output.from_input(subnet)},
        "access": {"ssh_public_key": pulumi.Output.from_input(key)}, "tags": {"team": pulumi.Output.from_input("ml")}}))
    resources = monitor.declared_resources()
    assert [r.name for r in resources if r.type in ("azure-native:resources:ResourceGroup",
                                                    "azure-native:network:VirtualNetwork")] == []
    scale_set = [r for r in resources if r.type == "azure-native:compute:VirtualMachineScaleSet"][0].inputs
    assert scale_set["resourceGroupName"] == "platform-net" and scale_set["tags"]["team"] == "ml"
    profile = scale_set["virtualMachineProfile"]
    nic = profile["networkProfile"]["networkInterfaceConfigurations"][0]
    assert nic["ipConfigurations"][0]["subnet"]["id"] == subnet
    assert key in json.dumps(profile["osProfile"])
    stand_ins = {value for by_cloud in STAND_INS.values() for value in by_cloud.values()}
    assert [s for s in stand_ins if s in json.dumps([r.inputs for r in resources])] == []


def test_a_parsed_spec_is_still_accepted():
    from gpufleet import parse_cluster_spec
    spec = parse_cluster_spec(read_stack_config("aws-dev")["gpufleet:cluster"])
    from_spec, _ = declare(lambda: AwsGpuCluster("gpufleet", spec))
    from_args, _ = declare(lambda: AwsGpuCluster("gpufleet", stack_args("aws-dev")))
    assert [r.inputs for r in from_spec.declared_resources()] == [r.inputs for r in from_args.declared_resources()]


def test_a_subnet_still_unknown_in_a_preview_declares_the_cluster_without_failing():
    def program():
        pending = aws.ec2.Vpc("platform", cidr_block="10.1.0.0/16").default_route_table_id  # unknown in a preview
        AwsGpuCluster("gpufleet", {**stack_args("aws-dev"), "network": {"existing_subnet_id": pending}})

    monitor = RecordingMonitor(PlanMocks())
    run_program("test", {}, program=program, monitor=monitor, preview=True)
    names = {r.name for r in monitor.declared_resources()}
    assert {"gpufleet-nodes", "gpufleet-lt", "gpufleet-sg"} <= names and "gpufleet-vpc" not in names


FEATURES = {  # main's children (storage, permissions, serving, monitoring server, capacity block schedules)
    "aws-train": {"market": {"type": "on-demand", "capacity_reservation_id": "cr-0123456789abcdef0", "capacity_block": True,
                             "capacity_block_start": "2099-01-10T11:30:00Z",
                             "capacity_block_end": "2099-01-12T11:30:00Z"},
                  "storage": {"shared": {"kind": "lustre", "capacity_gib": 4800, "throughput": 500,
                                         "data_repository": "s3://training-data/imagenet/"}},
                  "access": {"iam_policy_arns": ["arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess"],
                             "buckets_read": ["training-data"], "container_registry_read": True},
                  "monitoring": {"server": True},
                  # With a Capacity Block (the watcher), Lustre and every node part the user data would pass AWS's
                  # 16 KB (a refusal the pipeline tests cover); this test is about the children's providers.
                  "node": {"exporters": {"node": False}}},
    "aws-infer": {"monitoring": {"server": True}},
    "azure-infer": {"monitoring": {"server": True}, "access": {"container_registry_read": True}},
    "gcp-infer": {"monitoring": {"server": True}, "access": {"container_registry_read": True}},
}


@pytest.mark.parametrize("stack", sorted(FEATURES))
def test_every_feature_child_inherits_the_callers_provider_and_names_the_region(stack):
    cloud = stack.split("-")[0]
    base = stack_args(stack)
    args = {**base, **FEATURES[stack], "access": {**base.get("access", {}), **FEATURES[stack].get("access", {})}}

    def program():
        COMPONENTS[cloud]("gpufleet", args, pulumi.ResourceOptions(provider=PROVIDERS[cloud]()))

    monitor, mocks = declare(program, config={"gpufleet:cluster": {"zone": args.get("zone")}})
    resources = monitor.declared_resources()
    providers = [r for r in resources if r.type.startswith("pulumi:providers:")]
    assert [r.name for r in providers] == ["caller"]
    children = [r for r in resources if r.custom and r not in providers]
    assert [r.name for r in children if not r.provider.startswith(providers[0].urn)] == []
    assert mocks.invokes and [t for t, p in mocks.invokes if not p.startswith(providers[0].urn)] == []
    if cloud == "aws":
        regional = [r for r in children if not r.type.startswith("aws:iam/")]
        assert {r.name: r.inputs.get("region") for r in regional} == {r.name: args["region"] for r in regional}
        types = {r.type for r in regional}
        wanted = {"aws:autoscaling/schedule:Schedule", "aws:fsx/lustreFileSystem:LustreFileSystem",
                  "aws:ec2/instance:Instance"} if stack == "aws-train" else {"aws:lb/loadBalancer:LoadBalancer"}
        assert wanted <= types


def test_a_program_declares_an_elastic_group_through_the_typed_args():
    """`nodes_range` and `fallback_zones` in GpuClusterArgs (what another language's SDK sends, in snake case)
    declare gcp-burst's elastic group: its template, no instance group, a controller that powers nodes up."""
    args = stack_args("gcp-burst")
    args.pop("nodes")
    args["nodes_range"] = {"min": 0, "max": 4}
    monitor, _ = declare(lambda: GcpGpuCluster("gpufleet", args), stack="gcp-burst")
    types = [r.type for r in monitor.declared_resources()]
    assert "gcp:compute/instanceGroupManager:InstanceGroupManager" not in types
    assert "gcp:compute/instanceTemplate:InstanceTemplate" in types
    controller = next(r for r in monitor.declared_resources() if r.name == "gpufleet-slurm-controller")
    assert "/etc/gpufleet-slurm/power.json" in controller.inputs["metadata"]["user-data"]
    assert "us-central1-c" in controller.inputs["metadata"]["user-data"]  # a fallback zone of the power config


def test_nodes_and_nodes_range_together_are_refused_at_the_field():
    with pytest.raises(SpecError, match="`nodes_range`: got .*either `nodes` .* or `nodes_range`"):
        declare(lambda: GcpGpuCluster("gpufleet", {**stack_args("gcp-burst"), "nodes": 2,
                                                   "nodes_range": {"min": 0, "max": 4}}))
