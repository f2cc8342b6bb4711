"""AWS rules: IMDSv2, encrypted EBS, no public IPs on GPU nodes, no open admin/exporter ports, EFA networking."""

from __future__ import annotations

import re
from collections.abc import Iterable

from .common import ADMIN_PORTS, EXPORTER_PORTS, as_list, is_open, port_range_hits, truthy
from .model import Finding, Resource

LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
INSTANCE = "aws:ec2/instance:Instance"
ASG = "aws:autoscaling/group:Group"
PLACEMENT_GROUP = "aws:ec2/placementGroup:PlacementGroup"
SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"
SG_RULE = "aws:ec2/securityGroupRule:SecurityGroupRule"
INGRESS_RULE = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
EGRESS_RULE = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"
EBS_VOLUME = "aws:ebs/volume:Volume"
BUCKET = "aws:s3/bucket:Bucket"
PUBLIC_ACCESS_BLOCK = "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock"
PUBLIC_ACCESS_FLAGS = ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")
GPU_FAMILY = re.compile(r"^(p\d|g\d|gr\d|trn\d|inf\d|dl\d)[a-z-]*\.", re.IGNORECASE)
EFA_TYPES = ("efa", "efa-only")


def is_gpu_node(resource: Resource) -> bool:
    if resource.type not in (LAUNCH_TEMPLATE, INSTANCE):
        return False
    return bool(GPU_FAMILY.match(str(resource.props.get("instanceType") or "")))


def efa_interfaces(resource: Resource) -> list[dict]:
    return [n for n in as_list(resource.props.get("networkInterfaces"))
            if isinstance(n, dict) and n.get("interfaceType") in EFA_TYPES]


def imdsv2(resource: Resource, config: dict) -> Iterable[Finding]:
    if not is_gpu_node(resource):
        return
    options = resource.props.get("metadataOptions") or {}
    if options.get("httpEndpoint") == "disabled":
        return
    if options.get("httpTokens") != "required":
        yield Finding(f"IMDSv1 is allowed (metadataOptions.httpTokens={options.get('httpTokens')!r})",
                      "set metadataOptions.httpTokens to \"required\"")
    if options.get("httpPutResponseHopLimit") not in (1, "1"):
        yield Finding(f"IMDS hop limit is {options.get('httpPutResponseHopLimit')!r}: containers can reach the "
                      "node's credentials", "set metadataOptions.httpPutResponseHopLimit to 1")


def encrypted_ebs(resource: Resource, config: dict) -> Iterable[Finding]:
    if resource.type == EBS_VOLUME and not truthy(resource.props.get("encrypted")):
        yield Finding("the EBS volume is not encrypted", "set encrypted: true")
    if resource.type == LAUNCH_TEMPLATE:
        for mapping in as_list(resource.props.get("blockDeviceMappings")):
            ebs = (mapping or {}).get("ebs")
            if isinstance(ebs, dict) and not truthy(ebs.get("encrypted")) and not ebs.get("snapshotId"):
                yield Finding(f"EBS volume {mapping.get('deviceName')} is not encrypted",
                              "set blockDeviceMappings[].ebs.encrypted to \"true\"")
    if resource.type == INSTANCE:
        for key in ("rootBlockDevice",):
            block = resource.props.get(key)
            if isinstance(block, dict) and not truthy(block.get("encrypted")):
                yield Finding("the root volume is not encrypted", "set rootBlockDevice.encrypted: true")
        for block in as_list(resource.props.get("ebsBlockDevices")):
            if isinstance(block, dict) and not truthy(block.get("encrypted")):
                yield Finding(f"EBS volume {block.get('deviceName')} is not encrypted",
                              "set ebsBlockDevices[].encrypted: true")


