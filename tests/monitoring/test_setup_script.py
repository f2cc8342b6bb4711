"""The server's setup script reads each secret store's answer correctly, against recorded answers in the shapes the
APIs document (GCE metadata token, Secret Manager `versions/latest:access`, Azure IMDS token, Key Vault GetSecret),
and writes the value, and only the value, into a 0640 file without printing it."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "components/monitoring/server/files/gpufleet-monitoring-setup"
FIXTURES = ROOT / "tests/fixtures/monitoring"
CURL = f"""#!/usr/bin/env bash
for arg in "$@"; do url="$arg"; done
case "$url" in
  *computeMetadata*token) cat {FIXTURES}/gcp-token.json ;;
  *secretmanager.googleapis.com/v1/projects/p/secrets/s/versions/latest:access) cat {FIXTURES}/gcp-secret-access.json ;;
  *169.254.169.254/metadata/identity*) cat {FIXTURES}/azure-token.json ;;
  https://gfm0.vault.azure.net/secrets/gpufleet-pagerduty-key?api-version=7.4) cat {FIXTURES}/azure-secret.json ;;
  *) echo "unexpected url $url" >&2; exit 22 ;;
esac
"""
AWS = """#!/usr/bin/env bash
[ "$*" = "ssm get-parameter --region us-east-2 --name /gpufleet/s/c/monitoring/smtp-password --with-decryption \
--query Parameter.Value --output text" ] || { echo "unexpected: $*" >&2; exit 2; }
echo 'recorded-smtp-password'
"""


@pytest.fixture
def stubs(tmp_path: Path) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in {"curl": CURL, "aws": AWS, "chown": "#!/bin/sh\nexit 0\n"}.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "SECRETS_DIR": str(tmp_path / "secrets")}


@pytest.mark.parametrize("cloud, reference, expected", [
    ("gcp", "projects/p/secrets/s", "https://hooks.slack.com/services/T0/B0/recorded"),
    ("azure", "https://gfm0.vault.azure.net/secrets/gpufleet-pagerduty-key", "recorded-pagerduty-key"),
    ("aws", "/gpufleet/s/c/monitoring/smtp-password", "recorded-smtp-password"),
])
def test_secret_is_written_from_the_store_answer_and_never_printed(cloud, reference, expected, stubs, tmp_path):
    command = f'source "{SCRIPT}"; CLOUD={cloud}; AWS_REGION=us-east-2; write_secret role "{reference}" prometheus'
    result = subprocess.run(["bash", "-c", command], env=stubs, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    written = tmp_path / "secrets" / "role"
    assert written.read_text() == expected
    assert stat.S_IMODE(written.stat().st_mode) == 0o640
    assert expected.strip() not in result.stdout + result.stderr


def test_a_failing_store_leaves_no_partial_secret(stubs, tmp_path):
    command = f'source "{SCRIPT}"; CLOUD=gcp; write_secret role projects/p/secrets/missing prometheus'
    result = subprocess.run(["bash", "-c", command], env=stubs, capture_output=True, text=True, timeout=60)
    assert result.returncode != 0 and list((tmp_path / "secrets").iterdir()) == []
