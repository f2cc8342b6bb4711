"""A Slurm controller and three GPU nodes of one Azure stack of two node groups (scheduler.kind: slurm; `train`, two
nodes on spot, the default partition, and `debug`, one on demand) booted from their rendered user data, at once, on
the Slurm image variant (Debian 12's Slurm 22.05, munge, Open MPI; the VMs have no archive). Each node boots its own
group's user data, which registers it with its group's feature, so it joins its group's partition.

The four VMs share a private network: a qemu socket network (UDP multicast on 127.0.0.1, nothing else) as each
VM's eth1, with static addresses from the kernel command line (tests/vm/guest/slurm/gpufleet-vm-net). Each VM has
its own fake Azure metadata service (tests/cloud_init/metadata_servers.py): the nodes' tags name the controller's
address and the munge key's Key Vault URL, which here is the fake's own address, so the node's join script and the
controller's setup script run unmodified. The controller's guest script runs the scenario and asks, on its console,
for the spot notice to one node; the host announces it there, and boots that node a second time once it powered off.

What the VM cannot have is a GPU: each node gets device files for gres.conf and a `nvidia-smi -L` stand-in for
Slurm's health check, and its acceptance check (gpufleet-health.service) is overridden to pass."""

from __future__ import annotations

import base64
import os
import random
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from gpufleet.azure.slurm_controller import CONTROLLER_TAG, KEY_TAG, controller_user_data
from gpufleet.boot import user_data_for
from gpufleet.cloud_init import encode_user_data
from gpufleet.pipeline import plan_node_groups
from gpufleet.plan.stackfile import apply_overrides, read_stack_config
from gpufleet.spec import parse_cluster_spec
from tests.cloud_init.metadata_servers import MetadataServer

from .image import Image
from .qemu import METADATA_ADDRESS, RELAY, accelerator, read_report

GUEST = Path(__file__).with_name("guest") / "slurm"
STACK = "azure-train"
CLUSTER = "gpufleet-vm"
SUBNET = "10.77.0"
CONTROLLER_ADDRESS = f"{SUBNET}.10"
NODES = {"gpufleet-vm-node-1": f"{SUBNET}.11", "gpufleet-vm-node-2": f"{SUBNET}.12",
         "gpufleet-vm-node-3": f"{SUBNET}.13"}
GROUPS = {"gpufleet-vm-node-1": "train", "gpufleet-vm-node-2": "train", "gpufleet-vm-node-3": "debug"}
"""Each node's group: `train` (two nodes, spot, the default partition) and `debug` (one, on demand)."""
NODE_GROUPS = {"train": {"nodes": 2, "market": "spot", "slurm_default": True},
               "debug": {"nodes": 1, "market": "on-demand"}}
KEY_PATH = "/vault/secrets/gpufleet-slurm-munge-key"
NOTICE = re.compile(r"GPUFLEET-VM-NOTICE (\S+)")
REPORT = re.compile(r"GPUFLEET-VM-REPORT-BEGIN\r?\n(.*?)GPUFLEET-VM-REPORT-END", re.S)
DATA_DISK_SIZE = "1G"
VM_MEMORY = os.environ.get("GPUFLEET_VM_SLURM_MEMORY", "1536")


@dataclass
class SlurmBoots:
    controller: dict = field(default_factory=dict)
    noticed_node: str = ""
    node_reports: dict[str, dict] = field(default_factory=dict)
    seconds: float = 0.0
    consoles: dict[str, str] = field(default_factory=dict)
    requests: dict[str, list[str]] = field(default_factory=dict)


def slurm_plans():
    config = apply_overrides(read_stack_config(STACK), ["scheduler.kind=slurm"])
    cluster = {key: value for key, value in config["gpufleet:cluster"].items() if key not in ("nodes", "market")}
    return plan_node_groups(parse_cluster_spec({**cluster, "node_groups": NODE_GROUPS}))


def parse_report(text: str) -> dict:
    match = REPORT.search(text)
    found: dict = {}
    for line in (match.group(1) if match else "").splitlines():
        key, _, value = line.strip("\r").partition("=")
        if key:
            found[key] = value
    return found


