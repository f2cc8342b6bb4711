"""GPUDirect-TCPXO's two containers, from `pulumi up` to `docker run`, against a fake registry on loopback that answers
as Artifact Registry does (401 with a Bearer challenge, a token realm that takes the node's OAuth token as the
password of `oauth2accesstoken`, manifests by tag and by digest):
- `pulumi up` (deploy-time lookups on) writes the digest the registry gives for each tag into gcp-train's user data;
- on the node, `oci-verify` accepts that reference while the tag still names it, and `gpudirect-container` runs
  the installer and RxDM by that reference only;
- a tag moved after `pulumi up`, a digest the registry no longer has, or bytes that do not hash to the digest are
  refused on the node, and docker never runs."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import re
import subprocess
from pathlib import Path

import pytest

from gpufleet.deploytime import containers, oci
from gpufleet.gcp.gpudirect import sources
from gpufleet.plan import runner
from gpufleet.plan.runner import run_program
from gpufleet.plan.stackfile import read_stack_config
from gpufleet.plan.userdata import node_user_data
from tests.fake_http import LoopbackServer, QuietHandler

from .conftest import FILES

LIB = FILES.parent / "gpudirect" / "usr/local/lib/gpufleet"
GOOGLE = "us-docker.pkg.dev"
NODE_TOKEN = "node-oauth-token"
PULL_TOKEN = "pull-token"


def manifest(name: str) -> bytes:
    return json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                       "config": {"digest": "sha256:" + hashlib.sha256(name.encode()).hexdigest(), "size": 1}},
                      sort_keys=True).encode()


def digest_of(body: bytes) -> str:
    return "sha256:" + hashlib.sha256(body).hexdigest()


class FakeArtifactRegistry(QuietHandler):
    """Repository -> tag -> manifest bytes, plus digest -> bytes it serves for that digest (normally the same)."""

    tags: dict[str, dict[str, bytes]] = {}
    blobs: dict[str, bytes] = {}
    token_auth: list[str | None] = []

    def _answer(self, with_body: bool):
        port = self.server.server_address[1]
        if self.path.startswith("/v2/token"):
            auth = self.headers.get("Authorization")
            FakeArtifactRegistry.token_auth.append(auth)
            if auth not in (None, "Basic " + base64.b64encode(f"oauth2accesstoken:{NODE_TOKEN}".encode()).decode()):
                return self._send(403, "{}")
            return self._send(200, json.dumps({"token": PULL_TOKEN}))
        if self.headers.get("Authorization") != f"Bearer {PULL_TOKEN}":
            self.send_response(401)
            self.send_header("Www-Authenticate", f'Bearer realm="http://127.0.0.1:{port}/v2/token",'
                                                 f'service="{GOOGLE}"')
            self.send_header("Content-Length", "0")
            return self.end_headers()
        match = re.fullmatch(r"/v2/(?P<repository>.+)/manifests/(?P<ref>[^/]+)", self.path)
        repository, ref = (match["repository"], match["ref"].replace("%3A", ":")) if match else ("", "")
        body = self.blobs.get(ref) if ref.startswith("sha256:") else self.tags.get(repository, {}).get(ref)
        if body is None:
            return self._send(404, json.dumps({"errors": [{"code": "MANIFEST_UNKNOWN"}]}))
        self.send_response(200)
        self.send_header("Content-Type", "application/vnd.oci.image.manifest.v1+json")
        self.send_header("Docker-Content-Digest", digest_of(body))
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if with_body:
            self.wfile.write(body)

    def do_HEAD(self):
        self._answer(with_body=False)

    def do_GET(self):
        self._answer(with_body=True)


def publish(repository: str, tag: str, name: str) -> str:
    """Points `tag` at a manifest of its own; returns its digest."""
    body = manifest(name)
    FakeArtifactRegistry.tags.setdefault(repository, {})[tag] = body
    FakeArtifactRegistry.blobs[digest_of(body)] = body
    return digest_of(body)


def split(reference: str) -> tuple[str, str]:
    """(repository, tag) of REGISTRY/REPOSITORY:TAG."""
    path = reference.split("/", 1)[1]
    return path.rsplit(":", 1)[0], path.rsplit(":", 1)[1]


@pytest.fixture
def registry():
    """The fake registry with Google's two TCPXO tags published; yields its host:port."""
    FakeArtifactRegistry.tags, FakeArtifactRegistry.blobs, FakeArtifactRegistry.token_auth = {}, {}, []
    for image in (sources.TCPXO_RXDM_IMAGE, sources.TCPXO_PLUGIN_IMAGE):
        publish(*split(image), image)
    server = LoopbackServer(FakeArtifactRegistry).start()
    yield f"127.0.0.1:{server.port}"
    server.close()


