"""`gpufleet:index:AwsGpuCluster`: a multi-node GPU training cluster on AWS with EFA.

The component validates the spec against the catalog before it registers itself, so bad input declares
nothing. Children are named f"{name}-{role}" (roles: provider, vpc, igw, subnet, nat-subnet, nat-ip, nat, routes,
nat-routes, sg, sg-*, pg, role, role-ssm, role-health, role-policy-*, role-buckets-read, profile, key, fs-sg, fs-sg-*,
fsx, fsx-s3, efs, efs-mount, lt, nodes) and parented to the component.
"""

from __future__ import annotations

import pulumi
import pulumi_aws as aws

from gpufleet import cloud_init

from ..catalog.selector import Selection
from ..monitoring.scrape import aws_jobs, scrape_config_text
from ..outputs import common_outputs, exporter_jobs
from ..pipeline import plan_cluster
from ..serving import serving_outputs
from ..spec import ClusterSpec
from ..storage_boot import user_data_with_source
from .fleet import build_fleet
from .identity import build_instance_profile
from .launch_template import build_launch_template
from .monitoring_server import build_monitoring_server, plan_monitoring
from .network import build_network
from .outputs import access_outputs
from .permissions import grant_node_permissions
from .placement import build_placement_group
from .security import build_security_group
from .serving import build_serving
from .storage import build_shared_storage
from .tagging import Tagger, tagger

TYPE_TOKEN = "gpufleet:index:AwsGpuCluster"


class AwsGpuCluster(pulumi.ComponentResource):
    """GPU nodes in one AZ behind a NAT, in a cluster placement group, with EFA on every EFA-capable card."""

    outputs: dict[str, pulumi.Input]

    def __init__(self, name: str, spec: ClusterSpec, opts: pulumi.ResourceOptions | None = None):
        selection = plan_cluster(spec, name=name)  # raises SpecError before anything is declared
        user_data = selection.cloud_config  # encoded in _build, once a shared filesystem's address is known
        super().__init__(TYPE_TOKEN, name, None, opts)
        self.selection = selection
        self.outputs = _build(name, selection, user_data, self)
        self.node_role = self.outputs["node_role"]
        self.register_outputs(self.outputs)


def _build(name: str, selection: Selection, user_data: str, parent: pulumi.ComponentResource) -> dict:
    spec = selection.spec
    monitoring = plan_monitoring(selection)  # refuses unset secrets before anything is declared
    tag = tagger(pulumi.get_stack(), name, spec.tags)
    provider = aws.Provider(f"{name}-provider", region=spec.region, opts=pulumi.ResourceOptions(parent=parent))
    child = pulumi.ResourceOptions(parent=parent, provider=provider)
    network = build_network(name, spec, tag, child)
    group = build_security_group(name, spec, network.vpc_id, tag, child)
    placement = build_placement_group(name, selection, tag, child)
    profile = build_instance_profile(name, pulumi.get_stack(), tag, child)
    extra_policies = grant_node_permissions(name, spec, profile.role, child)
    shared = build_shared_storage(name, spec, network.vpc_id, network.subnet_id, group.id, network.vpc_cidr,
                                  tag, child)
    user_data = user_data_with_source(user_data, shared.source if shared else None,
                                      lambda text: cloud_init.encode_user_data(text, "aws"))
    key_name = _key_pair(name, spec, tag, child)
    template = build_launch_template(name, selection, group.id, profile, user_data, key_name, tag, child)
    fleet = build_fleet(name, selection, template, network.subnet_id, placement, tag, child)
    serving = build_serving(name, spec, network.vpc_id, network.vpc_cidr, network.subnet_id, network.public_subnet_id,
                            group, profile.role, fleet, tag, child) if spec.inference else None
    return {
        **common_outputs(selection),
        "vpc_id": network.vpc_id,
        "subnet_id": network.subnet_id,
        "security_group_id": group.id,
        "placement_group": placement.name if placement else None,
        "launch_template_id": template.id,
        "fleet_name": fleet.name,
        "node_role": profile.role,
        "node_instance_profile_arn": profile.arn,
        "node_extra_policy_arns": extra_policies,
        "shared_filesystem_id": shared.id if shared else None,
        "shared_filesystem_source": shared.source if shared else None,
        **access_outputs(spec.region, fleet.name, selection.instance.gpus),
        "prometheus_scrape_config": scrape_config_text(aws_jobs(pulumi.get_stack(), spec.region, exporter_jobs(spec))),
        **(serving_outputs(selection, serving.load_balancer.dns_name) if serving else {}),
        **build_monitoring_server(name, selection, monitoring, network.vpc_id, network.subnet_id, group.id, tag, child),
    }


def _key_pair(name: str, spec: ClusterSpec, tag: Tagger, opts: pulumi.ResourceOptions) -> pulumi.Output[str] | None:
    if spec.access.ssh_public_key is None:
        return None
    return aws.ec2.KeyPair(f"{name}-key", public_key=spec.access.ssh_public_key, tags=tag("key"), opts=opts).key_name
