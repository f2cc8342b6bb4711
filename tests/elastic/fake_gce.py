"""A loopback Compute Engine and GCP metadata server for the power programs: the calls they make, answered in the
JSON the Compute Engine REST reference documents (Operation, Instance, the Google API error body).

- `GET /computeMetadata/v1/instance/service-accounts/default/token` (needs `Metadata-Flavor: Google`);
- `POST .../zones/Z/instances/bulkInsert` (BulkInsertInstanceResource: count, minCount, sourceInstanceTemplate,
  perInstanceProperties): each named instance is created, or refused by `decide(zone, name, attempt, machine_type)`
  (the template's type) with an error code; fewer than minCount created -> nothing is created and the bulk
  operation ends with the first error (the reference: "If minCount instances cannot be created, then no instances
  will be created"), else the operation succeeds and each refused instance has a failed `insert` operation of the
  same operationGroupId;
- `POST .../zones/Z/operations/OP/wait`, `GET .../zones/Z/operations?filter=...` (the insert operations of one
  operationGroupId, the filter the programs send), `GET`/`DELETE .../zones/Z/instances/NAME`;
- answers without the bearer token are 401, unknown paths 404, both in the Google error shape.

Error shapes: an insert operation's `error.errors[]` with `code` and `message` (CCExtractor/sample-platform#901 shows
ZONE_RESOURCE_POOL_EXHAUSTED that way; kubernetes/k8s.io#9834 ..._WITH_DETAILS with `errorDetails`). UNVERIFIED:
which of the two codes, and which error, a bulk operation that missed its minCount carries in production; the fake
gives the first refused instance's.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from urllib.parse import parse_qs, unquote, urlsplit

from ..fake_http import LoopbackServer, json_api_server

TOKEN = "ya29.fake-controller-token"
MESSAGES = {
    "ZONE_RESOURCE_POOL_EXHAUSTED": "The zone 'projects/{project}/zones/{zone}' does not have enough resources "
                                    "available to fulfill the request.  Try a different zone, or try again later.",
    "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS": "The zone 'projects/{project}/zones/{zone}' does not have enough "
                                                 "resources available to fulfill the request.  '(resource type:compute)'.",
    "QUOTA_EXCEEDED": "Quota 'NVIDIA_H100_GPUS' exceeded.  Limit: 0.0 in region {region}.",
}
Decide = Callable[[str, str, int, str], "str | None"]


def google_error(code: int, message: str, reason: str) -> dict:
    return {"error": {"code": code, "message": message, "errors": [{"message": message, "domain": "global",
                                                                     "reason": reason}]}}


class FakeGce:
    """State and answers; `calls` records (method, path, body) of every Compute call."""

    def __init__(self, project: str, templates: dict[str, dict], decide: Decide | None = None,
                 on_create: Callable[[str], None] | None = None, on_delete: Callable[[str], None] | None = None):
        self.project, self.templates = project, templates
        self.decide = decide or (lambda zone, name, attempt, machine_type: None)
        self.on_create, self.on_delete = on_create, on_delete
        self.instances: dict[tuple[str, str], dict] = {}
        self.operations: dict[tuple[str, str], dict] = {}
        self.attempts: dict[str, int] = {}
        self.calls: list[tuple[str, str, dict | None]] = []
        self.ids = itertools.count(7_000_000_000_000_000_001)
        self.lock = threading.Lock()
        self.base = ""

    def server(self) -> LoopbackServer:
        def respond(method: str, path: str, headers: dict, body: dict | None) -> tuple[int, dict, dict]:
            code, answer = self.respond(method, path, headers, body)
            return code, {}, answer  # Compute Engine's answers add no headers

        server = json_api_server(respond, ("GET", "POST", "DELETE"))
        self.base = server.url
        return server

    def respond(self, method: str, path: str, headers: dict, body: dict | None) -> tuple[int, dict]:
        headers = {key.lower(): value for key, value in headers.items()}
        url = urlsplit(path)
        if url.path == "/computeMetadata/v1/instance/service-accounts/default/token":
            if headers.get("metadata-flavor") != "Google":
                return 403, {"error": "Missing Metadata-Flavor:Google header."}
            return 200, {"access_token": TOKEN, "expires_in": 3599, "token_type": "Bearer"}
        if headers.get("authorization") != f"Bearer {TOKEN}":
            return 401, google_error(401, "Request is missing required authentication credential.", "required")
        with self.lock:
            self.calls.append((method, url.path, body))
            return self._compute(method, url.path, parse_qs(url.query), body)

    def _compute(self, method: str, path: str, query: dict, body: dict | None) -> tuple[int, dict]:
        parts = path.split("/")
        prefix = ["", "compute", "v1", "projects", self.project, "zones"]
        if parts[:6] != prefix or len(parts) < 8:
            return 404, google_error(404, f"The requested URL {path} was not found.", "notFound")
        zone, kind, rest = parts[6], parts[7], parts[8:]
        if kind == "instances" and rest == ["bulkInsert"] and method == "POST":
            return self._bulk_insert(zone, body or {})
        if kind == "instances" and len(rest) == 1:
            return self._instance(method, zone, unquote(rest[0]))
        if kind == "operations" and len(rest) == 2 and rest[1] == "wait" and method == "POST":
            operation = self.operations.get((zone, rest[0]))
            return (200, operation) if operation else (404, google_error(404, "operation not found", "notFound"))
        if kind == "operations" and not rest and method == "GET":
            wanted = query.get("filter", [""])[0]
            items = [op for (op_zone, _), op in sorted(self.operations.items()) if op_zone == zone
                     and op["operationType"] == "insert"
                     and wanted == f"(operationType=insert) AND (operationGroupId={op.get('operationGroupId')})"]
            return 200, {"kind": "compute#operationList", "items": items}
        return 404, google_error(404, f"The requested URL {path} was not found.", "notFound")

    def _zone_url(self, zone: str) -> str:
        return f"{self.base}/compute/v1/projects/{self.project}/zones/{zone}"

    def _operation(self, zone: str, kind: str, target: str, group: str = "", errors: list | None = None) -> dict:
        number = next(self.ids)
        operation = {"kind": "compute#operation", "id": str(number), "name": f"operation-{number}",
                     "zone": self._zone_url(zone), "operationType": kind, "targetLink": target,
                     "status": "DONE", "progress": 100}
        if group:
            operation["operationGroupId"] = group
        if errors:
            operation["error"] = {"errors": errors}
        self.operations[(zone, operation["name"])] = operation
        return operation

    @staticmethod
    def _running(operation: dict) -> dict:
        """What the insert call answers: the operation still running (its result is read with `wait`)."""
        return {key: value for key, value in operation.items() if key != "error"} | {"status": "RUNNING",
                                                                                       "progress": 0}

    def _error(self, code: str, zone: str) -> dict:
        region = zone.rsplit("-", 1)[0]
        return {"code": code, "message": MESSAGES.get(code, code).format(project=self.project, zone=zone,
                                                                           region=region)}

    def _bulk_insert(self, zone: str, body: dict) -> tuple[int, dict]:
        template = body.get("sourceInstanceTemplate", "")
        names = list(body.get("perInstanceProperties", {}))
        count, minimum = int(body.get("count", 0)), int(body.get("minCount", body.get("count", 0)))
        if template not in self.templates:
            message = f"The resource '{template}' was not found"
            return 404, google_error(404, message, "notFound")
        if not names or len(names) != count:
            message = "Invalid value for field 'resource.perInstanceProperties': must name `count` instances."
            return 400, google_error(400, message, "invalid")
        if any((zone, name) in self.instances for name in names):
            return 409, google_error(409, f"The resource '{names[0]}' already exists", "alreadyExists")
        verdicts = {}
        for name in names:
            self.attempts[name] = self.attempts.get(name, 0) + 1
            verdicts[name] = self.decide(zone, name, self.attempts[name], self.templates[template]["machineType"])
        created = [name for name in names if verdicts[name] is None]
        group = f"operation-group-{next(self.ids)}"
        bulk_target = f"{self._zone_url(zone)}/instances/bulkInsert"
        if len(created) < minimum:
            first = next(verdicts[name] for name in names if verdicts[name] is not None)
            return 200, self._running(self._operation(zone, "bulkInsert", bulk_target, group,
                                                      [self._error(first, zone)]))
        for name in names:
            target = f"{self._zone_url(zone)}/instances/{name}"
            refused = verdicts[name]
            self._operation(zone, "insert", target, group, [self._error(refused, zone)] if refused else None)
            if refused is None:
                record = self.templates[template]
                self.instances[(zone, name)] = {
                    "kind": "compute#instance", "id": str(next(self.ids)), "name": name, "status": "RUNNING",
                    "zone": self._zone_url(zone), "selfLink": target,
                    "machineType": f"{self._zone_url(zone)}/machineTypes/{record['machineType']}",
                    "labels": dict(record.get("labels", {})),
                    "sourceInstanceTemplate": template}
                if self.on_create:
                    self.on_create(name)
        return 200, self._running(self._operation(zone, "bulkInsert", bulk_target, group))

    def _instance(self, method: str, zone: str, name: str) -> tuple[int, dict]:
        record = self.instances.get((zone, name))
        missing = f"The resource 'projects/{self.project}/zones/{zone}/instances/{name}' was not found"
        if record is None:
            return 404, google_error(404, missing, "notFound")
        if method == "GET":
            return 200, record
        if method == "DELETE":
            del self.instances[(zone, name)]
            if self.on_delete:
                self.on_delete(name)
            return 200, self._operation(zone, "delete", record["selfLink"])
        return 405, google_error(405, "method not allowed", "badRequest")
