"""The Google Cloud the elastic VM test plays (tests/vm/elastic_boots.py), as the VMs reach it, unmodified:

- `GoogleApis`: https://compute.googleapis.com and https://secretmanager.googleapis.com on one loopback TLS server,
  with a certificate for both names from a CA made for the test run (`TestCa`), which the VMs' trust store holds.
  Compute Engine is tests/elastic/fake_gce.py's `FakeGce` (its documented JSON, errors included); Secret Manager
  answers `versions/latest:access` of the cluster's munge key (AccessSecretVersionResponse: `payload.data` is the
  secret's bytes in base64). Both want the bearer token the metadata servers hand out.
- `InstanceMetadata`: one VM's metadata server (http://metadata.google.internal): its instance name and zone, its
  instance template's metadata attributes (the controller's address, the key's name, the node prefix) and its
  service account's token; the watcher's keys as tests/cloud_init/metadata_servers.py answers them.
"""

from __future__ import annotations

import base64
import json
import ssl
import subprocess
from pathlib import Path

from tests.cloud_init.metadata_servers import MetadataServer
from tests.elastic.fake_gce import TOKEN, FakeGce, google_error
from tests.fake_http import LoopbackServer, json_api_server

API_NAMES = ("compute.googleapis.com", "secretmanager.googleapis.com")
PROJECT_NUMBER = "123456789012"


class TestCa:
    """A CA and one server certificate for `API_NAMES`, made with openssl in `folder`."""

    def __init__(self, folder: Path):
        folder.mkdir(parents=True, exist_ok=True)
        self.cert, self.key = folder / "ca.pem", folder / "ca.key"
        self.server_cert, self.server_key = folder / "server.pem", folder / "server.key"
        run = lambda *args: subprocess.run(["openssl", *args], check=True, capture_output=True)  # noqa: E731
        run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=gpufleet VM test CA",
            "-keyout", str(self.key), "-out", str(self.cert))
        request = folder / "server.csr"
        run("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={API_NAMES[0]}", "-keyout", str(self.server_key),
            "-out", str(request))
        extensions = folder / "server.ext"
        extensions.write_text("subjectAltName=" + ",".join(f"DNS:{name}" for name in API_NAMES) + "\n"
                              "extendedKeyUsage=serverAuth\n")
        run("x509", "-req", "-in", str(request), "-CA", str(self.cert), "-CAkey", str(self.key), "-CAcreateserial",
            "-days", "2", "-extfile", str(extensions), "-out", str(self.server_cert))


class GoogleApis:
    """Compute Engine (`gce`) and Secret Manager (`secrets`: resource name -> the secret's text) over TLS."""

    def __init__(self, gce: FakeGce, secrets: dict[str, str], ca: TestCa):
        self.gce, self.secrets = gce, secrets
        self.secret_reads: list[str] = []
        self.server: LoopbackServer = json_api_server(self._respond, ("GET", "POST", "DELETE"))
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(ca.server_cert, ca.server_key)
        self.server.httpd.socket = context.wrap_socket(self.server.httpd.socket, server_side=True)
        gce.base = f"https://{API_NAMES[0]}"
        self.port = self.server.port

    def __enter__(self) -> GoogleApis:
        self.server.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.close()

    def _respond(self, method: str, path: str, headers: dict, body) -> tuple[int, dict, dict]:
        host = {key.lower(): value for key, value in headers.items()}.get("host", "").split(":")[0]
        if host == "secretmanager.googleapis.com":
            code, answer = self._secret(method, path, headers)
        else:
            code, answer = self.gce.respond(method, path, headers, body)
        return code, {}, answer

    def _secret(self, method: str, path: str, headers: dict) -> tuple[int, dict]:
        if {key.lower(): value for key, value in headers.items()}.get("authorization") != f"Bearer {TOKEN}":
            return 401, google_error(401, "Request is missing required authentication credential.", "required")
        name = path.removeprefix("/v1/").removesuffix("/versions/latest:access")
        self.secret_reads.append(name)
        if method != "GET" or name not in self.secrets:
            return 404, google_error(404, f"Secret [{name}] not found or has no versions.", "notFound")
        data = base64.b64encode(self.secrets[name].encode()).decode()
        return 200, {"name": f"{name}/versions/1", "payload": {"data": data}}


class InstanceMetadata(MetadataServer):
    """One VM's GCP metadata server: its name, zone, template metadata attributes and service account token."""

    def __init__(self, instance: str, zone: str, attributes: dict[str, str]):
        super().__init__("gcp")
        self.instance, self.zone, self.attributes = instance, zone, dict(attributes)

    def _gcp(self, handler, method, path):
        if handler.headers.get("Metadata-Flavor") != "Google":
            return self._reply(handler, 403)
        base = "/computeMetadata/v1/instance/"
        key = path.split("?", 1)[0].removeprefix(base)
        if key == "service-accounts/default/token":
            return self._reply(handler, 200, json.dumps({"access_token": TOKEN, "expires_in": 3599,
                                                         "token_type": "Bearer"}), "application/json")
        if key == "name":
            return self._reply(handler, 200, self.instance)
        if key == "hostname":
            return self._reply(handler, 200, f"{self.instance}.{self.zone}.c.gpufleet-vm.internal")
        if key == "zone":
            return self._reply(handler, 200, f"projects/{PROJECT_NUMBER}/zones/{self.zone}")
        if key.startswith("attributes/") and key.removeprefix("attributes/") in self.attributes:
            return self._reply(handler, 200, self.attributes[key.removeprefix("attributes/")])
        if key.startswith("attributes/"):
            return self._reply(handler, 404)
        return super()._gcp(handler, method, path)
