"""Throwaway OpenPGP signing keys for the tests of the nodes' key and repository checks, each in a GNUPGHOME of its
own, made with the real gpg."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def gpg(home: Path, *args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(["gpg", "--batch", "--quiet", *args], env=dict(os.environ, GNUPGHOME=str(home)),
                          check=True, capture_output=True, timeout=60, **kwargs)


def new_signing_key(home: Path, user_id: str) -> str:
    """An ed25519 signing key without a passphrase in `home`; its primary-key fingerprint."""
    gpg(home, "--passphrase", "", "--quick-gen-key", user_id, "ed25519", "sign", "never")
    listing = gpg(home, "--with-colons", "--fingerprint", text=True).stdout
    return next(line.split(":")[9] for line in listing.splitlines() if line.startswith("fpr"))


def stop_agent(home: Path) -> None:
    """Ends the gpg-agent gpg started for `home`: it would outlive the test run."""
    subprocess.run(["gpgconf", "--kill", "gpg-agent"], env=dict(os.environ, GNUPGHOME=str(home)), check=False,
                   capture_output=True, timeout=60)
