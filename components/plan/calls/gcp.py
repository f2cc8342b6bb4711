"""GCP invokes the program makes, answered offline: the provider's client config, whose `project` names the
project in IAM bindings, service-account emails and the RoCE network profile.

The project is the stack's `gcp:project` config when it is set (as `pulumi up` would use it), otherwise a
placeholder that plans print as is.
"""

import pulumi

PLACEHOLDER_PROJECT = "example-project"


def _client_config(args: dict) -> dict:
    project = pulumi.Config("gcp").get("project") or PLACEHOLDER_PROJECT
    region = pulumi.Config("gcp").get("region") or ""
    zone = pulumi.Config("gcp").get("zone") or ""
    return {"id": f"projects/{project}/regions/{region}/zones/{zone}", "project": project, "region": region,
            "zone": zone, "accessToken": "", "defaultLabels": {}}


def _image(args: dict) -> dict:
    """The newest image of a family: a stable stand-in named after the family, as a self link."""
    project, family = args.get("project", ""), args.get("family", "")
    name = f"{family}-pinned-at-deploy"
    return {"id": f"projects/{project}/global/images/{name}", "name": name, "family": family, "project": project,
            "selfLink": f"https://www.googleapis.com/compute/v1/projects/{project}/global/images/{name}",
            "status": "READY", "labels": {}}


CALLS = {
    "gcp:organizations/getClientConfig:getClientConfig": _client_config,
    "gcp:compute/getImage:getImage": _image,
}


def _network(args: dict) -> dict:
    """An existing VPC, by name: the plan cannot see it, so its ids are built from the name."""
    name, project = args.get("name", "network"), args.get("project") or PLACEHOLDER_PROJECT
    return {"id": f"projects/{project}/global/networks/{name}", "name": name, "selfLink":
            f"https://www.googleapis.com/compute/v1/projects/{project}/global/networks/{name}"}


def _subnetwork(args: dict) -> dict:
    name, project, region = args.get("name", "subnet"), args.get("project") or PLACEHOLDER_PROJECT, args.get("region")
    return {"id": f"projects/{project}/regions/{region}/subnetworks/{name}", "name": name, "region": region,
            "ipCidrRange": "10.128.0.0/20", "selfLink": f"https://www.googleapis.com/compute/v1/projects/{project}/"
            f"regions/{region}/subnetworks/{name}"}


def _lustre(args: dict) -> dict:
    return {"id": args.get("instanceId"), "instanceId": args.get("instanceId"), "mountPoint": "10.90.0.2@tcp:/lustrefs"}


def _filestore(args: dict) -> dict:
    return {"id": args.get("name"), "name": args.get("name"), "networks": [{"ipAddresses": ["10.91.0.2"]}],
            "fileShares": [{"name": "shared"}]}


CALLS.update({
    "gcp:compute/getNetwork:getNetwork": _network,
    "gcp:compute/getSubnetwork:getSubnetwork": _subnetwork,
    "gcp:lustre/getInstance:getInstance": _lustre,
    "gcp:filestore/getInstance:getInstance": _filestore,
})
