"""Builders for the migration tests: wheels and an in-tree build backend written here, virtual environments
installed by pip, fake nvidia-smi outputs, and a loopback sshd reached only through a tunnel ProxyCommand."""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import socket
import stat
import subprocess
import sys
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

from tests.validators import require_tool

TUNNEL = Path(__file__).with_name("tunnel.py")
SSHD_HINT = "install it with `apt-get install -y openssh-server` (.ci/run does)"
RSYNC_HINT = "install it with `apt-get install -y rsync` (.ci/run does)"

# nvidia-smi --query-gpu=name,memory.total --format=csv, as each GPU prints it.
SMI_OUTPUTS = {
    "a100-40gb": "name, memory.total [MiB]\nNVIDIA A100-SXM4-40GB, 40960 MiB\n",
    "t4": "name, memory.total [MiB]\nTesla T4, 15360 MiB\n",
    "rtx3090": "name, memory.total [MiB]\nNVIDIA GeForce RTX 3090, 24576 MiB\n",
    "a100-40gb-x2": "name, memory.total [MiB]\nNVIDIA A100-SXM4-40GB, 40960 MiB\nNVIDIA A100-SXM4-40GB, 40960 MiB\n",
}
NO_DRIVER = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."


def fake_nvidia_smi(folder: Path, gpu: str | None) -> Path:
    """A `nvidia-smi` in `folder` answering the GPU query (and the driver query) like the real tool; `None`: a
    machine with the tool but no working driver (exit 9)."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "nvidia-smi"
    if gpu is None:
        script.write_text(f"#!/bin/sh\ncat <<'END'\n{NO_DRIVER}\nEND\nexit 9\n")
    else:
        listing = SMI_OUTPUTS[gpu]
        script.write_text("#!/bin/sh\ncase \"$*\" in\n  *driver_version*) echo 535.183.01; exit 0 ;;\nesac\n"
                          f"cat <<'END'\n{listing}END\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return folder


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def wheel_files(name: str, version: str, files: dict[str, str]) -> dict[str, bytes]:
    """The members of a py3-none-any wheel: the given files, METADATA, WHEEL and a RECORD of them all."""
    dist = f"{name.replace('-', '_')}-{version}.dist-info"
    members = {path: text.encode() for path, text in files.items()}
    members[f"{dist}/METADATA"] = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode()
    members[f"{dist}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: gpufleet-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    record = "".join(f"{path},{_record_hash(data)},{len(data)}\n" for path, data in members.items())
    members[f"{dist}/RECORD"] = (record + f"{dist}/RECORD,,\n").encode()
    return members


def build_wheel(folder: Path, name: str, version: str, files: dict[str, str] | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name.replace('-', '_')}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for member, data in wheel_files(name, version, files or {f"_{name.replace('-', '_')}_marker.py": ""}).items():
            archive.writestr(member, data)
    return path


# A PEP 517/660 build backend in the project's own folder (`backend-path`): pip builds the editable wheel with it,
# without setuptools or a download, and records the install as editable (PEP 610 direct_url.json) as it always does.
BACKEND = '''
import base64, hashlib, os, zipfile
NAME, VERSION = "demo-editable", "0.3.0"
HERE = os.path.dirname(os.path.abspath(__file__))


def _write(directory, files):
    dist = "demo_editable-0.3.0.dist-info"
    files = {**files, dist + "/METADATA": "Metadata-Version: 2.1\\nName: demo-editable\\nVersion: 0.3.0\\n",
             dist + "/WHEEL": "Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"}
    lines = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        lines.append(f"{path},sha256={digest},{len(text.encode())}")
    files[dist + "/RECORD"] = "\\n".join(lines + [dist + "/RECORD,,"]) + "\\n"
    name = "demo_editable-0.3.0-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(directory, name), "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return name


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _write(wheel_directory, {"demo_editable/__init__.py": open(os.path.join(HERE, "demo_editable", "__init__.py")).read()})


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _write(wheel_directory, {"demo_editable.pth": HERE + "\\n"})
'''


def editable_project(folder: Path) -> Path:
    (folder / "demo_editable").mkdir(parents=True)
    (folder / "demo_editable" / "__init__.py").write_text("VALUE = 3\n")
    (folder / "backend.py").write_text(BACKEND)
    (folder / "pyproject.toml").write_text('[build-system]\nrequires = []\nbuild-backend = "backend"\n'
                                           'backend-path = ["."]\n')
    return folder


def make_venv(folder: Path) -> Path:
    """An empty virtual environment (no pip: the tests' own pip installs into it); its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    return folder / "bin" / "python"


def pip_install(python: Path, *args: str, cwd: Path | None = None) -> None:
    subprocess.run([sys.executable, "-m", "pip", "--isolated", "--python", str(python), "install", "--quiet",
                    "--no-deps", "--no-index", "--no-build-isolation", "--disable-pip-version-check", *args],
                   check=True, cwd=cwd)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class Sshd:
    """A throwaway sshd on 127.0.0.1: its port, the user key, and the ProxyCommand that stands in for SSM/IAP."""

    port: int
    key: Path
    known_hosts: Path
    tunnel_log: Path
    process: subprocess.Popen

    @property
    def proxy_command(self) -> str:
        return f"{sys.executable} {TUNNEL} {self.port} {self.tunnel_log} %h"

    def ssh_arguments(self) -> list[str]:
        return ["--identity", str(self.key), "--proxy-command", self.proxy_command, "--ssh-config", "/dev/null",
                "--ssh-option", f"UserKnownHostsFile={self.known_hosts}", "--user", _user()]

    def tunnelled_hosts(self) -> list[str]:
        return self.tunnel_log.read_text().split() if self.tunnel_log.exists() else []


def _user() -> str:
    import getpass

    return getpass.getuser()


def start_sshd(folder: Path) -> Sshd:
    sshd = shutil.which("sshd") or ("/usr/sbin/sshd" if os.access("/usr/sbin/sshd", os.X_OK) else None)
    if sshd is None:
        sshd = require_tool("sshd", SSHD_HINT)
    require_tool("rsync", RSYNC_HINT)
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("host_key", "user_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(folder / name)], check=True)
    shutil.copy(folder / "user_key.pub", folder / "authorized_keys")
    port = free_port()
    config = folder / "sshd_config"
    config.write_text(f"Port {port}\nListenAddress 127.0.0.1\nHostKey {folder / 'host_key'}\n"
                      f"PidFile {folder / 'sshd.pid'}\nAuthorizedKeysFile {folder / 'authorized_keys'}\n"
                      "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
                      "PermitRootLogin prohibit-password\nAcceptEnv LANG\n")
    if os.geteuid() == 0:
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # sshd's privilege separation directory, when root
    with open(folder / "sshd.log", "w") as log:  # the child keeps its own descriptor
        process = subprocess.Popen([sshd, "-D", "-e", "-f", str(config)], stderr=log)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"sshd exited: {(folder / 'sshd.log').read_text()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            time.sleep(0.1)
    return Sshd(port=port, key=folder / "user_key", known_hosts=folder / "known_hosts",
                tunnel_log=folder / "tunnel.log", process=process)
