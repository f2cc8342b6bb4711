"""Compute Engine's `instances.aggregatedList` and Google's OAuth token endpoint, answered from API-shaped instance
records (the fields the REST reference documents and gcp_compute reads), for the GCP inventory test.

The list honours the request's `filter` the way the API does for the form the inventory sends: parenthesised
`FIELD = VALUE` terms, all of which must hold (`labels.KEY` reads a label). Any other filter is answered 400, as the
API answers a filter it cannot parse, so a change in the inventory's filters cannot pass unnoticed.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

API = "https://www.googleapis.com/compute/v1"
TERM = re.compile(r"\((?P<field>[\w.-]+) = (?P<value>[^()\s]+)\)")
TOKEN = "ya29.test-token"


def instance(project: str, zone: str, name: str, machine: str, labels: dict, status: str = "RUNNING",
             group: str | None = None, ip: str = "10.0.0.2") -> dict:
    metadata = [{"key": "enable-oslogin", "value": "TRUE"}]
    if group:  # what a managed instance group writes into its instances
        metadata.append({"key": "created-by", "value": f"projects/123456789/zones/{zone}/instanceGroupManagers/{group}"})
    return {
        "kind": "compute#instance", "id": str(abs(hash(name)) % 10**18), "name": name, "status": status,
        "zone": f"{API}/projects/{project}/zones/{zone}",
        "machineType": f"{API}/projects/{project}/zones/{zone}/machineTypes/{machine}",
        "selfLink": f"{API}/projects/{project}/zones/{zone}/instances/{name}",
        "labels": labels, "metadata": {"kind": "compute#metadata", "items": metadata},
        "networkInterfaces": [{"name": "nic0", "networkIP": ip,
                               "network": f"{API}/projects/{project}/global/networks/gpufleet-net",
                               "subnetwork": f"{API}/projects/{project}/regions/{zone[:-2]}/subnetworks/gpufleet"}],
        "disks": [{"boot": True, "source": f"{API}/projects/{project}/zones/{zone}/disks/{name}"}],
    }


def matches(record: dict, terms: list[tuple[str, str]]) -> bool:
    for field, value in terms:
        current = record
        for part in field.split("."):
            current = current.get(part) if isinstance(current, dict) else None
        if str(current) != value.strip('"'):
            return False
    return True


def responder(project: str, instances: list[dict]):
    """`respond` for tests.inventory.tls_proxy.ApiProxy."""

    def respond(method: str, host: str, path: str, headers: dict, body: bytes) -> tuple[int, dict]:
        if host == "oauth2.googleapis.com" and method == "POST":
            return 200, {"access_token": TOKEN, "expires_in": 3600, "token_type": "Bearer"}
        url = urlsplit(path)
        if url.path != f"/compute/v1/projects/{project}/aggregated/instances":
            return 404, {"error": {"code": 404, "message": f"not found: {url.path}",
                                   "errors": [{"reason": "notFound", "message": url.path}]}}
        if {k.lower(): v for k, v in headers.items()}.get("authorization") != f"Bearer {TOKEN}":
            return 401, {"error": {"code": 401, "message": "missing or wrong token",
                                   "errors": [{"reason": "authError", "message": "missing or wrong token"}]}}
        query = parse_qs(url.query).get("filter", [""])[0]
        terms = TERM.findall(query)
        if TERM.sub("", query).strip():
            message = f"Invalid value for field 'filter': {query!r}. Invalid list filter expression."
            return 400, {"error": {"code": 400, "message": message, "errors": [{"reason": "invalid", "message": message}]}}
        zones: dict[str, dict] = {}
        for record in instances:
            if matches(record, terms):
                zone = "zones/" + record["zone"].rsplit("/", 1)[1]
                zones.setdefault(zone, {"instances": []})["instances"].append(record)
        return 200, {"kind": "compute#instanceAggregatedList", "items": zones}

    return respond
