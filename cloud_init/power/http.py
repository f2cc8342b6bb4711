"""JSON over HTTPS with the standard library only (the controller runs its distribution's python3; GCP and Azure are
reached through their REST APIs with the token of the controller's own identity from the metadata server)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass

TIMEOUT_S = 30


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: dict


class ApiError(RuntimeError):
    """An HTTP error answer, with the API's JSON error body (or its text) kept for the caller to classify."""

    def __init__(self, status: int, body: dict, url: str):
        super().__init__(f"HTTP {status} from {url}: {json.dumps(body)[:500]}")
        self.status = status
        self.body = body


def call(method: str, url: str, headers: dict[str, str] | None = None, body: dict | None = None,
         timeout: float = TIMEOUT_S) -> Response:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers={
        **({"Content-Type": "application/json"} if data is not None else {}), **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return Response(answer.status, {k.lower(): v for k, v in answer.headers.items()}, _json(answer.read()))
    except urllib.error.HTTPError as error:
        raise ApiError(error.code, _json(error.read()), url) from None


def _json(raw: bytes) -> dict:
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return {"text": raw.decode(errors="replace")[:2000]}
    return value if isinstance(value, dict) else {"value": value}


class Token:
    """A bearer token from the metadata server, fetched again a minute before it expires."""

    def __init__(self, url: str, headers: dict[str, str]):
        self.url, self.headers = url, headers
        self.value, self.expires = "", 0.0

    def header(self) -> dict[str, str]:
        if time.time() >= self.expires - 60:
            answer = call("GET", self.url, self.headers).body
            self.value = answer["access_token"]
            self.expires = time.time() + float(answer.get("expires_in", 300))
        return {"Authorization": f"Bearer {self.value}"}
