"""The tag -> digest resolver against a fake registry on loopback that answers as NGC does (recorded shape): an
anonymous HEAD gets 401 with a Bearer challenge, the realm hands out a pull token, and the manifest answer carries
`Docker-Content-Digest`. Also: registries that leave the header out of HEAD, a digest that does not match the bytes,
a missing tag, and a registry that wants real credentials."""

from __future__ import annotations

import hashlib
import json

import pytest

from gpufleet.deploytime.oci import MANIFEST_TYPES, DigestError, tag_digest
from tests.fake_http import LoopbackServer, QuietHandler

REPOSITORY = "nvidia/k8s/dcgm-exporter"
TAG = "4.5.3-4.8.2-distroless"
# An image index for two platforms, as a multi-arch tag names it.
INDEX = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": [
    {"mediaType": "application/vnd.oci.image.manifest.v1+json", "size": 1234,
     "digest": "sha256:" + "1" * 64, "platform": {"architecture": "amd64", "os": "linux"}},
    {"mediaType": "application/vnd.oci.image.manifest.v1+json", "size": 1234,
     "digest": "sha256:" + "2" * 64, "platform": {"architecture": "arm64", "os": "linux"}}]}).encode()
INDEX_DIGEST = "sha256:" + hashlib.sha256(INDEX).hexdigest()
TOKEN = "anonymous-pull-token"


class FakeRegistry(QuietHandler):
    mode = "ngc"  # ngc | no-head-digest | wrong-digest | basic
    seen: list[tuple[str, str, str | None, str | None]] = []

    def _answer(self, with_body: bool):
        FakeRegistry.seen.append((self.command, self.path, self.headers.get("Authorization"),
                                  self.headers.get("Accept")))
        if self.path.startswith("/proxy_auth"):
            assert f"scope=repository%3A{REPOSITORY.replace('/', '%2F')}%3Apull" in self.path, self.path
            return self._send(200, json.dumps({"token": TOKEN}))
        if self.headers.get("Authorization") != f"Bearer {TOKEN}":
            challenge = ('Basic realm="registry"' if self.mode == "basic" else
                         f'Bearer realm="http://127.0.0.1:{self.server.server_address[1]}/proxy_auth",'
                         f'scope="repository:{REPOSITORY}:pull"')
            self.send_response(401)
            self.send_header("Www-Authenticate", challenge)  # as Go's registries spell it
            self.send_header("Content-Length", "0")
            return self.end_headers()
        if self.path != f"/v2/{REPOSITORY}/manifests/{TAG}":
            return self._send(404, json.dumps({"errors": [{"code": "MANIFEST_UNKNOWN"}]}))
        self.send_response(200)
        self.send_header("Content-Type", "application/vnd.oci.image.index.v1+json")
        self.send_header("Content-Length", str(len(INDEX)))
        if self.mode == "ngc" or (self.mode == "wrong-digest" and with_body):
            self.send_header("Docker-Content-Digest", INDEX_DIGEST if self.mode == "ngc" else "sha256:" + "f" * 64)
        self.end_headers()
        if with_body:
            self.wfile.write(INDEX)

    def do_HEAD(self):
        self._answer(with_body=False)

    def do_GET(self):
        self._answer(with_body=True)


@pytest.fixture
def registry():
    server = LoopbackServer(FakeRegistry).start()
    FakeRegistry.seen, FakeRegistry.mode = [], "ngc"
    yield f"127.0.0.1:{server.port}"
    server.close()


def test_an_anonymous_token_then_the_index_digest(registry):
    assert tag_digest(f"{registry}/{REPOSITORY}:{TAG}") == INDEX_DIGEST
    methods = [(method, auth) for method, _, auth, _ in FakeRegistry.seen]
    assert methods == [("HEAD", None), ("GET", None), ("HEAD", f"Bearer {TOKEN}")]  # HEAD, token, HEAD
    assert FakeRegistry.seen[-1][3] == MANIFEST_TYPES  # asks for the index of a multi-arch tag, not one platform


def test_a_registry_without_the_header_on_head_gives_the_hash_of_the_manifest(registry):
    FakeRegistry.mode = "no-head-digest"
    assert tag_digest(f"{registry}/{REPOSITORY}:{TAG}") == INDEX_DIGEST


def test_a_stated_digest_that_is_not_the_hash_of_the_bytes_is_refused(registry):
    FakeRegistry.mode = "wrong-digest"
    with pytest.raises(DigestError, match="hashes to " + INDEX_DIGEST):
        tag_digest(f"{registry}/{REPOSITORY}:{TAG}")


def test_a_missing_tag_names_the_image_and_the_status(registry):
    with pytest.raises(DigestError, match=r"HTTP 404 for .*dcgm-exporter:no-such-tag"):
        tag_digest(f"{registry}/{REPOSITORY}:no-such-tag")


def test_a_registry_that_wants_credentials_is_refused(registry):
    FakeRegistry.mode = "basic"
    with pytest.raises(DigestError, match="not an anonymous token"):
        tag_digest(f"{registry}/{REPOSITORY}:{TAG}")


def test_an_unreachable_registry_is_an_error_not_a_hang():
    with pytest.raises(DigestError, match="cannot reach"):
        tag_digest(f"127.0.0.1:9/{REPOSITORY}:{TAG}")


@pytest.mark.parametrize("reference", ["dcgm-exporter:4.5.3", "nvcr.io/nvidia/tritonserver", "NVCR.IO/x:1"])
def test_a_reference_without_registry_or_tag_is_refused(reference):
    with pytest.raises(DigestError, match="REGISTRY/REPOSITORY:TAG"):
        tag_digest(reference)
