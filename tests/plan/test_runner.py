"""The offline planner's own behaviour, apart from what a stack declares."""

from __future__ import annotations

import pulumi
import pulumi_azure_native as azure_native

from gpufleet.plan.mocks import PlanMocks, RecordingMonitor
from gpufleet.plan.runner import run_program


class AliasRecordingMonitor(RecordingMonitor):
    def __init__(self):
        super().__init__(PlanMocks())
        self.aliases: dict[str, int] = {}

    def RegisterResource(self, request):
        self.aliases[request.name] = len(request.aliases)
        return super().RegisterResource(request)


def test_a_plan_registers_resources_without_their_sdk_aliases():
    """azure-native gives each resource one alias per API version; a plan has no state to match them against and
    skips resolving them (a third of an Azure plan's time)."""
    sdk_aliases = []

    def seen_by_the_resource(args: pulumi.ResourceTransformationArgs) -> None:
        sdk_aliases.extend(args.opts.aliases or [])

    monitor = AliasRecordingMonitor()
    run_program("test", {"azure-native:location": "eastus"}, monitor=monitor, program=lambda: (
        azure_native.network.NetworkSecurityGroup("nsg", resource_group_name="rg",
                                                  opts=pulumi.ResourceOptions(transformations=[seen_by_the_resource]))))
    assert len(sdk_aliases) > 10
    assert monitor.aliases["nsg"] == 0
    assert monitor.declared_resources()[0].type == "azure-native:network:NetworkSecurityGroup"