def install_guest(disk: Path, role: str) -> None:
    """The guest files of the Slurm test, written into `disk` (ext4, not mounted) with debugfs and enabled."""
    wants = "/etc/systemd/system/multi-user.target.wants"
    files = {"/usr/local/sbin/gpufleet-vm-net": "gpufleet-vm-net", "/usr/local/sbin/gpufleet-vm-slurm":
             "gpufleet-vm-slurm", "/etc/systemd/system/gpufleet-vm-net.service": "gpufleet-vm-net.service",
             "/etc/systemd/system/gpufleet-vm-slurm.service": "gpufleet-vm-slurm.service"}
    folders = ["/var/lib/gpufleet-vm", wants]
    if role == "node":
        folders.append("/etc/systemd/system/gpufleet-health.service.d")
        files["/etc/systemd/system/gpufleet-health.service.d/gpufleet-vm.conf"] = "health-override.conf"
        files["/usr/local/bin/nvidia-smi"] = "nvidia-smi"
    else:
        files["/etc/udev/rules.d/99-gpufleet-vm-azure-disks.rules"] = "99-gpufleet-vm-azure-disks.rules"
    script = [f"mkdir {folder}" for folder in folders]
    script += [f"write {GUEST / source} {target}" for target, source in files.items()]
    script += [f"symlink {wants}/{unit} /etc/systemd/system/{unit}" for unit in
               ("gpufleet-vm-net.service", "gpufleet-vm-slurm.service")]
    subprocess.run(["debugfs", "-w", "-f", "-", str(disk)], input="\n".join(script) + "\n", capture_output=True,
                   text=True, check=True)


def make_seed(folder: Path, user_data: bytes, hostname: str) -> Path:
    (folder / "user-data").write_bytes(user_data)
    (folder / "meta-data").write_text(f"instance-id: i-{hostname}\nlocal-hostname: {hostname}\n")
    seed = folder / "seed.iso"
    subprocess.run(["genisoimage", "-quiet", "-output", str(seed), "-volid", "cidata", "-joliet", "-rock",
                    str(folder / "user-data"), str(folder / "meta-data")], check=True)
    return seed


@dataclass
class Vm:
    name: str
    role: str
    address: str
    folder: Path
    server: MetadataServer
    mac: str
    extra: tuple[str, ...] = ()
    boots: int = 0
    process: subprocess.Popen | None = None

    @property
    def disk(self) -> Path:
        return self.folder / "disk.img"

    @property
    def console(self) -> Path:
        return self.folder / f"console-{self.boots}.log"

    def start(self, image: Image, network: str, hosts: str, gpus: int, timeout: float) -> None:
        self.boots += 1
        port = int(self.server.url.rsplit(":", 1)[1])
        nic = (f"user,model=virtio-net-pci,restrict=on,net=169.254.0.0/16,"
               f"guestfwd=tcp:{METADATA_ADDRESS}:80-cmd:{sys.executable} {RELAY} {port}")
        args = (f"root=/dev/vda rw console=ttyS0 net.ifnames=0 biosdevname=0 quiet gpufleet_vm.role={self.role} "
                f"gpufleet_vm.boot={self.boots} gpufleet_vm.addr={self.address} gpufleet_vm.hosts={hosts} "
                f"gpufleet_vm.gpus={gpus if self.role == 'node' else 0}")
        command = ["timeout", str(int(timeout)), "qemu-system-x86_64", *accelerator(), "-m", VM_MEMORY, "-smp", "2",
                   "-kernel", str(image.kernel), "-initrd", str(image.initrd), "-append", args,
                   "-drive", f"file={self.disk},if=virtio,format=raw",
                   "-drive", f"file={self.folder / 'seed.iso'},media=cdrom,readonly=on",
                   "-nic", nic, "-netdev", f"socket,id=cluster,mcast={network},localaddr=127.0.0.1",
                   "-device", f"virtio-net-pci,netdev=cluster,mac={self.mac}", *self.extra,
                   "-nographic", "-no-reboot", "-serial", f"file:{self.console}", "-monitor", "none"]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self) -> None:
        if self.running():
            self.process.terminate()
            self.process.wait(30)


