"""gcp-burst's elastic Slurm cluster over VMs, with the test playing Google Cloud (tests/vm/google_apis.py).

A controller VM boots gcp-burst's rendered controller user data: slurmctld with power saving and the real power
programs, which call https://compute.googleapis.com (`instances.bulkInsert`, `get`, `delete`, `zoneOperations`)
with the token of the controller's metadata server. Compute Engine is tests/elastic/fake_gce.py on the host, over
TLS with a test CA the VMs trust. The group has a fallback type (g2-standard-12, `OVERRIDES`), so a resume tries
g2-standard-8 then g2-standard-12 in the group's zone (us-central1-a), then both in the first fallback zone. Its
bulkInsert answers ZONE_RESOURCE_POOL_EXHAUSTED for both types in the group's zone and for g2-standard-8 in the
fallback zone: the resume is served by the fallback type in the fallback zone. Each created instance is booted as a
VM here: the rendered node user data of its template's type, a metadata server with the instance's name, zone and
the template's metadata (the controller's address, the munge key's Secret Manager name, the node prefix), and the
first type's machine shape (g2-standard-8: 8 vCPUs, 32 GiB), which slurm.conf's CLOUD node declares for the group
(the host could not give two TCG guests 48 GiB each). Deleting an instance stops its VM.

Every VM has two NICs: slirp with no route out, which carries only the metadata address (169.254.169.254) and the
Google APIs' address (`API_ADDRESS`, port 443) to the host, and a qemu socket network for the cluster
(tests/vm/guest/slurm/gpufleet-vm-net: static addresses and /etc/hosts from the kernel command line).

What differs from GCP, and why:
- Slurm is Debian 12's 22.05 (the image's), so the controller's files are rendered for that release
  (`SlurmSettings.slurm_release`, which adds `PrivateData=cloud` and `cloud_reg_addrs`); the product renders for
  Ubuntu 24.04's 23.11.
- No GPU: a node has the device file gres.conf names, an `nvidia-smi -L` stand-in, and its acceptance check
  (gpufleet-health.service) overridden to pass, as in tests/vm/slurm_boots.py.
"""

from __future__ import annotations

import base64
import queue
import random
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from gpufleet.boot import user_data_for
from gpufleet.cloud_init.power.config import GCP_PREFIX_KEY
from gpufleet.cloud_init.slurm_controller import ControllerConfig, render_controller_cloud_config
from gpufleet.gcp.elastic import power_config, power_node_prefix, prefix_of, template_labels
from gpufleet.gcp.nodes import base_instance_name
from gpufleet.gcp.slurm_controller import CONTROLLER_KEY, KEY_KEY, STATE_DEVICE_NAME
from gpufleet.monitoring.secrets import plan_monitoring
from gpufleet.pipeline import fallback_type_plans, plan_node_groups
from gpufleet.plan.stackfile import apply_overrides, read_stack_config
from gpufleet.scheduler.conf import controller_files
from gpufleet.scheduler.elastic import elastic_settings
from gpufleet.spec import parse_cluster_spec
from tests.elastic.fake_gce import FakeGce

from .google_apis import GoogleApis, InstanceMetadata, TestCa
from .image import Image
from .qemu import METADATA_ADDRESS, RELAY, accelerator, read_report
from .slurm_boots import make_seed, parse_report

GUEST = Path(__file__).with_name("guest")
STACK = "gcp-burst"
# A one-minute idle time, and a resume timeout a TCG boot fits in (the defaults: 10 minutes, and the boot time).
FALLBACK_TYPE = "g2-standard-12"
OVERRIDES = ("scheduler.slurm.suspend_time_minutes=1", "scheduler.slurm.resume_timeout_minutes=30",
             f"accelerator.fallback_types=[{FALLBACK_TYPE}]")
CLUSTER = "gpufleet"
UNIQUE = "e1a571"
"""The cluster's hash (`naming.cluster_hash` under `pulumi up`)."""
PROJECT = "gpufleet-vm"
TEMPLATE = f"projects/{PROJECT}/global/instanceTemplates/gpufleet-template"
FALLBACK_TEMPLATE = f"projects/{PROJECT}/global/instanceTemplates/gpufleet-template-{FALLBACK_TYPE}"
KEY_NAME = f"projects/{PROJECT}/secrets/gpufleet-gcp-burst-slurm-munge-key"
EXHAUSTED_ZONE = "us-central1-a"
SUBNET = "10.78.0"
CONTROLLER_ADDRESS = f"{SUBNET}.10"
API_ADDRESS = "169.254.169.252"
SLURM_RELEASE = (22, 5)
CONTROLLER_MEMORY_MIB = "1536"
STATE_DISK_SIZE = "1G"