def no_public_ip(resource: Resource, config: dict) -> Iterable[Finding]:
    if not is_gpu_node(resource):
        return
    if resource.type == INSTANCE and truthy(resource.props.get("associatePublicIpAddress")):
        yield Finding("the GPU instance gets a public IP", "remove associatePublicIpAddress; reach nodes "
                      "through SSM or a bastion")
    for nic in as_list(resource.props.get("networkInterfaces")):
        if isinstance(nic, dict) and truthy(nic.get("associatePublicIpAddress")):
            yield Finding(f"network interface {nic.get('networkCardIndex', 0)}/{nic.get('deviceIndex', 0)} gets "
                          "a public IP", "set associatePublicIpAddress to \"false\" and use a NAT gateway")


def no_open_ingress(resource: Resource, config: dict) -> Iterable[Finding]:
    ports = ADMIN_PORTS + EXPORTER_PORTS
    if resource.type == SECURITY_GROUP:
        for rule in as_list(resource.props.get("ingress")):
            if isinstance(rule, dict):
                yield from _open(rule, as_list(rule.get("cidrBlocks")) + as_list(rule.get("ipv6CidrBlocks")),
                                 ports)
    elif resource.type == SG_RULE and resource.props.get("type") == "ingress":
        cidrs = as_list(resource.props.get("cidrBlocks")) + as_list(resource.props.get("ipv6CidrBlocks"))
        yield from _open(resource.props, cidrs, ports)
    elif resource.type == INGRESS_RULE:
        yield from _open(resource.props, [resource.props.get("cidrIpv4"), resource.props.get("cidrIpv6")], ports)


def _open(rule: dict, cidrs: list, ports: tuple[int, ...]) -> Iterable[Finding]:
    open_cidrs = [c for c in cidrs if is_open(c)]
    if not open_cidrs:
        return
    protocol = str(rule.get("protocol", rule.get("ipProtocol", "-1")))
    if protocol not in ("-1", "tcp", "6", "all"):
        return
    hits = port_range_hits(rule.get("fromPort"), rule.get("toPort"), ports) if protocol != "-1" else list(ports)
    if hits:
        yield Finding(f"ingress from {', '.join(open_cidrs)} reaches port(s) {', '.join(map(str, hits))}",
                      "allow only your admin or monitoring CIDRs, or use SSM Session Manager")


def private_buckets(resources: list[Resource], config: dict):
    """Every bucket has a public access block with all four settings on (the node config bucket holds the nodes'
    whole cloud-config; a bucket policy or ACL added later must not open it)."""
    blocks = [r for r in resources if r.type == PUBLIC_ACCESS_BLOCK]
    for bucket in (r for r in resources if r.type == BUCKET):
        block = next((b for b in blocks if b.props.get("bucket") in bucket.ids()), None)
        off = PUBLIC_ACCESS_FLAGS if block is None else [
            f for f in PUBLIC_ACCESS_FLAGS if not truthy(block.props.get(f))]
        if off:
            yield bucket, Finding(f"bucket {bucket.name} does not block public access ({', '.join(off)} not set)",
                                  "declare an aws.s3.BucketPublicAccessBlock for it with all four settings true")


def _sg_ids(nodes: list[dict]) -> set[str]:
    return {g for n in nodes for g in as_list(n.get("securityGroups")) if isinstance(g, str)}


def efa_self_referencing_sg(resources: list[Resource], config: dict):
    """Error 4126 / "Unable to insert remote address": EFA needs all-traffic self ingress AND egress."""
    rules = [r for r in resources if r.type in (INGRESS_RULE, EGRESS_RULE, SG_RULE)]
    groups = [r for r in resources if r.type == SECURITY_GROUP]
    for node in resources:
        nodes = efa_interfaces(node)
        if not nodes:
            continue
        for group_id in sorted(_sg_ids(nodes)):
            group = next((g for g in groups if group_id in g.ids()), None)
            ingress = _self_rule(group_id, group, rules, "ingress")
            egress = _self_rule(group_id, group, rules, "egress")
            missing = [d for d, ok in (("ingress", ingress), ("egress", egress)) if not ok]
            if missing:
                yield node, Finding(f"security group {group_id} of the EFA interfaces has no all-traffic "
                                    f"self-referencing {' or '.join(missing)} (EFA fails with Error 4126)",
                                    "add ingress and egress rules with ipProtocol -1 that reference the group "
                                    "itself")


