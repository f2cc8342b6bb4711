"""Azure: a Uniform scale set per target (type and zone), grown by its capacity and shrunk by deleting instances by
id, through the Azure Resource Manager REST API with the controller's managed identity (IMDS
`/metadata/identity/oauth2/token`, header `Metadata: true`).

- Launch: under a lock on the scale set (so two resumes, or a resume and a release, never read the same capacity),
  the instances are listed, the capacity PATCHed up by the nodes still without an instance, the operation followed
  through its `Azure-AsyncOperation` URL, and the instances listed again: the new ones with provisioningState
  Succeeded are the nodes', new ones in any other state are deleted at once (they hold capacity). The scale set must
  not overprovision (overprovisioning creates extra instances and deletes them).
- Naming: a Uniform scale set chooses its instances' names, and per-instance tags do not stick (an update of a scale
  set VM's tags answers 200 and keeps the old tags: Azure/azure-sdk-for-go#18278, Azure/azure-libraries-for-net#1299).
  Each new instance's *user data* is set to `gpufleet-slurm-node=<node>` instead (scale set VMs - Update, the
  `userData` property; Azure's "User data" page: it "can be updated from outside the VM, without stopping or
  rebooting" and is read on the VM from IMDS `compute/userData`). cloud-init ignores IMDS user data when the VM has
  custom data, which gpufleet's nodes always have (canonical/cloud-init `DataSourceAzure.py`: "Only use userdata
  from IMDS if OVF did not provide custom data"). The node waits for the line and starts slurmd as that node.
- Finding and releasing: the node -> (scale set, instance id) map the launch wrote under `state_dir`, checked against
  the instance's own user data before anything is deleted; `virtualMachineScaleSets/delete` with those
  `instanceIds` (Delete Instances), which lowers the capacity by exactly them.

Errors (the synchronous error body `error.code`, or the failed operation's `error.details[].code`, else
`error.code`):
- capacity: AllocationFailed, ZonalAllocationFailed, OverconstrainedAllocationRequest,
  OverconstrainedZonalAllocationRequest (MicrosoftDocs/SupportArticles-docs `zonalallocation-allocationfailed-error.md`;
  a scale-out's failed operation nests it: `{"status":"Failed","error":{"code":"ResourceOperationFailure",
  "details":[{"code":"OverconstrainedZonalAllocationRequest",...}]}}`, jenkins-infra/helpdesk#3584), SkuNotAvailable;
- quota: OperationNotAllowed whose message names a quota (409, "Operation could not be completed as it results in
  exceeding approved standardNDSH100v5Family Cores quota", Azure/karpenter-provider-azure#192, microsoft/onefuzz#605);
- anything else: error.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import json
import logging
import os
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

from .config import NODE_NAME_KEY, PowerConfig, PowerGroup
from .engine import Attempt, CloudError, Instance
from .http import ApiError, Token, call

log = logging.getLogger("gpufleet-power")
CAPACITY_CODES = frozenset({"AllocationFailed", "ZonalAllocationFailed", "OverconstrainedAllocationRequest",
                            "OverconstrainedZonalAllocationRequest", "SkuNotAvailable"})
WAIT_S = 1200
POLL_S = 5.0
MAP_FILE = "azure-nodes.json"


def kind_of(code: str, message: str = "") -> str:
    if code in CAPACITY_CODES:
        return "capacity"
    return "quota" if code == "OperationNotAllowed" and "quota" in message.lower() else "error"


def error_of(body: dict) -> tuple[str, str]:
    """(code, message): the innermost detail that names a known code, else the top-level error."""
    error = body.get("error", body) if isinstance(body, dict) else {}
    for detail in error.get("details", []) or []:
        if isinstance(detail, dict) and kind_of(detail.get("code", ""), detail.get("message", "")) != "error":
            return detail["code"], detail.get("message", "")
    return error.get("code", "Unknown"), error.get("message", "") or body.get("text", "")


class AzureProvider:
    def __init__(self, config: PowerConfig, poll_s: float = POLL_S):
        assert config.azure is not None
        self.config, self.api, self.poll_s = config, config.azure, poll_s
        resource = urllib.parse.quote(self.api.management_url.rstrip("/") + "/", safe="")
        client = f"&client_id={self.api.client_id}" if self.api.client_id else ""
        self.token = Token(f"{self.api.metadata_url}/metadata/identity/oauth2/token?api-version=2018-02-01"
                           f"&resource={resource}{client}", {"Metadata": "true"})

    def _url(self, path: str, query: str = "") -> str:
        return f"{self.api.management_url}{path}?{query}{'&' if query else ''}api-version={self.api.api_version}"

    def _call(self, method: str, url: str, body: dict | None = None):
        return call(method, url, self.token.header(), body)

    def targets(self, group: PowerGroup) -> int:
        assert group.azure is not None
        return len(group.azure.targets)

    @contextlib.contextmanager
    def _locked(self, scale_set: str) -> Iterator[None]:
        folder = Path(self.config.state_dir)
        folder.mkdir(parents=True, exist_ok=True)
        name = hashlib.sha256(scale_set.lower().encode()).hexdigest()[:16]
        with open(folder / f"azure-{name}.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    def _instances(self, scale_set: str) -> dict[str, dict]:
        found, url = {}, self._url(f"{scale_set}/virtualMachines")
        while url:
            page = self._call("GET", url).body
            found.update({vm["instanceId"]: vm for vm in page.get("value", [])})
            url = page.get("nextLink", "")
        return found

    def launch(self, group: PowerGroup, target: int, names: list[str]) -> Attempt:
        assert group.azure is not None
        spec = group.azure.targets[target]
        label = f"{spec.vm_size} {spec.zone or '-'}"
        with self._locked(spec.scale_set_id):
            try:
                before = self._instances(spec.scale_set_id)
                capacity = int(self._call("GET", self._url(spec.scale_set_id)).body["sku"]["capacity"])
                answer = self._call("PATCH", self._url(spec.scale_set_id), {"sku": {"capacity": capacity + len(names)}})
                failure = self._follow(answer.headers.get("azure-asyncoperation", ""))
                after = self._instances(spec.scale_set_id)
            except ApiError as error:
                code, message = error_of(error.body)
                return Attempt(error=CloudError(kind_of(code, message), code, message, label))
            new = sorted((vm for key, vm in after.items() if key not in before), key=lambda vm: int(vm["instanceId"]))
            good = [vm for vm in new if vm.get("properties", {}).get("provisioningState") == "Succeeded"]
            bad = [vm["instanceId"] for vm in new if vm not in good]
            surplus = [vm["instanceId"] for vm in good[len(names):]]
            if bad or surplus:
                self._delete(spec.scale_set_id, bad + surplus)
            created = {}
            for node, vm in zip(names, good, strict=False):
                if self._set_name(spec.scale_set_id, vm["instanceId"], node):
                    created[node] = vm["instanceId"]
                else:
                    self._delete(spec.scale_set_id, [vm["instanceId"]])
            self._remember({node: [spec.scale_set_id, instance] for node, instance in created.items()})
        shortfall = None
        if len(created) < len(names):
            code, message = failure or ("Unknown", "the scale set started fewer instances than asked")
            shortfall = CloudError(kind_of(code, message), code, message, label)
        return Attempt(created=created, error=shortfall)

    def _follow(self, url: str) -> tuple[str, str] | None:
        """Waits for the operation at `url`; the (code, message) of its failure, or None when it succeeded."""
        deadline = time.time() + WAIT_S
        while url and time.time() < deadline:
            status = self._call("GET", url).body
            if status.get("status") == "Succeeded":
                return None
            if status.get("status") in ("Failed", "Canceled"):
                return error_of(status)
            time.sleep(self.poll_s)
        return ("OperationTimedOut", f"no result from {url} in {WAIT_S} s") if url else None

    def _set_name(self, scale_set: str, instance_id: str, node: str) -> bool:
        path = f"{scale_set}/virtualMachines/{instance_id}"
        try:
            vm = self._call("GET", self._url(path, "$expand=userData")).body
            vm.setdefault("properties", {})["userData"] = base64.b64encode(
                f"{NODE_NAME_KEY}={node}\n".encode()).decode()
            vm["properties"].pop("instanceView", None)
            self._call("PUT", self._url(path), vm)
            return True
        except ApiError as error:
            log.error("cannot name instance %s of %s as %s: %s", instance_id, scale_set, node, error)
            return False

    def _delete(self, scale_set: str, instance_ids: list[str]) -> None:
        if instance_ids:
            self._call("POST", self._url(f"{scale_set}/delete"), {"instanceIds": instance_ids})

    def _map_path(self) -> Path:
        return Path(self.config.state_dir) / MAP_FILE

    def _map(self) -> dict[str, list[str]]:
        path = self._map_path()
        return json.loads(path.read_text()) if path.exists() else {}

    def _remember(self, entries: dict[str, list[str]], forget: tuple[str, ...] = ()) -> None:
        with self._locked("node map"):
            current = {node: where for node, where in self._map().items() if node not in forget}
            current.update(entries)
            path = self._map_path()
            path.with_suffix(".tmp").write_text(json.dumps(current, sort_keys=True, indent=1) + "\n")
            os.replace(path.with_suffix(".tmp"), path)

    def find(self, group: PowerGroup, names: list[str]) -> list[Instance]:
        found, known = [], self._map()
        for node in names:
            if node not in known:
                continue
            scale_set, instance_id = known[node]
            try:
                vm = self._call("GET", self._url(f"{scale_set}/virtualMachines/{instance_id}", "$expand=userData")).body
            except ApiError as error:
                if error.status == 404:
                    continue
                raise
            data = base64.b64decode(vm.get("properties", {}).get("userData", "") or b"").decode(errors="replace")
            if f"{NODE_NAME_KEY}={node}" not in data.splitlines():
                log.error("instance %s of %s is not %s any more; not touched", instance_id, scale_set, node)
                continue
            state = vm.get("properties", {}).get("provisioningState", "")
            found.append(Instance(id=instance_id, node=node, location=scale_set,
                                  live=state not in ("Failed", "Deleting")))
        return found

    def terminate(self, group: PowerGroup, instances: list[Instance]) -> None:
        by_scale_set: dict[str, list[str]] = {}
        for instance in instances:
            by_scale_set.setdefault(instance.location, []).append(instance.id)
        for scale_set, ids in sorted(by_scale_set.items()):
            with self._locked(scale_set):
                self._delete(scale_set, ids)
        self._remember({}, forget=tuple(instance.node for instance in instances))