@dataclass
class ElasticBoots:
    controller: dict = field(default_factory=dict)
    events: list[tuple[float, str, str, str]] = field(default_factory=list)
    """(wall time, "create" | "boot" | "delete", instance, zone or ""), in order."""
    calls: list[tuple[str, str]] = field(default_factory=list)
    """(method, path) of every Compute Engine call."""
    bulk_errors: dict[str, list[str]] = field(default_factory=dict)
    """Zone -> the error codes of the bulkInsert operations there."""
    node_prefix: str = ""
    zones: list[str] = field(default_factory=list)
    """The group's zone, then its fallback zones: the order a resume tries them."""
    verdicts: list[tuple[str, str, str, str]] = field(default_factory=list)
    """(zone, machine type, instance, the stand-in's error code or "created"), in the order asked."""
    boot_types: dict[str, str] = field(default_factory=dict)
    """Instance -> the machine type of the template it was created from (whose user data its VM boots)."""
    secret_reads: list[str] = field(default_factory=list)
    seconds: float = 0.0
    consoles: dict[str, str] = field(default_factory=dict)


def elastic_plans():
    config = apply_overrides(read_stack_config(STACK), list(OVERRIDES))
    return plan_node_groups(parse_cluster_spec(config["gpufleet:cluster"]))


def controller_text(plans, base_name: str) -> str:
    """gcp-burst's controller user data as `gpufleet.gcp.slurm_controller.controller_user_data` renders it, for the
    image's Slurm release."""
    plan, metrics = plans.first, plan_monitoring(plans).enabled
    power = power_config(PROJECT, UNIQUE, [(plan, power_node_prefix(base_name, plan.group),
                                            [(plan.instance.name, TEMPLATE), (FALLBACK_TYPE, FALLBACK_TEMPLATE)])],
                         metrics)
    settings = replace(elastic_settings(plans, CLUSTER, CONTROLLER_ADDRESS, prefix_of(base_name)),
                       slurm_release=SLURM_RELEASE)
    return render_controller_cloud_config(ControllerConfig(
        cloud="gcp", hostname=settings.controller_host, files=tuple(controller_files(settings).items()),
        munge_key_name=KEY_NAME, state_device=f"/dev/disk/by-id/google-{STATE_DEVICE_NAME}",
        metrics=metrics, power=power))


def trust_store(disk: Path, ca_cert: Path, work: Path) -> None:
    """Adds the test CA to the image's bundle (what curl and Python's ssl read), with debugfs."""
    bundle = "/etc/ssl/certs/ca-certificates.crt"
    current = subprocess.run(["debugfs", "-R", f"cat {bundle}", str(disk)], capture_output=True, check=True).stdout
    merged = work / "ca-certificates.crt"
    merged.write_bytes(current + b"\n" + ca_cert.read_bytes())
    subprocess.run(["debugfs", "-w", "-f", "-", str(disk)], input=f"rm {bundle}\nwrite {merged} {bundle}\n",
                   capture_output=True, text=True, check=True)


def install_guest(disk: Path, role: str) -> None:
    """The guest files (written with debugfs, units enabled): the cluster network on every VM; the scenario and the
    state disk's by-id link on the controller; the GPU stand-ins and the passing acceptance check on a node."""
    wants = "/etc/systemd/system/multi-user.target.wants"
    slurm, elastic = GUEST / "slurm", GUEST / "elastic"
    files = {"/usr/local/sbin/gpufleet-vm-net": slurm / "gpufleet-vm-net",
             "/etc/systemd/system/gpufleet-vm-net.service": slurm / "gpufleet-vm-net.service"}
    folders, units = ["/var/lib/gpufleet-vm", wants], ["gpufleet-vm-net.service"]
    if role == "node":
        folders.append("/etc/systemd/system/gpufleet-health.service.d")
        files["/etc/systemd/system/gpufleet-health.service.d/gpufleet-vm.conf"] = slurm / "health-override.conf"
        files["/usr/local/bin/nvidia-smi"] = slurm / "nvidia-smi"
    else:
        files["/usr/local/sbin/gpufleet-vm-elastic"] = elastic / "gpufleet-vm-elastic"
        files["/etc/systemd/system/gpufleet-vm-elastic.service"] = elastic / "gpufleet-vm-elastic.service"
        files["/etc/udev/rules.d/65-gpufleet-vm-google-disks.rules"] = GUEST / "65-gpufleet-vm-google-disks.rules"
        units.append("gpufleet-vm-elastic.service")
    script = [f"mkdir {folder}" for folder in folders]
    script += [f"write {source} {target}" for target, source in files.items()]
    script += [f"symlink {wants}/{unit} /etc/systemd/system/{unit}" for unit in units]
    subprocess.run(["debugfs", "-w", "-f", "-", str(disk)], input="\n".join(script) + "\n", capture_output=True,
                   text=True, check=True)