def _self_rule(group_id: str, group: Resource | None, rules: list[Resource], direction: str) -> bool:
    ids = group.ids() if group else {group_id}
    if group:
        for rule in as_list(group.props.get(direction)):
            if isinstance(rule, dict) and str(rule.get("protocol")) in ("-1", "all") and (
                    truthy(rule.get("self")) or ids & set(as_list(rule.get("securityGroups")))):
                return True
    wanted = INGRESS_RULE if direction == "ingress" else EGRESS_RULE
    for rule in rules:
        props = rule.props
        if str(props.get("ipProtocol", props.get("protocol"))) not in ("-1", "all"):
            continue
        group, peer = props.get("securityGroupId"), props.get("referencedSecurityGroupId")
        if rule.type == wanted and group in ids and peer in ids:
            return True
        if rule.type == SG_RULE and props.get("type") == direction and props.get("securityGroupId") in ids and (
                truthy(props.get("self")) or props.get("sourceSecurityGroupId") in ids):
            return True
    return False


def efa_placement_group(resources: list[Resource], config: dict):
    """Multi-node EFA fleets need a cluster placement group; none with a Capacity Block or a targeted ODCR."""
    templates = {i: r for r in resources if r.type == LAUNCH_TEMPLATE for i in r.ids()}
    groups = {i: r for r in resources if r.type == PLACEMENT_GROUP for i in r.ids()}
    for asg in (r for r in resources if r.type == ASG):
        template = templates.get(template_id(asg.props))
        if template is None:
            continue
        size = max(_num(asg.props.get("maxSize")), _num(asg.props.get("desiredCapacity")))
        group_ref = asg.props.get("placementGroup") or (template.props.get("placement") or {}).get("groupName")
        reserved = _reservation(template)
        if group_ref and reserved:
            yield asg, Finding(f"placement group {group_ref} together with {reserved} (InsufficientInstanceCapacity)",
                               "drop the placement group: the reservation already places the nodes")
            continue
        if efa_interfaces(template) and size > 1 and not reserved:
            group = groups.get(group_ref) if group_ref else None
            if not group_ref:
                yield asg, Finding(f"{size} EFA nodes without a placement group", "add a cluster placement group")
            elif group is not None and group.props.get("strategy") != "cluster":
                yield asg, Finding(f"placement group {group_ref} has strategy {group.props.get('strategy')!r}",
                                   "use strategy \"cluster\" for EFA")


def pg_with_reservation(resource: Resource, config: dict) -> Iterable[Finding]:
    if resource.type not in (LAUNCH_TEMPLATE, INSTANCE):
        return
    placement = resource.props.get("placement") or {}
    group = placement.get("groupName") or placement.get("groupId") or resource.props.get("placementGroup")
    reserved = _reservation(resource)
    if group and reserved:
        yield Finding(f"placement group {group} together with {reserved}", "drop the placement group")


def _reservation(resource: Resource) -> str:
    market = (resource.props.get("instanceMarketOptions") or {}).get("marketType")
    if market == "capacity-block":
        return "a Capacity Block"
    spec = resource.props.get("capacityReservationSpecification") or {}
    target = spec.get("capacityReservationTarget") or {}
    if target.get("capacityReservationId") or target.get("capacityReservationResourceGroupArn"):
        return "a targeted capacity reservation"
    return ""


def template_id(props: dict) -> str | None:
    """The launch template an autoscaling group uses (plain or inside a mixed instances policy)."""
    spec = props.get("launchTemplate") or ((props.get("mixedInstancesPolicy") or {}).get("launchTemplate") or {}).get(
        "launchTemplateSpecification") or {}
    return spec.get("id") or spec.get("launchTemplateId") or spec.get("name") or spec.get("launchTemplateName")


def _num(value) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0
