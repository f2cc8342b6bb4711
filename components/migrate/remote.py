"""ssh to cluster nodes through the cloud's private path, as an ssh ProxyCommand (no public IP, no open port 22):
- AWS: Session Manager's AWS-StartSSHSession document (`%h` is the instance id; needs the session-manager-plugin);
- GCP: IAP TCP forwarding, `gcloud compute start-iap-tunnel %h %p --listen-on-stdin` (`%h` is the instance name);
- Azure: Bastion's native-client tunnel, through the Ansible collection's `files/bastion-proxy`, the one helper
  that `gpufleet inventory --bastion` also uses (`%h` is the VM's resource id).
`--proxy-command` replaces the cloud's command (a jump host, or the tests' loopback tunnel).
"""

from __future__ import annotations

import getpass
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from ..inventory.collection import collection_path
from ..spec.errors import MISSING, Problem, SpecError
from .manifest import ROOT

DEFAULT_USERS = {"aws": "ubuntu", "azure": "azureuser"}  # AWS: the Ubuntu-based images gpufleet boots


@dataclass(frozen=True)
class Nodes:
    """How to reach the cluster's nodes with ssh."""

    hosts: tuple[str, ...]
    user: str
    proxy_command: str
    identity: str | None = None
    ssh_config: str | None = None
    options: tuple[str, ...] = field(default=())

    def ssh_args(self, host: str) -> list[str]:
        """ssh and its options for `host`, without the destination (`alias(host)`): for `rsync -e` and commands.
        The node's real name goes into the ProxyCommand (`%h`), so an Azure resource id, whose slashes rsync would
        take for a local path, never appears in `host:path`."""
        proxy = self.proxy_command.replace("%h", shlex.quote(host))
        args = ["ssh", "-o", "BatchMode=yes", "-o", f"ProxyCommand={proxy}",
                "-o", "StrictHostKeyChecking=accept-new", "-o", "ConnectTimeout=60", "-o", "ServerAliveInterval=15"]
        if self.ssh_config:
            args[1:1] = ["-F", self.ssh_config]
        if self.identity:
            args += ["-i", self.identity, "-o", "IdentitiesOnly=yes"]
        for option in self.options:
            args += ["-o", option]
        return [*args, "-l", self.user]

    def rsync_shell(self, host: str) -> str:
        return shlex.join(self.ssh_args(host))

    def run(self, host: str, command: str, stdin: str = "", timeout: float | None = None) -> subprocess.CompletedProcess:
        """`command` through the remote user's shell on `host`."""
        return subprocess.run([*self.ssh_args(host), alias(host), command], input=stdin, capture_output=True,
                              text=True, timeout=timeout)


def alias(host: str) -> str:
    """The name ssh and rsync use for `host`: letters, digits, '.', '_' and '-' (known_hosts keys it)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", host.strip("/")) or "node"


def cloud_proxy_command(cloud: str, region: str, zone: str | None, bastion: str | None,
                        bastion_group: str | None) -> str:
    if cloud == "aws":
        return (f"sh -c \"aws ssm start-session --region {region} --target %h --document-name AWS-StartSSHSession "
                "--parameters 'portNumber=%p'\"")
    if cloud == "gcp":
        if not zone:
            raise SpecError([Problem("--zone", MISSING, "required on gcp when the stack names no zone: IAP tunnels "
                                     "address an instance by name and zone")], root=ROOT)
        return f"gcloud compute start-iap-tunnel %h %p --listen-on-stdin --zone {shlex.quote(zone)}"
    if not (bastion and bastion_group):
        raise SpecError([Problem("--bastion", bastion or MISSING, "required on azure with --bastion-resource-group: the Azure "
                                 "Bastion host (Standard SKU or higher, native client support on) in or peered with "
                                 "the cluster's VNet")], root=ROOT)
    return f"{shlex.quote(str(bastion_proxy()))} {shlex.quote(bastion)} {shlex.quote(bastion_group)} %h %p"


def bastion_proxy() -> Path:
    """The ProxyCommand helper for Azure Bastion, shipped in the Ansible collection."""
    return collection_path() / "files" / "bastion-proxy"


def require_tools(*names: str) -> None:
    """ssh and rsync are the user's own tools: say which is missing instead of failing inside a subprocess."""
    missing = [name for name in names if shutil.which(name) is None]
    if missing:
        raise SpecError([Problem(name, MISSING, f"`{name}` is not installed here; install it (Debian/Ubuntu: apt-get "
                                 f"install {'rsync' if name == 'rsync' else 'openssh-client'}, macOS: brew install "
                                 f"{'rsync' if name == 'rsync' else 'openssh'})") for name in missing], root=ROOT)


def default_user(cloud: str) -> str:
    return DEFAULT_USERS.get(cloud) or getpass.getuser()
