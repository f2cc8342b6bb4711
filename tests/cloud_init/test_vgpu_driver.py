"""The vGPU (GRID) guest driver path on a node, run for real against fixtures of each cloud's driver listing:
vgpu-fetch (AWS: the node's role, SigV4-signed as botocore signs S3; GCP: the public JSON listing and the .sha256 file
Google publishes beside each driver; Azure: a fixed URL with a pinned SHA-256), and install.d/20-vgpu-driver, whose
boot step fails on a checksum mismatch."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from gpufleet.catalog.vgpu_drivers import vgpu_drivers
from tests.fake_http import LoopbackServer, QuietHandler

from .conftest import node_script, write_env
from .test_aws_api import CREDENTIALS, TOKEN

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "node" / "vgpu"
DRIVER = (FIXTURES / "driver-stand-in.run").read_bytes()
AWS_KEY = "grid-19.5/NVIDIA-Linux-x86_64-580.159.03-grid-aws.run"
GCS_NAME = "GRID/vGPU19.1/NVIDIA-Linux-x86_64-580.82.07-grid.run"
GCS_SHA256 = (FIXTURES / "gcs-NVIDIA-Linux-x86_64-580.82.07-grid.run.sha256").read_bytes()
AZURE_PATH = "/download/2a04ca6a-9eec-40d9-9564-9cdea1ab795f/NVIDIA-Linux-x86_64-570.211.01-grid-azure.run"


class FakeClouds:
    """IMDSv2, AWS's driver bucket (ListObjectsV2 and GetObject), Google's bucket (JSON listing and media) and a
    Microsoft download path, on one loopback server; `served` is what the driver file's bytes are, `sha256_file`
    what Google's .sha256 beside it holds (None: no such object)."""

    def __init__(self, served: bytes = DRIVER, sha256_file: bytes | None = GCS_SHA256):
        self.requests: list[tuple[str, dict]] = []
        fake = self

        class Handler(QuietHandler):
            def do_PUT(self):
                self._send(200, TOKEN if self.path == "/latest/api/token" else "")

            def _bytes(self, data: bytes):
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                fake.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
                imds = {"/latest/meta-data/placement/region": "us-east-2",
                        "/latest/meta-data/instance-id": "i-0123456789abcdef0",
                        "/latest/meta-data/iam/security-credentials/": "gpufleet-node-role",
                        "/latest/meta-data/iam/security-credentials/gpufleet-node-role": json.dumps(CREDENTIALS)}
                if self.path in imds:
                    self._send(200, imds[self.path])
                elif self.path.startswith("/?list-type=2"):
                    self._send(200, (FIXTURES / "aws-list-objects-grid-19.5.xml").read_text())
                elif self.path.startswith("/storage/v1/b/nvidia-drivers-us-public/o?"):
                    self._send(200, (FIXTURES / "gcs-list-grid-vgpu19.1.json").read_text())
                elif self.path == f"/nvidia-drivers-us-public/{GCS_NAME}.sha256" and sha256_file is not None:
                    self._bytes(sha256_file)
                elif self.path in (f"/{AWS_KEY}", f"/nvidia-drivers-us-public/{GCS_NAME}", AZURE_PATH):
                    self._bytes(served)
                else:
                    self._send(404, "")

        self.server = LoopbackServer(Handler).start()
        self.url = self.server.url


@pytest.fixture
def clouds():
    made: list[FakeClouds] = []

    def make(served: bytes = DRIVER, sha256_file: bytes | None = GCS_SHA256) -> FakeClouds:
        made.append(FakeClouds(served, sha256_file))
        return made[-1]

    yield make
    for fake in made:
        fake.server.close()


def source_env(cloud: str, fake: FakeClouds, sha256: str = "") -> dict[str, str]:
    driver = vgpu_drivers()[cloud]
    url = driver.url.replace("https://download.microsoft.com", fake.url) if driver.url else ""
    return {"GPUFLEET_VGPU_SOURCE": driver.kind, "GPUFLEET_VGPU_VERSION": driver.version,
            "GPUFLEET_VGPU_BUCKET": driver.bucket, "GPUFLEET_VGPU_BUCKET_REGION": driver.bucket_region,
            "GPUFLEET_VGPU_PREFIX": driver.prefix, "GPUFLEET_VGPU_FILE_PATTERN": driver.file_pattern,
            "GPUFLEET_VGPU_URL": url, "GPUFLEET_VGPU_SHA256": sha256, "GPUFLEET_VGPU_ENDPOINT": fake.url,
            "GPUFLEET_METADATA_URL": fake.url}


