"""AWS invokes the program makes, answered offline with placeholders (keys camelCase, as the engine returns them)."""


def _subnet(args: dict) -> dict:
    """An existing subnet: the plan cannot see it, so its VPC and range are placeholders."""
    subnet_id = args.get("id", "subnet-placeholder")
    return {"id": subnet_id, "vpcId": "vpc-of-" + subnet_id, "cidrBlock": "10.0.0.0/18",
            "availabilityZone": "placeholder-az", "availabilityZoneId": "placeholder-az-id"}


def _parameter(args: dict) -> dict:
    """A public SSM parameter (the Ubuntu AMI id for the monitoring server): a placeholder value."""
    return {"name": args["name"], "value": "ami-placeholder", "type": "String", "arn": "arn:placeholder"}


CALLS = {
    "aws:ec2/getSubnet:getSubnet": _subnet,
    "aws:ssm/getParameter:getParameter": _parameter,
}
