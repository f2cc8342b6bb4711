"""The VM suite's shared pieces: the tools it needs and the Debian image every boot copies (built once per session,
cached by its inputs)."""

from __future__ import annotations

import os
import shutil

import pytest

from .image import build_image

TOOLS = {"qemu-system-x86_64": "qemu-system-x86", "mmdebstrap": "mmdebstrap", "mke2fs": "e2fsprogs", "debugfs": "e2fsprogs",
         "genisoimage": "genisoimage"}


def require_vm_tools() -> None:
    missing = [package for tool, package in TOOLS.items() if shutil.which(tool) is None]
    if missing:
        message = f"the VM suite needs `apt-get install -y {' '.join(missing)}`"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message + " (required in CI)")
        pytest.skip(message)


@pytest.fixture(scope="session")
def image(tmp_path_factory):
    require_vm_tools()
    log_path = tmp_path_factory.mktemp("image") / "build.log"
    with log_path.open("w") as log:
        return build_image(log)