def fetch(tmp_path: Path, values: dict) -> tuple[subprocess.CompletedProcess, Path]:
    script = node_script(tmp_path, "usr/local/lib/gpufleet/vgpu-fetch")
    aws = node_script(tmp_path, "usr/local/sbin/gpufleet-aws")
    dest = tmp_path / "driver.run"
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("GPUFLEET_")}, **values,
           "GPUFLEET_AWS_CLI": str(aws)}
    done = subprocess.run([sys.executable, str(script), str(dest)], env=env, capture_output=True, text=True,
                          timeout=30, check=False)
    return done, dest


SHA256 = hashlib.sha256(DRIVER).hexdigest()


@pytest.mark.parametrize("cloud, sha256", [("aws", ""), ("gcp", ""), ("azure", SHA256), ("aws", SHA256)])
def test_the_driver_is_fetched_and_verified_from_each_clouds_listing(tmp_path, clouds, cloud, sha256):
    fake = clouds()
    done, dest = fetch(tmp_path, source_env(cloud, fake, sha256))
    assert done.returncode == 0, done.stderr
    assert dest.read_bytes() == DRIVER and "verified" in done.stderr


@pytest.mark.parametrize("cloud, sha256", [("aws", ""), ("gcp", ""), ("azure", SHA256)])
def test_a_checksum_mismatch_fails_and_leaves_no_file(tmp_path, clouds, cloud, sha256):
    fake = clouds(served=DRIVER + b"# tampered\n")
    done, dest = fetch(tmp_path, source_env(cloud, fake, sha256))
    assert done.returncode == 1 and "checksum mismatch" in done.stderr and not dest.exists()


def test_a_pinned_sha256_is_checked_on_top_of_the_listing(tmp_path, clouds):
    done, dest = fetch(tmp_path, source_env("gcp", clouds(), "0" * 64))
    assert done.returncode == 1 and "does not match the pinned" in done.stderr and not dest.exists()


def test_gcp_checks_the_sha256_google_publishes_beside_the_driver(tmp_path, clouds):
    fake = clouds()
    done, dest = fetch(tmp_path, source_env("gcp", fake))
    assert done.returncode == 0, done.stderr
    assert f"published SHA-256 {SHA256}" in done.stderr
    assert f"/nvidia-drivers-us-public/{GCS_NAME}.sha256" in [path for path, _ in fake.requests]


@pytest.mark.parametrize("sha256_file", [
    ("0" * 64 + "  NVIDIA-Linux-x86_64-580.82.07-grid.run\n").encode(),  # sha256sum's line, another digest
    ("0" * 64 + "\n").encode()])  # the digest alone
def test_gcp_fails_when_the_download_does_not_match_googles_published_sha256(tmp_path, clouds, sha256_file):
    done, dest = fetch(tmp_path, source_env("gcp", clouds(sha256_file=sha256_file)))  # the listing's MD5 matches
    assert done.returncode == 1 and "does not match the published" in done.stderr and not dest.exists()


@pytest.mark.parametrize("sha256_file, words", [
    (None, "404"),
    (b"<html>Not Found</html>", "holds no SHA-256 digest"),
    (GCS_SHA256.replace(b"580.82.07", b"580.65.06"), "names another file")])
def test_gcp_fails_without_a_readable_published_sha256(tmp_path, clouds, sha256_file, words):
    fake = clouds(sha256_file=sha256_file)
    done, dest = fetch(tmp_path, source_env("gcp", fake))
    assert done.returncode == 1 and words in done.stderr and not dest.exists()
    assert f"/nvidia-drivers-us-public/{GCS_NAME}" not in [path for path, _ in fake.requests]


def test_the_gcp_source_is_the_one_googles_grid_drivers_table_names():
    driver = vgpu_drivers()["gcp"]
    assert (driver.prefix, driver.version) == ("GRID/vGPU19.1/", "19.1")
    assert "cloud.google.com/compute/docs/gpus/grid-drivers-table" in driver.source
    assert GCS_NAME.startswith(driver.prefix) and "580.82.07" in driver.source


def test_azure_without_a_pin_refuses_to_fetch(tmp_path, clouds):
    fake = clouds()
    done, dest = fetch(tmp_path, source_env("azure", fake))
    assert done.returncode == 1 and "no pinned SHA-256" in done.stderr and not dest.exists()
    assert not any(path == AZURE_PATH for path, _ in fake.requests)