@dataclass
class Vm:
    name: str
    role: str
    address: str
    folder: Path
    metadata: InstanceMetadata
    mac: str
    cpus: int
    memory_mib: int
    extra: tuple[str, ...] = ()
    process: subprocess.Popen | None = None

    @property
    def disk(self) -> Path:
        return self.folder / "disk.img"

    @property
    def console(self) -> Path:
        return self.folder / "console.log"

    def prepare(self, image: Image, user_data: bytes, ca: TestCa) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        subprocess.run(["cp", "--sparse=always", str(image.disk), str(self.disk)], check=True)
        trust_store(self.disk, ca.cert, self.folder)
        install_guest(self.disk, self.role)
        make_seed(self.folder, user_data, self.name)

    def start(self, image: Image, network: str, hosts: str, gpus: int, api_port: int, timeout: float) -> None:
        nic = (f"user,model=virtio-net-pci,restrict=on,net=169.254.0.0/16,"
               f"guestfwd=tcp:{METADATA_ADDRESS}:80-cmd:{sys.executable} {RELAY} {self.metadata.server.port},"
               f"guestfwd=tcp:{API_ADDRESS}:443-cmd:{sys.executable} {RELAY} {api_port}")
        args = (f"root=/dev/vda rw console=ttyS0 net.ifnames=0 biosdevname=0 quiet gpufleet_vm.role={self.role} "
                f"gpufleet_vm.addr={self.address} gpufleet_vm.hosts={hosts} gpufleet_vm.gpus={gpus}")
        # The machine type's memory, as the cloud gives it, reserved only as the guest touches it.
        memory = (f"memory-backend-ram,id=ram,size={self.memory_mib}M,reserve=off")
        command = ["timeout", str(int(timeout)), "qemu-system-x86_64", *accelerator(),
                   "-object", memory, "-machine", "memory-backend=ram", "-m", f"{self.memory_mib}M",
                   "-smp", str(self.cpus), "-kernel", str(image.kernel), "-initrd", str(image.initrd),
                   "-append", args, "-drive", f"file={self.disk},if=virtio,format=raw",
                   "-drive", f"file={self.folder / 'seed.iso'},media=cdrom,readonly=on",
                   "-nic", nic, "-netdev", f"socket,id=cluster,mcast={network},localaddr=127.0.0.1",
                   "-device", f"virtio-net-pci,netdev=cluster,mac={self.mac}", *self.extra,
                   "-nographic", "-no-reboot", "-serial", f"file:{self.console}", "-monitor", "none"]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self) -> None:
        if self.running():
            assert self.process is not None
            self.process.terminate()
            self.process.wait(30)

    def console_tail(self, chars: int = 4000) -> str:
        return self.console.read_text(errors="replace")[-chars:] if self.console.exists() else ""