class FakeMetadata(QuietHandler):
    def do_GET(self):
        assert self.headers.get("Metadata-Flavor") == "Google"
        if self.path.endswith("/service-accounts/default/token"):
            return self._send(200, json.dumps({"access_token": NODE_TOKEN, "expires_in": 3599}))
        return self._send(404, "")


@pytest.fixture
def metadata():
    server = LoopbackServer(FakeMetadata).start()
    yield server.url
    server.close()


@pytest.fixture(scope="module")
def deployed_images() -> dict[str, str]:
    """gcp-train as `pulumi up` builds it, its TCPXO tags resolved by the real resolver against a fake registry
    (Google's host name swapped for the loopback one), every other tag by a recorded digest: the node's env lines."""
    FakeArtifactRegistry.tags, FakeArtifactRegistry.blobs = {}, {}
    for image in (sources.TCPXO_RXDM_IMAGE, sources.TCPXO_PLUGIN_IMAGE):
        publish(*split(image), image)
    server = LoopbackServer(FakeArtifactRegistry).start()
    host = f"127.0.0.1:{server.port}"

    def answer(reference: str) -> str:
        if reference.startswith(f"{GOOGLE}/gce-ai-infra/"):
            return oci.tag_digest(reference.replace(GOOGLE, host, 1))
        return "sha256:" + "d" * 64

    with pytest.MonkeyPatch.context() as patch:
        containers._pinned.cache_clear()
        patch.setattr(containers, "tag_digest", answer)
        patch.setattr(runner, "offline_lookups", contextlib.nullcontext)
        try:
            result = run_program("gcp-train", read_stack_config("gcp-train"))
        finally:
            containers._pinned.cache_clear()
            server.close()
    [text] = [t for t in node_user_data(result.resources).values() if "GPUFLEET_TCPXO_RXDM_IMAGE=" in t]
    found = dict(re.findall(r"^\s*(GPUFLEET_TCPXO_\w+_IMAGE)='([^']*)'$", text, re.M))
    return {name: value.replace(GOOGLE, "{registry}", 1) for name, value in found.items()}


def test_pulumi_up_writes_the_digest_each_tag_names_into_the_user_data(deployed_images):
    for name, tag in (("GPUFLEET_TCPXO_RXDM_IMAGE", sources.TCPXO_RXDM_IMAGE),
                      ("GPUFLEET_TCPXO_PLUGIN_IMAGE", sources.TCPXO_PLUGIN_IMAGE)):
        assert deployed_images[name] == tag.replace(GOOGLE, "{registry}", 1) + "@" + digest_of(manifest(tag))


