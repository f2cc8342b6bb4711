"""A unit root as a booted machine has it, for `systemd-analyze verify --root`: the host's basic targets, the
cloud-init package's units, the cloud-init generator's `cloud-init.target` link in multi-user.target.wants, and
the rendered user data's units enabled the way `systemctl enable` links them. Any gpufleet cloud-config: a node's
(its install script enables GPUFLEET_UNITS) or a server's (runcmd's `systemctl enable`); a machine that enables
its units some other way adds one reader to ENABLED_UNIT_READERS."""

from __future__ import annotations

import configparser
import shlex
import shutil
from collections.abc import Callable
from pathlib import Path

from tests.yaml_reader import read_yaml

UNIT_DIRS = (Path("/usr/lib/systemd/system"), Path("/lib/systemd/system"))

# Host units our units and cloud-init's units are ordered against (the rest are compiled into systemd).
HOST_UNITS = ("sysinit.target", "basic.target", "shutdown.target", "slices.target", "multi-user.target",
              "network-online.target", "network.target", "network-pre.target", "sockets.target", "paths.target",
              "timers.target", "local-fs.target", "local-fs-pre.target", "swap.target", "default.target",
              "graphical.target", "rescue.target", "emergency.target", "getty.target", "sysinit.target",
              "systemd-user-sessions.service")
CLOUD_INIT_UNITS = ("cloud-init-local.service", "cloud-init.service", "cloud-config.service", "cloud-final.service",
                    "cloud-config.target", "cloud-init.target")
CLOUD_INIT_HINT = "install cloud-init (`apt-get install -y cloud-init`): its units are part of the boot-order check"


def host_unit(name: str) -> Path | None:
    for folder in UNIT_DIRS:
        if (folder / name).exists():
            return folder / name
    return None


def cloud_init_units_present() -> bool:
    return all(host_unit(name) for name in CLOUD_INIT_UNITS)


def _wanted_by(text: str) -> list[str]:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str
    parser.read_string(text)
    return parser.get("Install", "WantedBy", fallback="").split()


def units_from_node_env(document: dict, files: dict[str, str]) -> list[str]:
    """A GPU node's: gpufleet-install runs `systemctl enable $GPUFLEET_UNITS` from /etc/gpufleet/node.env."""
    if "/etc/gpufleet/node.env" not in files:
        return []
    node_env = dict(line.split("=", 1) for line in files["/etc/gpufleet/node.env"].splitlines()
                    if line and not line.startswith("#"))
    return node_env["GPUFLEET_UNITS"].strip("'").split()


def units_from_runcmd(document: dict, files: dict[str, str]) -> list[str]:
    """A server's: `systemctl enable [--now] UNIT...` in runcmd (either of cloud-init's forms, list or string)."""
    units = []
    for command in document.get("runcmd") or []:
        words = command if isinstance(command, list) else shlex.split(command)
        if words[:2] == ["systemctl", "enable"]:
            units += [word for word in words[2:] if not word.startswith("-")]
    return units


ENABLED_UNIT_READERS: tuple[Callable[[dict, dict[str, str]], list[str]], ...] = (units_from_node_env,
                                                                                 units_from_runcmd)


def enabled_units(user_data: str) -> list[str]:
    """The units of ours that the cloud-config enables, in the order found."""
    document = read_yaml(user_data)
    files = {entry["path"]: entry["content"] for entry in document.get("write_files", [])}
    found: list[str] = []
    for reader in ENABLED_UNIT_READERS:
        found += [name for name in reader(document, files) if name not in found]
    return found


def build_root(root: Path, user_data: str) -> list[str]:
    """Fills `root` for `user_data`; returns the unit paths (inside the root) to verify: multi-user.target and every
    unit the cloud-config enables."""
    system = root / "usr/lib/systemd/system"
    system.mkdir(parents=True, exist_ok=True)
    for name in HOST_UNITS + CLOUD_INIT_UNITS:
        source = host_unit(name)
        if source is not None:
            shutil.copy(source.resolve(), system / name)
    etc = root / "etc/systemd/system"
    etc.mkdir(parents=True, exist_ok=True)
    # What the cloud-init generator links at every boot where cloud-init is enabled.
    (etc / "multi-user.target.wants").mkdir(exist_ok=True)
    (etc / "multi-user.target.wants" / "cloud-init.target").symlink_to("/usr/lib/systemd/system/cloud-init.target")
    (etc / "default.target").symlink_to("/usr/lib/systemd/system/multi-user.target")
    # The units cloud-init's own package enables (its [Install] sections).
    enabled: dict[str, str] = {}
    for name in CLOUD_INIT_UNITS:
        enabled[name] = (system / name).read_text()
    files = {entry["path"]: entry["content"] for entry in read_yaml(user_data).get("write_files", [])}
    units = enabled_units(user_data)
    binaries = {"/usr/bin/nvidia-persistenced"}
    (etc / "nvidia-persistenced.service").write_text("[Service]\nType=forking\nExecStart=/usr/bin/nvidia-persistenced\n")
    for path, content in files.items():
        if path.startswith("/etc/systemd/system/"):
            target = root / path.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content)
            for line in content.splitlines():
                key, _, value = line.partition("=")
                if key.startswith("Exec") and value.lstrip("-").startswith("/"):
                    binaries.add(value.lstrip("-").split()[0])
    for name in units:
        enabled[name] = (etc / name).read_text()
    for name, text in enabled.items():
        for wanted_by in _wanted_by(text):
            wants = etc / f"{wanted_by}.wants"
            wants.mkdir(exist_ok=True)
            link = wants / name
            if not link.is_symlink():
                link.symlink_to(f"/etc/systemd/system/{name}" if name in units else f"/usr/lib/systemd/system/{name}")
    for folder in ("usr/bin", "usr/local/bin", "usr/local/sbin", "usr/local/lib/gpufleet", "bin", "usr/sbin"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    for binary in binaries | {"/usr/bin/cloud-init", "/bin/sh", "/usr/bin/sh"}:
        path = root / binary.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            path.write_text("#!/bin/sh\n")
            path.chmod(0o755)
    return ["/usr/lib/systemd/system/multi-user.target", *[f"/etc/systemd/system/{name}" for name in units]]
