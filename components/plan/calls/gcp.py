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


CALLS = {
    "gcp:organizations/getClientConfig:getClientConfig": _client_config,
}