def test_aws_listing_and_download_are_signed_as_the_node_as_botocore_signs_s3(tmp_path, clouds):
    fake = clouds()
    done, _ = fetch(tmp_path, source_env("aws", fake))
    assert done.returncode == 0, done.stderr
    signed = [(path, headers) for path, headers in fake.requests if "authorization" in headers]
    assert [path.split("?")[0] for path, _ in signed] == ["/", f"/{AWS_KEY}"]
    for path, headers in signed:
        assert "/us-east-1/s3/aws4_request" in headers["authorization"]  # the bucket's region, not the node's
        request = AWSRequest(method="GET", url=fake.url + path, headers={
            "X-Amz-Date": headers["x-amz-date"], "X-Amz-Security-Token": headers["x-amz-security-token"],
            "X-Amz-Content-SHA256": headers["x-amz-content-sha256"]})
        request.context["timestamp"] = headers["x-amz-date"]
        signer = S3SigV4Auth(Credentials(CREDENTIALS["AccessKeyId"], CREDENTIALS["SecretAccessKey"],
                                         CREDENTIALS["Token"]), "s3", "us-east-1")
        expected = signer.signature(signer.string_to_sign(request, signer.canonical_request(request)), request)
        assert headers["authorization"].endswith("Signature=" + expected)


def test_a_multipart_etag_is_not_taken_for_an_md5(tmp_path, clouds, monkeypatch):
    listing = (FIXTURES / "aws-list-objects-grid-19.5.xml").read_text()
    etag = listing.split("&quot;")[1]
    patched = tmp_path / "fixtures"
    patched.mkdir()
    for item in FIXTURES.iterdir():
        (patched / item.name).write_bytes(item.read_bytes())
    (patched / "aws-list-objects-grid-19.5.xml").write_text(listing.replace(etag, "0" * 32 + "-3"))
    monkeypatch.setattr(sys.modules[__name__], "FIXTURES", patched)
    done, dest = fetch(tmp_path, source_env("aws", clouds()))
    assert done.returncode == 1 and "multipart" in done.stderr and not dest.exists()


def test_the_azure_url_and_version_are_the_ones_microsofts_manifest_names():
    entry = json.loads((FIXTURES / "azure-nvidia-gpu-resources-ubuntu-grid.json").read_text())
    latest = entry["Driver"][0]["Version"][0]
    driver = vgpu_drivers()["azure"]
    assert (driver.url, driver.version) == (latest["DirLink"], latest["Num"])
    assert "22.04" in latest["SupportedOSVersions"] and "24.04" in latest["SupportedOSVersions"]


def install_step(tmp_path: Path, values: dict) -> tuple[subprocess.CompletedProcess, Path]:
    """install.d/20-vgpu-driver with apt-get, uname and sh stubbed: sh records that the installer would run."""
    lib = tmp_path / "node" / "usr/local/lib/gpufleet"
    for relative in ("usr/local/lib/gpufleet/common.sh", "usr/local/lib/gpufleet/vgpu-fetch",
                     "usr/local/lib/gpufleet/install.d/20-vgpu-driver", "usr/local/sbin/gpufleet-aws"):
        node_script(tmp_path, relative)
    stubs = tmp_path / "bin"
    stubs.mkdir()
    ran = tmp_path / "installer-ran"
    for name, body in (("apt-get", "exit 0"), ("uname", "echo 6.8.0-1030-aws"),
                       ("sh", f'echo "$@" >"{ran}"')):
        (stubs / name).write_text(f"#!/bin/bash\n{body}\n")
        (stubs / name).chmod(0o755)
    env_file = write_env(tmp_path / "node.env", values)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("GPUFLEET_")},
           "PATH": f"{stubs}:{os.environ['PATH']}", "GPUFLEET_ENV_FILE": str(env_file), "GPUFLEET_LIB": str(lib),
           "GPUFLEET_RUN_DIR": str(tmp_path / "run"), "GPUFLEET_VGPU_WORK_DIR": str(tmp_path / "work"),
           "GPUFLEET_APT_PREFERENCES_DIR": str(tmp_path / "preferences.d"),
           "GPUFLEET_AWS_CLI": str(tmp_path / "node/usr/local/sbin/gpufleet-aws")}
    done = subprocess.run(["bash", str(lib / "install.d/20-vgpu-driver")], env=env, capture_output=True, text=True,
                          timeout=60, check=False)
    return done, ran


