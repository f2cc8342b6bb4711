"""AWS invokes the program makes: the SSM parameters that name the current AMIs."""

PLACEHOLDER_AMI = "ami-0123456789abcdef0"


def _ssm_parameter(args: dict) -> dict:
    name = args["name"]
    return {"name": name, "type": "String", "value": PLACEHOLDER_AMI, "insecureValue": PLACEHOLDER_AMI,
            "arn": f"arn:aws:ssm:::parameter{name}", "version": 1, "withDecryption": True, "id": name}


CALLS = {
    "aws:ssm/getParameter:getParameter": _ssm_parameter,
}
