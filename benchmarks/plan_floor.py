"""The floor a `gpufleet plan` of an AWS stack is measured against: the least any offline Pulumi plan of an AWS GPU
fleet can cost in one process.

It imports the Pulumi SDK and pulumi-aws, sets the mocks, and declares and resolves a VPC, a subnet, a launch
template and an Auto Scaling group, then prints one line. benchmarks/plan_vs_floor.py runs it beside
`gpufleet plan aws-train` and reports the ratio of the two.

    .venv/bin/python benchmarks/plan_floor.py [NODES] [--like-cli]

`--like-cli` runs it with the `gpufleet` command's process settings (gpufleet.plan.entry: the cyclic garbage
collector off, no interpreter teardown at exit), to show how much of the ratio those settings account for.
"""

from __future__ import annotations

import gc
import os
import sys

import pulumi
import pulumi_aws as aws


class FloorMocks(pulumi.runtime.Mocks):
    """Placeholder ids and the inputs echoed back as state, as gpufleet's plan mocks answer."""

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        return f"{args.name}-id", {**args.inputs, "arn": f"arn:mock:{args.typ}:{args.name}", "latestVersion": 1}

    def call(self, args: pulumi.runtime.MockCallArgs):
        return {}


def program(nodes: int) -> dict[str, pulumi.Output]:
    vpc = aws.ec2.Vpc("floor", cidr_block="10.0.0.0/16", enable_dns_hostnames=True, enable_dns_support=True)
    subnet = aws.ec2.Subnet("floor", vpc_id=vpc.id, cidr_block="10.0.0.0/20", availability_zone_id="use2-az2")
    template = aws.ec2.LaunchTemplate(
        "floor", image_id="ami-00000000000000000", instance_type="p5.48xlarge",
        metadata_options=aws.ec2.LaunchTemplateMetadataOptionsArgs(http_tokens="required", http_endpoint="enabled"),
        network_interfaces=[aws.ec2.LaunchTemplateNetworkInterfaceArgs(subnet_id=subnet.id, device_index=0,
                                                                      interface_type="efa")])
    group = aws.autoscaling.Group(
        "floor", min_size=nodes, max_size=nodes, desired_capacity=nodes, vpc_zone_identifiers=[subnet.id],
        launch_template=aws.autoscaling.GroupLaunchTemplateArgs(id=template.id, version=template.latest_version))
    return {"vpc": vpc.id, "subnet": subnet.id, "template": template.id, "group": group.id}


def main() -> int:
    numbers = [arg for arg in sys.argv[1:] if not arg.startswith("--")]
    nodes = int(numbers[0]) if numbers else 2
    pulumi.runtime.set_mocks(FloorMocks(), project="floor", stack="floor", preview=False)
    resolved: dict[str, str] = {}

    @pulumi.runtime.test
    def declare_and_resolve():
        return pulumi.Output.all(**program(nodes)).apply(resolved.update)

    declare_and_resolve()
    print(f"floor: {len(resolved)} resources resolved, group of {nodes} nodes ({resolved['group']})")
    return 0


if __name__ == "__main__":
    if "--like-cli" not in sys.argv:
        sys.exit(main())
    gc.disable()  # before pulumi_aws loads its modules (on first use, in program()), as the CLI does
    code = main()
    sys.stdout.flush()
    os._exit(code)