@pytest.mark.parametrize("cloud", ["aws", "gcp"])
def test_the_boot_step_installs_a_verified_driver_and_pins_ubuntus_away(tmp_path, clouds, cloud):
    done, ran = install_step(tmp_path, source_env(cloud, clouds()))
    assert done.returncode == 0, done.stderr
    assert "--silent --dkms" in ran.read_text()
    assert (tmp_path / "run" / "reboot-required").exists()
    pin = (tmp_path / "preferences.d" / "gpufleet-grid-driver").read_text()
    assert "Pin-Priority: -1" in pin and "nvidia-driver-*" in pin and "libnvidia-container" not in pin.split(
        "Package:")[1].split("\n")[0]


@pytest.mark.parametrize("cloud, sha256", [("aws", ""), ("gcp", ""), ("azure", SHA256)])
def test_a_checksum_mismatch_fails_the_boot_step_before_the_installer_runs(tmp_path, clouds, cloud, sha256):
    done, ran = install_step(tmp_path, source_env(cloud, clouds(served=DRIVER + b"x"), sha256))
    assert done.returncode != 0 and "checksum mismatch" in done.stderr
    assert not ran.exists() and not (tmp_path / "run" / "reboot-required").exists()


def test_a_mismatch_with_googles_published_sha256_fails_the_boot_step(tmp_path, clouds):
    fake = clouds(sha256_file=("f" * 64 + "  NVIDIA-Linux-x86_64-580.82.07-grid.run\n").encode())
    done, ran = install_step(tmp_path, source_env("gcp", fake))
    assert done.returncode != 0 and "does not match the published" in done.stderr
    assert not ran.exists() and not (tmp_path / "run" / "reboot-required").exists()


SMI_Q = {"VGPU": "    Virtualization Mode                   : VGPU\n",
         "Pass-Through": "    Virtualization Mode                   : Pass-Through\n"}


def acceptance(tmp_path: Path, mode: str, total_mib: str, slice_mib: int = 3072) -> subprocess.CompletedProcess:
    """boot.d/15-vgpu-check against a stub nvidia-smi that answers as a guest with `mode` and `total_mib`."""
    lib = tmp_path / "node" / "usr/local/lib/gpufleet"
    for relative in ("usr/local/lib/gpufleet/common.sh", "usr/local/lib/gpufleet/boot.d/15-vgpu-check"):
        node_script(tmp_path, relative)
    stubs = tmp_path / "bin"
    stubs.mkdir(exist_ok=True)
    (stubs / "nvidia-smi").write_text(
        "#!/bin/bash\n"
        f'if [ "$1" = "-q" ]; then printf "%s" "==============NVSMI LOG==============\n{SMI_Q.get(mode, "")}"; '
        f'else echo "{total_mib}"; fi\n')
    (stubs / "nvidia-smi").chmod(0o755)
    env_file = write_env(tmp_path / "node.env", {"GPUFLEET_VGPU_SLICE_MIB": slice_mib,
                                                 "GPUFLEET_INSTANCE_TYPE": "g6f.large"})
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("GPUFLEET_")},
           "PATH": f"{stubs}:{os.environ['PATH']}", "GPUFLEET_ENV_FILE": str(env_file), "GPUFLEET_LIB": str(lib)}
    return subprocess.run(["bash", str(lib / "boot.d/15-vgpu-check")], env=env, capture_output=True, text=True,
                          timeout=30, check=False)


def test_acceptance_passes_with_the_grid_driver_and_the_catalogs_slice(tmp_path):
    done = acceptance(tmp_path, "VGPU", "2861")  # about 3 GB: AWS's 1/8 L4 (~2.8 GiB usable of 3 GiB)
    assert done.returncode == 0, done.stderr
    assert "slice frame buffer 2861 MiB (catalog 3072 MiB)" in done.stderr


@pytest.mark.parametrize("mode, total, words", [
    ("Pass-Through", "2861", "not VGPU"),  # the datacenter driver on a passed-through GPU
    ("", "2861", "not VGPU"),
    ("VGPU", "12288", "the catalog's g6f.large slice has 3072 MiB"),  # a bigger slice than the plan's
    ("VGPU", "[N/A]", "no frame buffer size")])
def test_acceptance_fails_on_the_wrong_driver_or_slice(tmp_path, mode, total, words):
    done = acceptance(tmp_path, mode, total)
    assert done.returncode == 1 and words in done.stderr
