"""A loopback Azure Resource Manager (Compute, scale sets) and IMDS for the power programs, answering in the JSON
Azure's REST reference documents:

- `GET /metadata/identity/oauth2/token` (needs `Metadata: true`): the managed identity's token (`expires_in` a
  string, as IMDS gives it);
- `GET|PATCH {scaleSet}`: the scale set, `sku.capacity`; a PATCH that grows it answers 200 with an
  `Azure-AsyncOperation` header, whose URL answers `{"status": "Succeeded"}` or `{"status": "Failed", "error": ...}`;
- `GET {scaleSet}/virtualMachines` (`value`, `nextLink` paging, two instances a page), `GET|PUT
  {scaleSet}/virtualMachines/{instanceId}` (`$expand=userData`), `POST {scaleSet}/delete` (`instanceIds`: deletes
  exactly those instances and lowers the capacity by their count; 202 with an Azure-AsyncOperation header);
- requests without the bearer token answer 401, unknown paths 404, all in ARM's `{"error": {"code", "message"}}`.

`decide(scale_set_name, attempt)` makes a scale-out fail: `("quota", code)` refuses the PATCH at once, 409
OperationNotAllowed with a quota message (Azure/karpenter-provider-azure#192 quotes it); `("capacity", code)`
accepts it, creates the instances in provisioningState Failed, and ends the operation Failed with the allocation
error nested in `error.details` (jenkins-infra/helpdesk#3584 shows OverconstrainedZonalAllocationRequest that way).
UNVERIFIED: whether a real failed allocation leaves Failed instances or none; the programs handle both.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from urllib.parse import parse_qs, urlsplit

from ..fake_http import LoopbackServer, json_api_server

TOKEN = "eyJ0eXAiOiJKV1QifQ.fake-managed-identity"
MESSAGES = {
    "ZonalAllocationFailed": "Allocation failed. We do not have sufficient capacity for the requested VM size in this "
                             "zone. Read more about improving likelihood of allocation success at "
                             "http://aka.ms/allocation-guidance",
    "OverconstrainedZonalAllocationRequest": "Allocation failed. VM(s) with the following constraints cannot be "
                                             "allocated, because the condition is too restrictive.",
    "OperationNotAllowed": "Operation could not be completed as it results in exceeding approved "
                           "standardNDSH100v5Family Cores quota. Additional details - Deployment Model: Resource "
                           "Manager, Location: eastus, Current Limit: 0, Current Usage: 0, Additional Required: 96.",
}
Decide = Callable[[str, int], "tuple[str, str] | None"]


def arm_error(code: str, message: str) -> dict:
    return {"error": {"code": code, "message": message}}


class FakeAzure:
    def __init__(self, scale_sets: dict[str, str], decide: Decide | None = None):
        """`scale_sets`: scale set id -> VM size; each starts empty (capacity 0)."""
        self.sets = {key.lower(): {"id": key, "size": size, "capacity": 0, "instances": {}, "next": 0}
                     for key, size in scale_sets.items()}
        self.decide = decide or (lambda name, attempt: None)
        self.attempts: dict[str, int] = {}
        self.operations: dict[str, dict] = {}
        self.calls: list[tuple[str, str, dict | None]] = []
        self.ids = itertools.count(1)
        self.lock = threading.Lock()
        self.base = ""

    def server(self) -> LoopbackServer:
        server = json_api_server(self.respond, ("GET", "PATCH", "PUT", "POST"))
        self.base = server.url
        return server

    def respond(self, method: str, path: str, headers: dict, body: dict | None) -> tuple[int, dict, dict]:
        headers = {key.lower(): value for key, value in headers.items()}
        url = urlsplit(path)
        query = {key: values[0] for key, values in parse_qs(url.query).items()}
        if url.path == "/metadata/identity/oauth2/token":
            if headers.get("metadata") != "true":
                return 400, {}, {"error": "invalid_request", "error_description": "Required metadata header not "
                                                                                  "specified"}
            return 200, {}, {"access_token": TOKEN, "expires_in": "86399", "token_type": "Bearer",
                             "resource": query.get("resource", "")}
        if headers.get("authorization") != f"Bearer {TOKEN}":
            return 401, {}, arm_error("AuthenticationFailed", "Authentication failed. The 'Authorization' header "
                                                              "is missing.")
        if "api-version" not in query:
            return 400, {}, arm_error("MissingApiVersionParameter", "The api-version query parameter (?api-version=) "
                                                                    "is required for all requests.")
        with self.lock:
            self.calls.append((method, url.path, body))
            return self._route(method, url.path, query, body or {})

    def _route(self, method: str, path: str, query: dict, body: dict) -> tuple[int, dict, dict]:
        if path.startswith("/operations/"):
            return 200, {}, self.operations.get(path, {"status": "Succeeded"})
        for key, scale_set in self.sets.items():
            if not path.lower().startswith(key):
                continue
            rest = path[len(key):].strip("/").split("/") if path[len(key):].strip("/") else []
            if not rest:
                return self._scale_set(method, scale_set, body)
            if rest == ["delete"] and method == "POST":
                ids = body.get("instanceIds", [])
                for instance_id in ids:
                    if scale_set["instances"].pop(instance_id, None) is not None:
                        scale_set["capacity"] -= 1
                return 202, {"Azure-AsyncOperation": self._operation({"status": "Succeeded"})}, {}
            if rest == ["virtualMachines"] and method == "GET":
                return 200, {}, self._page(scale_set, int(query.get("skip", 0)))
            if len(rest) == 2 and rest[0] == "virtualMachines":
                return self._vm(method, scale_set, rest[1], query, body)
        return 404, {}, arm_error("ResourceNotFound", f"The Resource '{path}' was not found.")

    def _operation(self, status: dict) -> str:
        path = f"/operations/{next(self.ids)}"
        self.operations[path] = status
        return f"{self.base}{path}?api-version=2024-07-01"

    def _view(self, scale_set: dict) -> dict:
        name = scale_set["id"].rsplit("/", 1)[1]
        return {"id": scale_set["id"], "name": name, "type": "Microsoft.Compute/virtualMachineScaleSets",
                "sku": {"name": scale_set["size"], "tier": "Standard", "capacity": scale_set["capacity"]},
                "properties": {"overprovision": False, "provisioningState": "Succeeded",
                               "orchestrationMode": "Uniform"}}

    def _scale_set(self, method: str, scale_set: dict, body: dict) -> tuple[int, dict, dict]:
        if method == "GET":
            return 200, {}, self._view(scale_set)
        if method != "PATCH":
            return 405, {}, arm_error("MethodNotAllowed", method)
        wanted = int(body.get("sku", {}).get("capacity", scale_set["capacity"]))
        name = scale_set["id"].rsplit("/", 1)[1]
        grow = wanted - scale_set["capacity"]
        verdict = None
        if grow > 0:
            self.attempts[name] = self.attempts.get(name, 0) + 1
            verdict = self.decide(name, self.attempts[name])
        if verdict and verdict[0] == "quota":
            return 409, {}, arm_error(verdict[1], MESSAGES.get(verdict[1], verdict[1]))
        state = "Failed" if verdict else "Succeeded"
        for _ in range(max(grow, 0)):
            instance_id = str(scale_set["next"])
            scale_set["next"] += 1
            scale_set["instances"][instance_id] = {
                "instanceId": instance_id, "name": f"{name}_{instance_id}", "id": f"{scale_set['id']}/virtualMachines/"
                                                                                  f"{instance_id}",
                "sku": {"name": scale_set["size"]}, "properties": {"provisioningState": state, "userData": ""}}
        scale_set["capacity"] = wanted
        status = {"status": "Succeeded"} if not verdict else {"status": "Failed", "error": {
            "code": "ResourceOperationFailure", "message": "The resource operation completed with terminal "
                                                            "provisioning state 'Failed'.",
            "details": [{"code": verdict[1], "message": MESSAGES.get(verdict[1], verdict[1])}]}}
        return 200, {"Azure-AsyncOperation": self._operation(status)}, self._view(scale_set)

    def _page(self, scale_set: dict, skip: int) -> dict:
        items = sorted(scale_set["instances"].values(), key=lambda vm: int(vm["instanceId"]))
        page = {"value": [self._vm_view(vm, False) for vm in items[skip:skip + 2]]}
        if skip + 2 < len(items):
            page["nextLink"] = f"{self.base}{scale_set['id']}/virtualMachines?api-version=2024-07-01&skip={skip + 2}"
        return page

    @staticmethod
    def _vm_view(vm: dict, user_data: bool) -> dict:
        properties = {key: value for key, value in vm["properties"].items() if user_data or key != "userData"}
        return {**vm, "properties": properties}

    def _vm(self, method: str, scale_set: dict, instance_id: str, query: dict, body: dict) -> tuple[int, dict, dict]:
        vm = scale_set["instances"].get(instance_id)
        if vm is None:
            return 404, {}, arm_error("NotFound", f"The entity was not found in this Azure location. ({instance_id})")
        if method == "GET":
            return 200, {}, self._vm_view(vm, query.get("$expand") == "userData")
        if method == "PUT":
            vm["properties"]["userData"] = body.get("properties", {}).get("userData", vm["properties"]["userData"])
            return 200, {}, self._vm_view(vm, True)
        return 405, {}, arm_error("MethodNotAllowed", method)
