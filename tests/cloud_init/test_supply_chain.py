"""Node downloads are verified: signing keys by pinned fingerprint (trusted_key in common.sh, run here with real
gpg against a generated key), the EFA installer by its detached signature, and no step pipes a fetched key into
apt unchecked."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.gpg_keys import gpg, new_signing_key, stop_agent

from .conftest import FILES

COMMON = FILES / "usr/local/lib/gpufleet/common.sh"
INSTALL = FILES / "usr/local/lib/gpufleet/install.d"
UNPINNED: set[str] = set()  # every install step's key is pinned by fingerprint


@pytest.fixture(scope="module")
def signing_key(tmp_path_factory) -> Iterator[tuple[Path, str]]:
    if shutil.which("gpg") is None:
        pytest.skip("gpg is not installed (`apt-get install -y gnupg`)")
    home = tmp_path_factory.mktemp("gnupg")
    fingerprint = new_signing_key(home, "gpufleet test <t@example.com>")
    key = home / "key.asc"
    key.write_text(gpg(home, "--armor", "--export", fingerprint, text=True).stdout)
    yield key, fingerprint
    stop_agent(home)


def trusted_key(tmp_path: Path, key: Path, fingerprint: str) -> tuple[subprocess.CompletedProcess, Path]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    curl = bin_dir / "curl"
    curl.write_text(f'#!/bin/bash\nwhile [ $# -gt 0 ]; do [ "$1" = -o ] && cp "{key}" "$2"; shift; done\n')
    curl.chmod(0o755)
    keyring = tmp_path / "keyring.gpg"
    script = f'. "{COMMON}"; trusted_key https://example.invalid/key "{fingerprint}" "{keyring}"'
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", GPUFLEET_ENV_FILE="/nonexistent"))
    return done, keyring


def test_a_key_with_the_pinned_fingerprint_becomes_a_binary_keyring(signing_key, tmp_path):
    key, fingerprint = signing_key
    done, keyring = trusted_key(tmp_path, key, fingerprint)
    assert done.returncode == 0, done.stderr
    assert keyring.read_bytes()[:1] != b"-"  # binary OpenPGP, as apt's signed-by reads it


def test_a_key_with_another_fingerprint_is_refused(signing_key, tmp_path):
    key, _ = signing_key
    done, keyring = trusted_key(tmp_path, key, "EB693B3035CD5710E231E123A4B469963BF863CC")
    assert done.returncode == 1 and "refused" in done.stderr and not keyring.exists()


def test_no_install_step_trusts_an_unchecked_key_or_package():
    for step in sorted(INSTALL.iterdir()):
        code = "\n".join(line for line in step.read_text().splitlines() if not line.lstrip().startswith("#"))
        if step.name not in UNPINNED:
            assert not re.search(r"curl[^\n]*\|\s*gpg", code), step.name
        assert "cuda-keyring" not in code and "dpkg -i" not in code, step.name


def test_the_efa_installer_is_checked_by_its_signature_before_it_runs():
    code = (INSTALL / "60-efa").read_text()
    assert code.index("gpgv --keyring") < code.index("tar -xzf") < code.index("efa_installer.sh")
    assert '4E9091BCBB97A96B26B15E59A05480B1DD2D3CCC' in COMMON.read_text()  # AWS's published EFA key


def test_the_gib_plugins_repositories_are_each_trusted_with_their_own_pinned_google_key():
    code = (INSTALL / "62-gcp-gpudirect").read_text()
    assert 'trusted_key https://packages.cloud.google.com/apt/doc/apt-key.gpg "$GOOGLE_CLOUD_PACKAGES_KEY_FINGERPRINT"' \
        in code
    assert 'trusted_key https://us-apt.pkg.dev/doc/repo-signing-key.gpg "$GOOGLE_ARTIFACT_REGISTRY_KEY_FINGERPRINT"' \
        in code
    assert 'GOOGLE_CLOUD_PACKAGES_KEY_FINGERPRINT="A362B822F6DEDC652817EA46B53DC80D13EDEF05"' in code
    assert 'GOOGLE_ARTIFACT_REGISTRY_KEY_FINGERPRINT="35BAA0B33E9EB396F59CA838C0BA5CE6DC6315A3"' in code