def container(tmp_path: Path, action: str, images: dict[str, str], metadata_url: str = "http://127.0.0.1:9"):
    """Runs gpudirect-container ACTION with a recording docker and ldconfig; returns the result and docker's calls."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    lib_dir = tmp_path / "tcpxo/lib64"
    (bin_dir / "docker").write_text(
        '#!/bin/bash\necho "$*" >> "$FAKE_LOG"\n'
        f'if [ "$1" = run ] && [ "${{@: -2:1}}" = install ]; then mkdir -p {lib_dir} && : > {lib_dir}/libnccl-net.so; fi\n')
    (bin_dir / "ldconfig").write_text("#!/bin/bash\n")
    for tool in ("docker", "ldconfig"):
        (bin_dir / tool).chmod(0o755)
    log = tmp_path / "docker.log"
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "GPUFLEET_LIB": str(LIB), "GPUFLEET_ENV_FILE": "/nonexistent",
           "FAKE_LOG": str(log), "GPUFLEET_METADATA_URL": metadata_url, "GPUFLEET_TCPXO_LIB_DIR": str(lib_dir),
           "GPUFLEET_TCPXO_DEVICE": "/dev/dmabuf_import_helper", "GPUFLEET_TCPXO_RXDM_ARGS": "--num_hops=2",
           "GPUFLEET_TCPXO_READY_FILE": str(tmp_path / "rxdm/ready"), **images}
    lib = tmp_path / "lib"  # the node's /usr/local/lib/gpufleet: common.sh from files/, the rest from gpudirect/
    if not lib.exists():
        lib.mkdir()
        (lib / "common.sh").symlink_to(FILES / "usr/local/lib/gpufleet/common.sh")
        for script in ("gpudirect-container", "oci-verify"):
            (lib / script).symlink_to(LIB / script)
    env["GPUFLEET_LIB"] = str(lib)
    done = subprocess.run(["bash", str(lib / "gpudirect-container"), action], env=env, capture_output=True,
                          text=True, timeout=60)
    return done, log.read_text().splitlines() if log.exists() else []


def on(registry: str, deployed_images: dict[str, str]) -> dict[str, str]:
    return {name: value.format(registry=registry) for name, value in deployed_images.items()}


def test_the_node_runs_the_pinned_installer_and_rxdm_after_checking_them(registry, deployed_images, metadata,
                                                                          tmp_path):
    images = on(registry, deployed_images)
    done, calls = container(tmp_path, "plugin", images, metadata)
    assert done.returncode == 0, done.stderr
    plugin = images["GPUFLEET_TCPXO_PLUGIN_IMAGE"]
    assert calls[0] == f"login -u oauth2accesstoken --password-stdin https://{registry}"
    assert calls[1].startswith("run ") and calls[1].endswith(f" -v /var/lib:/var/lib {plugin} install --install-nccl")
    # The node's own token reached the registry's token service as Artifact Registry expects it.
    assert FakeArtifactRegistry.token_auth[-1].startswith("Basic ")
    done, calls = container(tmp_path, "rxdm", images, metadata)
    assert done.returncode == 0, done.stderr
    [run] = [call for call in calls if call.startswith("run ")][-1:]
    assert run.endswith(f"{images['GPUFLEET_TCPXO_RXDM_IMAGE']} --num_hops=2") and "--gpus all" in run
    assert "--device /dev/dmabuf_import_helper" in run


@pytest.mark.parametrize("action, variable", [("plugin", "GPUFLEET_TCPXO_PLUGIN_IMAGE"),
                                              ("rxdm", "GPUFLEET_TCPXO_RXDM_IMAGE")])
def test_a_tag_moved_after_pulumi_up_is_refused_on_the_node(registry, deployed_images, tmp_path, action, variable):
    images = on(registry, deployed_images)
    pinned = images[variable].rsplit("@", 1)[1]
    moved_to = publish(*split(images[variable].rsplit("@", 1)[0]), "other bytes pushed under the same tag")
    done, calls = container(tmp_path, action, images)
    assert done.returncode == 1
    assert f"tag {split(images[variable].rsplit('@', 1)[0])[1]} was moved after `pulumi up` pinned {pinned}" in (
        done.stderr) and f"it names {moved_to} now" in done.stderr, done.stderr
    assert not [call for call in calls if call.startswith("run ")]


@pytest.mark.parametrize("case", ["digest gone", "bytes do not hash to the digest", "not pinned"])
def test_the_node_refuses_what_it_cannot_verify(registry, deployed_images, tmp_path, case):
    images = on(registry, deployed_images)
    reference = images["GPUFLEET_TCPXO_PLUGIN_IMAGE"]
    digest = reference.rsplit("@", 1)[1]
    expected = {"digest gone": "the pinned digest is gone from the registry",
                "bytes do not hash to the digest": "the registry served a manifest hashing to",
                "not pinned": "not pinned by digest"}[case]
    if case == "digest gone":
        del FakeArtifactRegistry.blobs[digest]
    elif case == "bytes do not hash to the digest":
        FakeArtifactRegistry.blobs[digest] = manifest("tampered")
    else:
        images["GPUFLEET_TCPXO_PLUGIN_IMAGE"] = reference.rsplit("@", 1)[0]
    done, calls = container(tmp_path, "plugin", images)
    assert done.returncode == 1 and expected in done.stderr, done.stderr
    assert not [call for call in calls if call.startswith("run ")]


def test_a_registry_that_refuses_the_nodes_token_is_refused(registry, deployed_images, tmp_path):
    """The token service turns the node away (403): nothing is run, and the cause is named."""
    images = on(registry, deployed_images)
    done = subprocess.run([str(LIB / "oci-verify"), images["GPUFLEET_TCPXO_RXDM_IMAGE"]], capture_output=True,
                          text=True, timeout=60, env={"PATH": "/usr/bin:/bin", "GPUFLEET_OCI_TOKEN": "wrong"})
    assert done.returncode == 1 and "token service answered HTTP 403" in done.stderr, done.stderr