def boot_cluster(image: Image, folder: Path, timeout: float) -> SlurmBoots:
    plans = slurm_plans()
    gpus = plans.first.instance.gpus
    key = base64.b64encode(random.randbytes(1024)).decode()
    key_url = f"http://{METADATA_ADDRESS}{KEY_PATH}"
    hosts = ",".join(f"{address}:{name}" for name, address in NODES.items())
    network = f"230.0.77.{random.randint(1, 250)}:{random.randint(40000, 60000)}"
    servers = [MetadataServer("azure") for _ in range(1 + len(NODES))]
    result = SlurmBoots()
    started = time.monotonic()
    vms: list[Vm] = []
    try:
        for server in servers:
            server.__enter__()
            server.vault_secrets[KEY_PATH] = key
            server.azure_tags.update({CONTROLLER_TAG: CONTROLLER_ADDRESS, KEY_TAG: key_url})
        controller_text = controller_user_data(plans, CLUSTER, CONTROLLER_ADDRESS, key_url)
        controller_host = re.search(r"^hostname: (\S+)", controller_text, re.M).group(1)
        hosts += f",{CONTROLLER_ADDRESS}:{controller_host}"
        node_seeds = {group: base64.b64decode(encode_user_data(  # customData: base64 of gzip
            user_data_for(plans.group(group), CLUSTER, group=group), "azure")) for group in NODE_GROUPS}
        data = folder / "controller" / "data.img"
        specs: list[tuple[str, str, str, bytes, tuple[str, ...]]] = [("controller", controller_host, CONTROLLER_ADDRESS, controller_text.encode(),
                  ("-drive", f"file={data},if=none,id=data,format=raw",
                   "-device", "virtio-blk-pci,drive=data,addr=0x1f"))]
        specs += [("node", name, address, node_seeds[GROUPS[name]], ()) for name, address in NODES.items()]
        for index, ((role, name, address, user_data, extra), server) in enumerate(zip(specs, servers, strict=True)):
            vm_folder = folder / ("controller" if role == "controller" else name)
            vm_folder.mkdir(parents=True, exist_ok=True)
            vm = Vm(name, role, address, vm_folder, server, f"52:54:00:77:00:{10 + index:02x}", extra)
            subprocess.run(["cp", "--sparse=always", str(image.disk), str(vm.disk)], check=True)
            install_guest(vm.disk, role)
            make_seed(vm_folder, user_data, name)
            vms.append(vm)
        subprocess.run(["truncate", "-s", DATA_DISK_SIZE, str(data)], check=True)
        for vm in vms:
            vm.start(image, network, hosts, gpus, timeout)
        controller, nodes = vms[0], {vm.name: vm for vm in vms[1:]}
        deadline = time.monotonic() + timeout
        while controller.running() and time.monotonic() < deadline:
            time.sleep(2)
            text = controller.console.read_text(errors="replace") if controller.console.exists() else ""
            match = NOTICE.search(text)
            if match and not result.noticed_node and match.group(1) in nodes:
                result.noticed_node = match.group(1)
                nodes[result.noticed_node].server.notice()
            noticed = nodes.get(result.noticed_node)
            if noticed and noticed.boots == 1 and not noticed.running():
                report = read_report(noticed.disk)
                result.node_reports[noticed.name] = parse_report(report)
                result.consoles[f"{noticed.name}-1"] = noticed.console.read_text(errors="replace")[-3000:]
                noticed.server.notice_at = None  # the notice is over: the second boot is an ordinary boot
                noticed.start(image, network, hosts, gpus, timeout)
        controller.stop()
        result.controller = parse_report(read_report(controller.disk))
        result.consoles["controller"] = (controller.console.read_text(errors="replace")
                                         if controller.console.exists() else "")[-4000:]
        for vm in vms[1:]:
            result.consoles.setdefault(f"{vm.name}-{vm.boots}", vm.console.read_text(errors="replace")[-3000:]
                                       if vm.console.exists() else "")
        result.requests = {vm.name: list(vm.server.requests)[-30:] for vm in vms}
    finally:
        for vm in vms:
            vm.stop()
        for server in servers:
            server.__exit__(None, None, None)
    result.seconds = time.monotonic() - started
    return result
