"""AWS invokes the program makes, answered offline with placeholders (keys camelCase, as the engine returns them)."""

import hashlib
import json

import pulumi


def _cluster_zone() -> str:
    """The spec's zone: a plan assumes an existing subnet is where the spec says (checked for real at deploy)."""
    return (pulumi.Config("gpufleet").get_object("cluster") or {}).get("zone") or "placeholder-az"


def _subnet(args: dict) -> dict:
    """An existing subnet: the plan cannot see it, so its VPC and range are placeholders, its AZ the spec's zone."""
    subnet_id = args.get("id", "subnet-placeholder")
    zone = _cluster_zone()
    return {"id": subnet_id, "vpcId": "vpc-of-" + subnet_id, "cidrBlock": "10.0.0.0/18",
            "availabilityZone": zone, "availabilityZoneId": zone}


def _vpc(args: dict) -> dict:
    vpc_id = args.get("id", "vpc-placeholder")
    return {"id": vpc_id, "cidrBlock": "10.0.0.0/16", "arn": f"arn:aws:ec2:placeholder:vpc/{vpc_id}"}


def _internet_gateway(args: dict) -> dict:
    return {"id": "igw-placeholder", "internetGatewayId": "igw-placeholder", "arn": "arn:aws:ec2:placeholder:igw"}


def _cloudcontrol(args: dict) -> dict:
    """An existing FSx for Lustre filesystem, described through Cloud Control, in a subnet of the spec's zone."""
    identifier = args.get("identifier", "fs-placeholder")
    properties = {"DNSName": f"{identifier}.fsx.placeholder.amazonaws.com", "LustreMountName": "placeholder",
                  "SubnetIds": ["subnet-of-" + identifier]}
    return {"id": identifier, "identifier": identifier, "typeName": args.get("typeName"),
            "properties": json.dumps(properties, sort_keys=True)}


def _efs(args: dict) -> dict:
    fs_id = args.get("fileSystemId", "fs-placeholder")
    return {"id": fs_id, "fileSystemId": fs_id, "dnsName": f"{fs_id}.efs.placeholder.amazonaws.com"}


def _parameter(args: dict) -> dict:
    """A public SSM parameter (a node's or the monitoring server's AMI id): a stable stand-in per parameter name,
    shaped like an AMI id."""
    name = args.get("name", "")
    digest = hashlib.sha256(name.encode()).hexdigest()[:17]
    return {"id": name, "name": name, "type": "String", "value": f"ami-{digest}", "version": 1, "arn": "",
            "insecureValue": f"ami-{digest}", "withDecryption": True}


CALLS = {
    "aws:ec2/getSubnet:getSubnet": _subnet,
    "aws:ssm/getParameter:getParameter": _parameter,
    "aws:ec2/getVpc:getVpc": _vpc,
    "aws:ec2/getInternetGateway:getInternetGateway": _internet_gateway,
    "aws:cloudcontrol/getResource:getResource": _cloudcontrol,
    "aws:efs/getFileSystem:getFileSystem": _efs,
}
