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
