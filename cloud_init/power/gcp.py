"""GCP: zonal `instances.bulkInsert` from the target's instance template, one call per target, through the Compute
Engine REST API with the controller's service account token (metadata server,
`instance/service-accounts/default/token`, header `Metadata-Flavor: Google`).

- Launch: `count` = the nodes still without an instance, `minCount` 1 (what the zone has is taken; the rest go to
  the next target), `perInstanceProperties` keyed by the node names: the instances' names are the Slurm node names
  (BulkInsertInstanceResource: "Either namePattern or perInstanceProperties must be set"; per-instance properties
  hold only `name` and `hostname`, so no per-instance metadata). The node learns its name from its own instance name
  (metadata server `instance/name`), which needs no second call and cannot race the boot; slurm-gcp does the same
  (SchedMD/slurm-gcp `scripts/resume.py`, `setup.py` starts slurmd with `-N` its hostname). The call returns an
  operation, waited for with `zoneOperations.wait`. What was created is read back by name; for the names missing,
  the reason is the bulk operation's `error.errors[0].code`, else the per-instance insert operations of the same
  `operationGroupId` (slurm-gcp `util.get_insert_operations`).
- Finding and releasing: `instances.get` by name in the group's zones, accepted only with the cluster's label;
  `instances.delete` of that instance (a zone's instance names are unique; the name is its identity).
- A managed instance group's `createInstances` is not used: a MIG keeps retrying a creation that meets
  ZONE_RESOURCE_POOL_EXHAUSTED, with the error only in `listErrors`, so a resume could not fall back in one run.

Errors, from the operation's `error.errors[].code` or a call's error body (`error.errors[].reason`, `error.status`):
- capacity: ZONE_RESOURCE_POOL_EXHAUSTED and ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS (an insert operation's
  `error.errors[0].code`, CCExtractor/sample-platform#901; `..._WITH_DETAILS` with `errorDetails[].errorInfo.reason`
  "resource_availability", kubernetes/k8s.io#9834; sometimes a synchronous 503, scylladb/scylla-cluster-tests#12477),
  RESOURCE_NOT_FOUND on an accelerator/machine type a zone lacks is not capacity and stays error;
- quota: QUOTA_EXCEEDED ("Quota 'GPUS_ALL_REGIONS' exceeded. Limit: 0.0 globally.", fastai/course-v3#165;
  GoogleCloudPlatform/ai-on-gke#849), and a 403/429 with reason `quotaExceeded` or status RESOURCE_EXHAUSTED;
- anything else: error.
"""

from __future__ import annotations

import logging
import time
import urllib.parse

from .config import CLUSTER_KEY, PowerConfig, PowerGroup
from .engine import Attempt, CloudError, Instance
from .http import ApiError, Token, call

log = logging.getLogger("gpufleet-power")
WAIT_S = 600
LIVE_STATUSES = ("PROVISIONING", "STAGING", "RUNNING")
QUOTA_MARKS = ("QUOTA_EXCEEDED", "quotaExceeded", "RESOURCE_EXHAUSTED")
CAPACITY_MARKS = ("ZONE_RESOURCE_POOL_EXHAUSTED", "resource_availability", "STOCKOUT")


def kind_of(code: str) -> str:
    if any(mark in code for mark in CAPACITY_MARKS):
        return "capacity"
    return "quota" if any(mark in code for mark in QUOTA_MARKS) else "error"


