"""Mock runtime for plans and tests: records every declared resource and answers invokes from a fixed table.

Ids and computed outputs are placeholders (`<name>-id`), never random, so plans are byte-identical between runs.
An invoke without an entry in the table fails loudly instead of resolving to None (a silent-pass trap).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

import pulumi
from google.protobuf import json_format
from pulumi.runtime import rpc
from pulumi.runtime.mocks import MockMonitor

from .calls import CALLS

PLACEHOLDER_SUFFIX = "-id"
SECRET_MASK = "[secret]"
# Outputs the provider computes that the program reads back; answered with fixed placeholders.
SELF_LINK_SUFFIX = "-self-link"  # GCP resources' computed `selfLink`, a placeholder like the ids
COMPUTED_OUTPUTS: dict[str, dict] = {
    "aws:ec2/launchTemplate:LaunchTemplate": {"latestVersion": 1, "defaultVersion": 1},
    # Shared filesystems' addresses (storage.shared), which the nodes' user data carries.
    "aws:fsx/lustreFileSystem:LustreFileSystem": {"dnsName": "fs-placeholder.fsx.example.amazonaws.com",
                                                  "mountName": "placeholder"},
    "aws:efs/mountTarget:MountTarget": {"dnsName": "fs-placeholder.efs.example.amazonaws.com"},
    "azure-native:storagecache:AmlFilesystem": {"clientInfo": {"mgsAddress": "10.0.128.4"}},
    # The system-assigned identities' principals, which role assignments take (`principalId` is required there).
    "azure-native:compute:VirtualMachineScaleSet": {"identity": {"type": "SystemAssigned",
                                                                 "principalId": "11111111-1111-1111-1111-111111111111"}},
    "azure-native:compute:VirtualMachine": {"identity": {"type": "SystemAssigned",
                                                         "principalId": "22222222-2222-2222-2222-222222222222"}},
    "gcp:lustre/instance:Instance": {"mountPoint": "10.90.0.2@tcp:/lustrefs"},
    "gcp:compute/globalAddress:GlobalAddress": {"address": "10.90.0.0"},
    "gcp:filestore/instance:Instance": {"networks": [{"ipAddresses": ["10.91.0.2"]}]},
    # The Slurm controller's stable private address (scheduler.kind: slurm), which its slurm.conf and the nodes carry.
    "aws:ec2/networkInterface:NetworkInterface": {"privateIp": "10.0.0.10"},
    "gcp:compute/address:Address": {"address": "10.0.0.10"},
    "azure-native:network:NetworkInterface": {"ipConfigurations": [{"privateIPAddress": "10.0.0.10"}]},
    "aws:lb/loadBalancer:LoadBalancer": {"dnsName": "internal-lb-placeholder.elb.amazonaws.com"},
    "gcp:compute/instanceGroupManager:InstanceGroupManager": {"instanceGroup": "instance-group-placeholder"},
    "gcp:compute/forwardingRule:ForwardingRule": {"ipAddress": "10.0.0.250"},
}


@dataclass(frozen=True)
class DeclaredResource:
    """One resource as the engine would receive it: inputs exactly as the mock monitor saw them (camelCase)."""

    urn: str
    type: str
    name: str
    parent: str
    inputs: dict
    custom: bool
    provider: str = ""
    """The provider reference (`<provider urn>::<id>`) the resource was registered with; empty for the default."""


class RecordingMonitor(MockMonitor):
    """A mock monitor that also keeps each resource's parent URN and inputs, which `MockResourceArgs` lacks."""

    def __init__(self, mocks: PlanMocks):
        super().__init__(mocks)
        self._lock = threading.Lock()
        self.declared: dict[str, DeclaredResource] = {}

    def RegisterResource(self, request):
        references = _resource_references(json_format.MessageToDict(request.object))
        if references:
            # The engine would store a reference; offline, reading it back starts a lookup that outlives the run.
            raise TypeError(f"{request.type} {request.name}: input {', '.join(references)} is a resource object; "
                            "pass its name, id or ARN instead")
        with self._lock:
            response = super().RegisterResource(request)
            if request.type != "pulumi:pulumi:Stack":
                inputs = rpc.deserialize_properties(request.object)
                self.declared[response.urn] = DeclaredResource(
                    urn=response.urn, type=request.type, name=request.name, parent=request.parent,
                    inputs=_plain(inputs), custom=bool(request.custom), provider=request.provider)
        return response

    def declared_resources(self) -> list[DeclaredResource]:
        """Every declared resource, sorted by URN so that plans are byte-identical between runs."""
        return [self.declared[urn] for urn in sorted(self.declared)]


def _resource_references(value, path: str = "") -> list[str]:
    """The input paths that hold a whole resource (serialized as a resource reference) instead of a value."""
    if isinstance(value, dict):
        if value.get(rpc._special_sig_key) == rpc._special_resource_sig:
            return [path or "(root)"]
        return [found for key, item in value.items()
                for found in _resource_references(item, f"{path}.{key}" if path else key)]
    if isinstance(value, list):
        return [found for index, item in enumerate(value) for found in _resource_references(item, f"{path}[{index}]")]
    return []


def _plain(value):
    """Inputs as JSON-ready data: dicts with sorted keys, lists, scalars; Pulumi secrets masked, as previews show them."""
    if rpc.is_rpc_secret(value):
        return SECRET_MASK
    if isinstance(value, dict):
        return {key: _plain(value[key]) for key in sorted(value)}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)  # the engine's wire format has only doubles; 2.0 was written as 2
    return value


class UnknownInvokeError(RuntimeError):
    """The program called an invoke that the plan cannot answer offline."""


class PlanMocks(pulumi.runtime.Mocks):
    """Answers resources with placeholder state and invokes by token from `calls`."""

    def __init__(self, calls: dict[str, Callable[[dict], dict]] | None = None):
        self.calls = CALLS if calls is None else calls

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        placeholder_id = f"{args.name}{PLACEHOLDER_SUFFIX}"
        state = {"name": args.name, **args.inputs, "arn": f"arn:mock:{args.typ}:{args.name}",
                 **COMPUTED_OUTPUTS.get(args.typ, {})}
        if args.typ.startswith("gcp:"):
            state.setdefault("selfLink", f"{args.name}{SELF_LINK_SUFFIX}")
        if args.typ == "aws:s3/bucket:Bucket" and args.inputs.get("bucketPrefix"):
            # AWS names a prefixed bucket at creation: each bucket gets its own stand-in, so outputs do not mix them up.
            bucket = f"{args.inputs['bucketPrefix']}placeholder"
            state.update(bucket=bucket, arn=f"arn:aws:s3:::{bucket}")
        return placeholder_id, state

    def call(self, args: pulumi.runtime.MockCallArgs):
        answer = self.calls.get(args.token)
        if answer is None:
            raise UnknownInvokeError(f"the offline plan has no answer for invoke {args.token!r}; add one to "
                                     "components/plan/calls/")
        return answer(dict(args.args))
