"""The launch template every node boots from: EFA interfaces, IMDSv2, an encrypted root volume, no public IP.

Nothing here depends on the node count, so scaling the fleet never creates a new template version.
"""

from __future__ import annotations

import pulumi
import pulumi_aws as aws

from ..catalog.selector import Selection
from .fabric import interface_layout
from .image import ROOT_DEVICE, image_id
from .tagging import Tagger

IMDS_HOP_LIMIT = 1  # token responses stay on the node: containers cannot borrow the node's role
ROOT_VOLUME_TYPE = "gp3"
TAGGED_AT_LAUNCH = ("instance", "volume", "network-interface")


def build_launch_template(name: str, selection: Selection, security_group_id: pulumi.Input[str],
                          profile: aws.iam.InstanceProfile, user_data_base64: pulumi.Input[str],
                          key_name: pulumi.Input[str] | None, tag: Tagger,
                          opts: pulumi.ResourceOptions, pinned_image: pulumi.Input[str] | None = None,
                          instance_tags: dict[str, pulumi.Input[str]] | None = None) -> aws.ec2.LaunchTemplate:
    """`instance_tags` (the Slurm controller's address and key name) go on the instances and are readable through
    IMDS, which is turned on for instance tags only then."""
    spec = selection.spec
    return aws.ec2.LaunchTemplate(
        f"{name}-lt",
        description=f"gpufleet {selection.instance.name} node",
        image_id=image_id(spec, pulumi.InvokeOptions(parent=opts.parent), pinned_image),
        instance_type=selection.instance.name,
        key_name=key_name,
        user_data=user_data_base64,
        update_default_version=True,
        ebs_optimized="true",
        iam_instance_profile=aws.ec2.LaunchTemplateIamInstanceProfileArgs(arn=profile.arn),
        metadata_options=aws.ec2.LaunchTemplateMetadataOptionsArgs(
            http_endpoint="enabled", http_tokens="required", http_put_response_hop_limit=IMDS_HOP_LIMIT,
            instance_metadata_tags="enabled" if instance_tags else "disabled"),
        block_device_mappings=[aws.ec2.LaunchTemplateBlockDeviceMappingArgs(
            device_name=ROOT_DEVICE,
            ebs=aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(
                volume_size=spec.root_disk_gib, volume_type=ROOT_VOLUME_TYPE, encrypted="true",
                delete_on_termination="true"))],
        network_interfaces=network_interfaces(selection, security_group_id),
        instance_market_options=_capacity_block_market(selection),
        capacity_reservation_specification=_reservation(selection),
        tag_specifications=[aws.ec2.LaunchTemplateTagSpecificationArgs(
            resource_type=kind, tags={**tag("node"), **(instance_tags if kind == "instance" and instance_tags else {})})
            for kind in TAGGED_AT_LAUNCH],
        tags=tag("lt"),
        region=spec.region,
        opts=opts,
    )


def network_interfaces(selection: Selection, security_group_id: pulumi.Input[str]) -> list:
    """One interface per slot of the EFA layout; security groups on each, since multi-NIC templates need that."""
    return [
        aws.ec2.LaunchTemplateNetworkInterfaceArgs(
            network_card_index=slot.network_card_index,
            device_index=slot.device_index,
            interface_type=slot.interface_type,
            security_groups=[security_group_id],
            associate_public_ip_address="false" if slot.device_index == 0 and slot.network_card_index == 0 else None,
            delete_on_termination="true",
        )
        for slot in interface_layout(selection.instance, efa=selection.fabric == "efa")
    ]


def _capacity_block_market(selection: Selection) -> aws.ec2.LaunchTemplateInstanceMarketOptionsArgs | None:
    if not selection.spec.market.capacity_block:
        return None
    return aws.ec2.LaunchTemplateInstanceMarketOptionsArgs(market_type="capacity-block")


def _reservation(selection: Selection) -> aws.ec2.LaunchTemplateCapacityReservationSpecificationArgs | None:
    reservation_id = selection.spec.market.capacity_reservation_id
    if reservation_id is None:
        return None
    return aws.ec2.LaunchTemplateCapacityReservationSpecificationArgs(
        capacity_reservation_target=aws.ec2.LaunchTemplateCapacityReservationSpecificationCapacityReservationTargetArgs(
            capacity_reservation_id=reservation_id))
