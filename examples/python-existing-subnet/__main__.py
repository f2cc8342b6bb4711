"""A training team's program using gpufleet as a library.

- The subnet comes from the platform team's network stack (a StackReference Output): gpufleet checks it once
  Pulumi knows it, and creates no network of its own.
- The cluster is deployed with the team's own AWS provider (another account through an assumed role); every
  child resource and lookup of the component uses it.
"""

import pulumi
import pulumi_aws as aws

from gpufleet import AwsGpuCluster, GpuClusterArgs

config = pulumi.Config()
network = pulumi.StackReference(config.get("networkStack") or "platform/network/prod")
deploy_role = config.get("deployRoleArn")

training_account = aws.Provider(
    "training-account",
    region="us-east-2",
    assume_roles=[aws.ProviderAssumeRoleArgs(role_arn=deploy_role)] if deploy_role else None,
    default_tags=aws.ProviderDefaultTagsArgs(tags={"cost-center": "ml-research"}),
)

cluster = AwsGpuCluster(
    "train",
    GpuClusterArgs(
        region="us-east-2",
        zone="use2-az2",
        nodes=2,
        accelerator={"gpu": "H100", "gpus_per_node": 8},
        market={"type": "spot"},
        network={"existing_subnet_id": network.get_output("private_subnet_id")},
        tags={"team": "research"},
        access={"iam_policy_arns": ["arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess"]},
    ),
    opts=pulumi.ResourceOptions(provider=training_account),
)

pulumi.export("fleet_name", cluster.fleet_name)
pulumi.export("connect", cluster.connect)
pulumi.export("estimated_usd_per_hour", cluster.estimated_usd_per_hour)
