"""Kernel, per-kernel NVIDIA modules and NVIDIA user space move together, on each image kind.

The driver step (`install.d/20-driver`) runs against stand-in apt/dpkg tools for each kind of image: a stock image
where gpufleet installs Ubuntu's precompiled modules, a driver-ready image that ships them (Canonical's GCP
accelerator images), and a driver-ready image whose modules DKMS builds (NVIDIA's repository packages on the Azure
HPC image, a runfile with DKMS). The apt configuration each node ends with is then read by apt itself (python3-apt's
parser, as unattended-upgrades reads it) and matched with unattended-upgrades' own `is_pkgname_in_blacklist`
against real Ubuntu package names:
- precompiled modules: the kernel, its module packages and the user space are all held, so a kernel security
  update cannot bring a module built for another driver version, or a kernel without a module;
- DKMS: the user space (and DKMS source) is held and the kernel flows: DKMS builds the held driver for each kernel.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.validators import require_tool

from .conftest import FILES

LIB = FILES / "usr/local/lib/gpufleet"
USER_SPACE_HOLD = FILES / "etc/apt/apt.conf.d/51gpufleet-nvidia-hold"
UU_HINT = "install it with `apt-get install -y unattended-upgrades` (brings python3-apt)"

# Real Ubuntu package names (noble/jammy, aws/azure/gcp/generic flavours).
KERNEL = ["linux-image-6.8.0-1021-aws", "linux-modules-6.8.0-1021-aws", "linux-aws-headers-6.8.0-1021", "linux-aws",
          "linux-image-aws",
          "linux-aws-6.8-headers-6.8.0-1021", "linux-image-6.8.0-1020-azure", "linux-modules-extra-6.8.0-1020-azure",
          "linux-azure", "linux-image-azure", "linux-azure-nvidia", "linux-image-6.8.0-1019-gcp", "linux-gcp",
          "linux-image-gcp", "linux-image-generic-hwe-22.04", "linux-image-6.8.0-49-generic",
          "linux-modules-6.8.0-49-generic"]
MODULES = ["linux-modules-nvidia-580-server-open-6.8.0-1021-aws", "linux-objects-nvidia-580-server-open-6.8.0-1021-aws",
           "linux-signatures-nvidia-6.8.0-1021-aws", "linux-modules-nvidia-580-server-open-aws",
           "linux-modules-nvidia-580-server-6.8.0-1020-azure", "linux-modules-nvidia-580-server-open-gcp",
           "linux-modules-nvidia-570-open-generic-hwe-24.04", "linux-modules-nvidia-595-nvidia"]
USER_SPACE = ["nvidia-utils-580-server", "libnvidia-compute-580-server", "nvidia-kernel-common-580-server",
              "nvidia-headless-no-dkms-580-server-open", "nvidia-compute-utils-580-server", "nvidia-fabricmanager-580",
              "nvidia-dkms-580-open", "nvidia-kernel-source-580-open", "nvidia-driver-580-open", "libnvidia-nscq-580",
              "cuda-drivers-580", "libcuda1", "libnccl2", "datacenter-gpu-manager-4-core"]
# Headers do not matter to precompiled modules; a generic meta package cannot move without a held linux-image-*.
FLOWS_WHERE_PRECOMPILED = ["linux-headers-6.8.0-1021-aws", "linux-headers-aws", "linux-generic-hwe-22.04"]
FLOWS = ["linux-firmware", "linux-base", "linux-libc-dev", "linux-tools-common", "intel-microcode", "amd64-microcode",
         "openssl", "libssl3t64", "openssh-server", "sudo"]

# Stand-ins for the tools the driver step calls; `dpkg -l` lists $FAKE_INSTALLED ("ii  <name>" lines).
FAKES = {
    "apt-get": "exit 0",
    "apt-mark": "exit 0",
    "update-initramfs": "exit 0",
    "uname": 'echo "6.8.0-1021-aws"',
    "nvidia-smi": 'echo "580.95.05"',
    "dpkg": 'for p in $FAKE_INSTALLED; do printf "ii  %s  580.95.05-0ubuntu1  amd64  module\\n" "$p"; done; [ -n "$FAKE_INSTALLED" ]',
}
IMAGE_KINDS = {
    # kind: (GPUFLEET_IMAGE_KIND, NVIDIA module packages the image has once the step ran)
    "stock, precompiled modules installed by gpufleet": ("ubuntu-24.04", "linux-modules-nvidia-580-server-open-6.8.0-1021-aws"),
    "driver-ready, precompiled modules (GCP accelerator image)": ("driver-ready", "linux-modules-nvidia-580-server-open-6.8.0-1021-gcp"),
    "driver-ready, DKMS modules (Azure HPC image, runfile)": ("driver-ready", ""),
}
PRECOMPILED = [kind for kind, (_, installed) in IMAGE_KINDS.items() if installed]

# Runs in the system's Python, where python3-apt and unattended-upgrades live.
UU_PROBE = """
import importlib.machinery, importlib.util, json, sys
import apt_pkg
loader = importlib.machinery.SourceFileLoader("unattended_upgrade", sys.argv[1])
spec = importlib.util.spec_from_loader(loader.name, loader)
uu = importlib.util.module_from_spec(spec)
loader.exec_module(uu)
apt_pkg.init_config()
apt_pkg.config.clear("Unattended-Upgrade")  # only what the node's files say
for path in sys.argv[3:]:
    apt_pkg.read_config_file(apt_pkg.config, path)