def boot_elastic_cluster(image: Image, folder: Path, timeout: float) -> ElasticBoots:
    plans = elastic_plans()
    plan = plans.first
    base_name = base_instance_name(STACK, CLUSTER, UNIQUE)
    prefix = power_node_prefix(base_name, plan.group)
    nodes = {f"{prefix}{index}": f"{SUBNET}.{10 + index}" for index in range(1, plan.spec.nodes_range.max + 1)}
    key = base64.b64encode(random.randbytes(1024)).decode()
    controller_user_data = controller_text(plans, base_name)
    controller_host = re.search(r"^hostname: (\S+)", controller_user_data, re.M).group(1)
    hosts = ",".join([f"{address}:{name}" for name, address in nodes.items()] + [
        f"{CONTROLLER_ADDRESS}:{controller_host}", f"{METADATA_ADDRESS}:metadata.google.internal",
        *(f"{API_ADDRESS}:{name}" for name in ("compute.googleapis.com", "secretmanager.googleapis.com"))])
    network = f"230.0.78.{random.randint(1, 250)}:{random.randint(40000, 60000)}"
    type_plans = {plan.instance.name: plan, **{fallback.instance.name: fallback
                                               for fallback in fallback_type_plans(plan)}}
    assert list(type_plans) == [plan.instance.name, FALLBACK_TYPE], type_plans
    user_data = {name: user_data_for(type_plan, CLUSTER).encode() for name, type_plan in type_plans.items()}
    fallback_zone = plan.spec.fallback_zones[0]

    def decide(zone: str, name: str, attempt: int, machine_type: str) -> str | None:
        exhausted = zone == EXHAUSTED_ZONE or (zone == fallback_zone and machine_type == plan.instance.name)
        verdict = "ZONE_RESOURCE_POOL_EXHAUSTED" if exhausted else None
        result.verdicts.append((zone, machine_type, name, verdict or "created"))
        return verdict

    attributes = {CONTROLLER_KEY: CONTROLLER_ADDRESS, KEY_KEY: KEY_NAME, GCP_PREFIX_KEY: prefix}
    result = ElasticBoots(node_prefix=prefix, zones=[plan.spec.zone, *plan.spec.fallback_zones])
    created: queue.Queue[str] = queue.Queue()
    vms: dict[str, Vm] = {}
    lock = threading.Lock()

    def on_create(name: str) -> None:
        zone = next(zone for (zone, instance) in gce.instances if instance == name)
        result.events.append((time.time(), "create", name, zone))
        created.put(name)

    def on_delete(name: str) -> None:
        result.events.append((time.time(), "delete", name, ""))
        with lock:
            vm = vms.get(name)
        if vm is not None and vm.process is not None:
            vm.process.terminate()  # the instance is gone: its VM stops at once, as a deleted instance does

    gce = FakeGce(PROJECT, {TEMPLATE: {"machineType": plan.instance.name, "labels": template_labels(UNIQUE)},
                            FALLBACK_TEMPLATE: {"machineType": FALLBACK_TYPE, "labels": template_labels(UNIQUE)}},
                  decide=decide, on_create=on_create, on_delete=on_delete)
    ca = TestCa(folder / "ca")
    started = time.monotonic()
    apis = GoogleApis(gce, {KEY_NAME: key}, ca)
    servers: list[InstanceMetadata] = []
    try:
        apis.__enter__()
        controller_metadata = InstanceMetadata(controller_host, plan.spec.zone, {})
        servers.append(controller_metadata.__enter__())
        data = folder / "controller" / "state.img"
        controller = Vm("controller", "controller", CONTROLLER_ADDRESS, folder / "controller", controller_metadata,
                        "52:54:00:78:00:10", 2, int(CONTROLLER_MEMORY_MIB),
                        ("-drive", f"file={data},if=none,id=state,format=raw",
                         "-device", f"virtio-blk-pci,drive=state,serial={STATE_DEVICE_NAME},addr=0x1f"))
        controller.prepare(image, controller_user_data.encode(), ca)
        subprocess.run(["truncate", "-s", STATE_DISK_SIZE, str(data)], check=True)
        controller.start(image, network, hosts, 0, apis.port, timeout)
        deadline = time.monotonic() + timeout
        while controller.running() and time.monotonic() < deadline:
            try:
                name = created.get(timeout=2)
            except queue.Empty:
                name = ""
            with gce.lock:
                zone, machine_type = next(((zone, record["machineType"].rsplit("/", 1)[1])
                                           for (zone, instance), record in gce.instances.items()
                                           if instance == name), ("", "")) if name else ("", "")
            if zone:  # created, and not deleted yet
                metadata = InstanceMetadata(name, zone, attributes)
                servers.append(metadata.__enter__())
                index = int(name.removeprefix(prefix))
                vm = Vm(name, "node", nodes[name], folder / name, metadata, f"52:54:00:78:00:{10 + index:02x}",
                        plan.instance.vcpus, int(plan.instance.memory_gib * 1024))
                vm.prepare(image, user_data[machine_type], ca)
                with lock:
                    vms[name] = vm
                vm.start(image, network, hosts, plan.instance.gpus, apis.port, timeout)
                result.events.append((time.time(), "boot", name, zone))
                result.boot_types[name] = machine_type
        controller.stop()
        result.controller = parse_report(read_report(controller.disk))
        result.consoles["controller"] = controller.console_tail(6000)
        for name, vm in vms.items():
            result.consoles[name] = vm.console_tail()
    finally:
        for vm in [*vms.values()]:
            vm.stop()
        for server in servers:
            server.__exit__(None, None, None)
        apis.__exit__(None, None, None)
    result.calls = [(method, path) for method, path, _ in gce.calls]
    for (zone, _), operation in sorted(gce.operations.items()):
        if operation["operationType"] == "bulkInsert":
            codes = [error["code"] for error in operation.get("error", {}).get("errors", [])]
            result.bulk_errors.setdefault(zone, []).append(",".join(codes) or "DONE")
    result.secret_reads = list(apis.secret_reads)
    result.seconds = time.monotonic() - started
    return result


