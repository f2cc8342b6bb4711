"""A loopback HTTPS proxy that answers for one cloud API host itself, for inventory plugins whose API address is
fixed in their code (google.cloud's gcp_compute has no endpoint option).

The plugin's `requests` session honours `HTTPS_PROXY` and `REQUESTS_CA_BUNDLE`: it sends `CONNECT host:443` here,
and this proxy finishes TLS with a certificate for that host signed by a throwaway CA that only the test's bundle
trusts, then serves the request with `respond`. Every request is recorded. Nothing leaves the machine: a CONNECT
to any other host is refused.
"""

from __future__ import annotations

import datetime
import json
import ssl
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.fake_http import LoopbackServer, QuietHandler

Responder = Callable[[str, str, str, dict, bytes], tuple[int, dict]]
"""(method, host, path, headers, body) -> (status, JSON body)."""


def _certificate(subject: str, issuer_name: x509.Name | None, issuer_key, public_key, ca: bool, hosts: tuple[str, ...]):
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
               .issuer_name(issuer_name or x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
               .public_key(public_key).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if hosts:
        builder = builder.add_extension(x509.SubjectAlternativeName([x509.DNSName(h) for h in hosts]), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def write_certificates(folder: Path, hosts: tuple[str, ...]) -> tuple[Path, Path, Path]:
    """(CA bundle, host certificate, host key) files for `hosts`, signed by a CA made here."""
    ca_key, host_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = _certificate("gpufleet test CA", None, ca_key, ca_key.public_key(), True, ())
    leaf = _certificate(hosts[0], ca.subject, ca_key, host_key.public_key(), False, hosts)
    paths = folder / "ca.pem", folder / "host.pem", folder / "host.key"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(host_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                serialization.NoEncryption()))
    return paths


class ApiProxy:
    """`start()`, then point the plugin at `url` (HTTPS_PROXY) and `ca_bundle` (REQUESTS_CA_BUNDLE)."""

    def __init__(self, folder: Path, hosts: tuple[str, ...], respond: Responder):
        self.hosts, self.respond, self.requests = hosts, respond, []
        self.ca_bundle, cert, key = write_certificates(folder, hosts)
        self.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.tls.load_cert_chain(cert, key)
        self.server = LoopbackServer(self._handler())
        self.url = self.server.url

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Api(QuietHandler):
            protocol_version = "HTTP/1.1"
            host = ""

            def do_GET(self):
                self._answer("GET")

            def do_POST(self):
                self._answer("POST")

            def _answer(self, method: str):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = dict(self.headers)
                proxy.requests.append({"method": method, "host": self.host, "path": self.path, "headers": headers})
                status, answer = proxy.respond(method, self.host, self.path, headers, body)
                self._json(status, answer)

            def _json(self, status: int, body: dict):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        class Tunnel(QuietHandler):
            def do_CONNECT(self):
                host = self.path.rsplit(":", 1)[0]
                if host not in proxy.hosts or not self.path.endswith(":443"):
                    self._send(403, f"this test proxy only answers for {', '.join(proxy.hosts)}")
                    return
                self.send_response(200, "Connection established")
                self.end_headers()
                self.wfile.flush()
                with proxy.tls.wrap_socket(self.connection, server_side=True) as tls:
                    type(f"Api_{host}", (Api,), {"host": host})(tls, self.client_address, self.server)
                self.close_connection = True

        return Tunnel

    def start(self) -> ApiProxy:
        self.server.start()
        return self

    def close(self) -> None:
        self.server.close()
