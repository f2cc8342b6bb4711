"""AWS invokes the program makes, answered offline with placeholders (keys camelCase, as the engine returns them)."""

import hashlib


def _subnet(args: dict) -> dict:
    """An existing subnet: the plan cannot see it, so its VPC and range are placeholders."""
    subnet_id = args.get("id", "subnet-placeholder")
    return {"id": subnet_id, "vpcId": "vpc-of-" + subnet_id, "cidrBlock": "10.0.0.0/18",
            "availabilityZone": "placeholder-az", "availabilityZoneId": "placeholder-az-id"}


def _parameter(args: dict) -> dict:
    """A public SSM parameter (an image's AMI id): a stable stand-in per parameter name, shaped like an AMI id."""
    name = args.get("name", "")
    digest = hashlib.sha256(name.encode()).hexdigest()[:17]
    return {"id": name, "name": name, "type": "String", "value": f"ami-{digest}", "version": 1, "arn": "",
            "insecureValue": f"ami-{digest}", "withDecryption": True}


CALLS = {
    "aws:ec2/getSubnet:getSubnet": _subnet,
    "aws:ssm/getParameter:getParameter": _parameter,
}