blacklist = apt_pkg.config.value_list("Unattended-Upgrade::Package-Blacklist")
names = json.loads(sys.argv[2])
print(json.dumps({"blacklist": blacklist, "held": [n for n in names if uu.is_pkgname_in_blacklist(n, blacklist)],
                  "reboot": apt_pkg.config.find_b("Unattended-Upgrade::Automatic-Reboot", True)}))
"""


def run_driver_step(tmp_path: Path, image_kind: str, installed: str) -> list[Path]:
    """The apt.conf.d files the node has after the driver step: the shipped user-space hold plus what it installed."""
    if shutil.which("bash") is None:
        pytest.skip("bash is not installed")
    bin_dir, conf_dir = tmp_path / "bin", tmp_path / "etc/apt/apt.conf.d"
    bin_dir.mkdir()
    conf_dir.mkdir(parents=True)
    for name, body in FAKES.items():
        (bin_dir / name).write_text(f"#!/bin/bash\n{body}\n")
        (bin_dir / name).chmod(0o755)
    shutil.copy(USER_SPACE_HOLD, conf_dir)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "GPUFLEET_LIB": str(LIB), "GPUFLEET_ENV_FILE": "/nonexistent",
           "GPUFLEET_RUN_DIR": str(tmp_path / "run"), "GPUFLEET_ETC": str(tmp_path / "etc"),
           "GPUFLEET_IMAGE_KIND": image_kind, "GPUFLEET_DRIVER_BRANCH": "580", "GPUFLEET_DRIVER_FLAVOR": "open",
           "GPUFLEET_MIN_DRIVER_BRANCH": "580", "GPUFLEET_CUDA": "13.0", "FAKE_INSTALLED": installed}
    done = subprocess.run(["bash", str(LIB / "install.d/20-driver")], env=env, capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 0, done.stderr
    return sorted(conf_dir.iterdir())


def held_by_unattended_upgrades(files: list[Path], names: list[str]) -> dict:
    tool = require_tool("unattended-upgrade", UU_HINT)
    python = shutil.which("python3", path="/usr/bin:/bin")
    done = subprocess.run([python, "-c", UU_PROBE, tool, json.dumps(names), *map(str, files)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module", params=sorted(IMAGE_KINDS))
def node(request, tmp_path_factory):
    kind = request.param
    files = run_driver_step(tmp_path_factory.mktemp("node"), *IMAGE_KINDS[kind])
    return kind, files, held_by_unattended_upgrades(files, KERNEL + MODULES + USER_SPACE + FLOWS
                                                    + FLOWS_WHERE_PRECOMPILED)


def test_the_nvidia_user_space_is_held_on_every_image_kind(node):
    _, _, probe = node
    assert sorted(set(USER_SPACE) - set(probe["held"])) == []


def test_kernel_and_modules_are_held_with_the_driver_where_modules_are_precompiled(node):
    kind, files, probe = node
    expected = set(KERNEL + MODULES) if kind in PRECOMPILED else set()
    assert {name for name in KERNEL + MODULES if name in probe["held"]} == expected, [f.name for f in files]


def test_packages_without_a_kernel_abi_keep_flowing(node):
    _, _, probe = node
    assert sorted(set(FLOWS) & set(probe["held"])) == []


def test_apt_reads_every_pattern_of_both_files(node):
    """apt merges the lists of both files (a syntax slip would drop patterns silently); Automatic-Reboot stays off."""
    _, files, probe = node
    written = [pattern for f in files for pattern in re.findall(r'"([^"]+)";', f.read_text())
               if not pattern.startswith(("true", "false"))]
    assert probe["blacklist"] == written and len(written) >= 6
    assert probe["reboot"] is False  # a held kernel still never reboots a node by itself
