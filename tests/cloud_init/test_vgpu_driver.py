"""The vGPU (GRID) guest driver path on a node, run for real against fixtures of each cloud's driver listing:
vgpu-fetch (AWS: the node's role, SigV4-signed as botocore signs S3; GCP: the copy of Google's installer's vGPU
driver nearest the cluster, checked against the SHA-256 Google's installer verifies; Azure: a fixed URL with a pinned
SHA-256), and install.d/20-vgpu-driver, whose boot step fails on a checksum mismatch."""

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
GOOGLE_PATH = "/compute-gpu-installation-us/drivers/NVIDIA-Linux-x86_64-580.159.03-grid-gcp.run"
AZURE_PATH = "/download/2a04ca6a-9eec-40d9-9564-9cdea1ab795f/NVIDIA-Linux-x86_64-570.211.01-grid-azure.run"


class FakeClouds:
    """IMDSv2, AWS's driver bucket (ListObjectsV2 and GetObject), Google's installer's download path and a Microsoft
    download path, on one loopback server; `served` is what the driver file's bytes are."""

    def __init__(self, served: bytes = DRIVER):
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
                elif self.path in (f"/{AWS_KEY}", GOOGLE_PATH, AZURE_PATH):
                    self._bytes(served)
                else:
                    self._send(404, "")

        self.server = LoopbackServer(Handler).start()
        self.url = self.server.url


@pytest.fixture
def clouds():
    made: list[FakeClouds] = []

    def make(served: bytes = DRIVER) -> FakeClouds:
        made.append(FakeClouds(served))
        return made[-1]

    yield make
    for fake in made:
        fake.server.close()


SHA256 = hashlib.sha256(DRIVER).hexdigest()


def source_env(cloud: str, fake: FakeClouds, sha256: str = "", published: str | None = SHA256,
               region: str = "us-central1") -> dict[str, str]:
    """node.env's driver lines as the plan writes them for `cloud`, the URL moved to `fake`. Google's file is the
    stand-in here, so its published SHA-256 is the stand-in's unless `published` gives another (None: the data's)."""
    driver = vgpu_drivers()[cloud]
    url = driver.url_for(region)
    for host in ("https://download.microsoft.com", "https://storage.googleapis.com"):
        url = url.replace(host, fake.url)
    published_sha256 = "" if not driver.published_sha256 else driver.published_sha256 if published is None else published
    return {"GPUFLEET_VGPU_SOURCE": driver.kind, "GPUFLEET_VGPU_VERSION": driver.version,
            "GPUFLEET_VGPU_BUCKET": driver.bucket, "GPUFLEET_VGPU_BUCKET_REGION": driver.bucket_region,
            "GPUFLEET_VGPU_PREFIX": driver.prefix, "GPUFLEET_VGPU_FILE_PATTERN": driver.file_pattern,
            "GPUFLEET_VGPU_URL": url, "GPUFLEET_VGPU_SHA256": sha256, "GPUFLEET_VGPU_PUBLISHED_SHA256": published_sha256,
            "GPUFLEET_VGPU_ENDPOINT": fake.url, "GPUFLEET_METADATA_URL": fake.url}


def fetch(tmp_path: Path, values: dict) -> tuple[subprocess.CompletedProcess, Path]:
    script = node_script(tmp_path, "usr/local/lib/gpufleet/vgpu-fetch")
    aws = node_script(tmp_path, "usr/local/sbin/gpufleet-aws")
    dest = tmp_path / "driver.run"
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("GPUFLEET_")}, **values,
           "GPUFLEET_AWS_CLI": str(aws)}
    done = subprocess.run([sys.executable, str(script), str(dest)], env=env, capture_output=True, text=True,
                          timeout=30, check=False)
    return done, dest


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


def test_gcp_checks_the_sha256_googles_installer_verifies(tmp_path, clouds):
    """The data's own published digest (Google's, of the real file) does not match the stand-in: refused, no file."""
    fake = clouds()
    done, dest = fetch(tmp_path, source_env("gcp", fake, published=None))
    assert done.returncode == 1 and not dest.exists()
    assert f"does not match the published {vgpu_drivers()['gcp'].published_sha256}" in done.stderr
    assert GOOGLE_PATH in [path for path, _ in fake.requests]


@pytest.mark.parametrize(("region", "copy"), [("us-central1", "us"), ("europe-west4", "eu"), ("me-central2", "eu"),
                                              ("asia-southeast1", "asia"), ("australia-southeast1", "asia"),
                                              ("northamerica-northeast1", "us")])
def test_the_gcp_driver_is_the_one_googles_installer_gives_g4_slices_from_the_nearest_copy(region, copy):
    driver = vgpu_drivers()["gcp"]
    assert driver.url_for(region) == (f"https://storage.googleapis.com/compute-gpu-installation-{copy}/drivers/"
                                      "NVIDIA-Linux-x86_64-580.159.03-grid-gcp.run")
    assert (driver.kind, driver.version, driver.needs_pinned_checksum) == ("url", "580.159.03", False)
    assert driver.published_sha256 == "f3e4c4990e859046388e9f0a052ab3ed35558263c71a5398be37c2d1e0f6c678"
    assert "GoogleCloudPlatform/compute-gpu-installation @ e4d32d90993a" in driver.source


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
    done, ran = install_step(tmp_path, source_env("gcp", clouds(), published="f" * 64))
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