class GcpProvider:
    def __init__(self, config: PowerConfig):
        assert config.gcp is not None
        self.config, self.api = config, config.gcp
        self.token = Token(f"{self.api.metadata_url}/computeMetadata/v1/instance/service-accounts/default/token",
                           {"Metadata-Flavor": "Google"})

    def _url(self, zone: str, suffix: str = "") -> str:
        return f"{self.api.compute_url}/projects/{self.api.project}/zones/{zone}{suffix}"

    def _call(self, method: str, url: str, body: dict | None = None) -> dict:
        return call(method, url, self.token.header(), body).body

    def targets(self, group: PowerGroup) -> int:
        assert group.gcp is not None
        return len(group.gcp.targets)

    def launch(self, group: PowerGroup, target: int, names: list[str]) -> Attempt:
        assert group.gcp is not None
        spec = group.gcp.targets[target]
        label = f"{spec.machine_type} {spec.zone}"
        body = {"count": str(len(names)), "minCount": "1", "sourceInstanceTemplate": spec.instance_template,
                "perInstanceProperties": {name: {} for name in names}}
        try:
            operation = self._wait(self._call("POST", self._url(spec.zone, "/instances/bulkInsert"), body))
        except ApiError as error:
            code, message = api_error(error)
            return Attempt(error=CloudError(kind_of(code), code, message, label))
        created = {name: instance["id"] for name in names
                   if (instance := self._get(spec.zone, name)) is not None}
        missing = [name for name in names if name not in created]
        if not missing:
            return Attempt(created=created)
        code, message = self._operation_error(spec.zone, operation)
        return Attempt(created=created, error=CloudError(kind_of(code), code, message, label))

    def _wait(self, operation: dict) -> dict:
        deadline = time.time() + WAIT_S
        zone = operation.get("zone", "").rsplit("/", 1)[-1]
        while operation.get("status") != "DONE" and time.time() < deadline:
            operation = self._call("POST", self._url(zone, f"/operations/{operation['name']}/wait"))
        return operation

    def _operation_error(self, zone: str, operation: dict) -> tuple[str, str]:
        errors = operation.get("error", {}).get("errors", [])
        if not errors and operation.get("operationGroupId"):
            query = urllib.parse.quote(f"(operationType=insert) AND (operationGroupId={operation['operationGroupId']})")
            listed = self._call("GET", self._url(zone, f"/operations?filter={query}")).get("items", [])
            errors = [error for item in listed for error in item.get("error", {}).get("errors", [])]
        if not errors:
            return "UNKNOWN", "bulkInsert created fewer instances than asked, without an error"
        return errors[0].get("code", "UNKNOWN"), errors[0].get("message", "")

    def _get(self, zone: str, name: str) -> dict | None:
        try:
            instance = self._call("GET", self._url(zone, f"/instances/{name}"))
        except ApiError as error:
            if error.status == 404:
                return None
            raise
        if instance.get("labels", {}).get(CLUSTER_KEY) != self.config.cluster_id:
            log.error("instance %s in %s lacks this cluster's label %s; not ours", name, zone, CLUSTER_KEY)
            return None
        return instance

    def find(self, group: PowerGroup, names: list[str]) -> list[Instance]:
        assert group.gcp is not None
        zones = list(dict.fromkeys(target.zone for target in group.gcp.targets))
        found = []
        for name in names:
            for zone in zones:
                if (instance := self._get(zone, name)) is not None:
                    found.append(Instance(id=instance["id"], node=name, location=zone,
                                          live=instance.get("status") in LIVE_STATUSES))
                    break
        return found

    def terminate(self, group: PowerGroup, instances: list[Instance]) -> None:
        for instance in instances:
            try:
                self._call("DELETE", self._url(instance.location, f"/instances/{instance.node}"))
            except ApiError as error:
                if error.status != 404:
                    raise


def api_error(error: ApiError) -> tuple[str, str]:
    """(code, message) of a Google API error body: the first `errors[].reason`, else the status, else the HTTP code."""
    body = error.body.get("error", {}) if isinstance(error.body.get("error"), dict) else {}
    reasons = [item.get("reason", "") for item in body.get("errors", []) if isinstance(item, dict)]
    message = body.get("message", "") or error.body.get("text", "")
    for candidate in (*reasons, body.get("status", ""), message):
        if candidate and kind_of(candidate) != "error":
            return (candidate if candidate != message else _code_in(message)), message
    return (reasons[0] if reasons and reasons[0] else body.get("status") or f"HTTP{error.status}"), message


def _code_in(message: str) -> str:
    """The upper-case code a message starts with ("ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS: The zone ...")."""
    word = message.split(":", 1)[0].strip()
    return word if word.replace("_", "").isalpha() and word.isupper() else kind_of(message).upper()
