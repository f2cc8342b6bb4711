"""The day-2 scenario over a booted node VM (tests/vm/test_ansible_day2.py): gcp-dev's rendered user data with
`image.kind: ubuntu-24.04` (the image kind whose driver gpufleet installs, and the playbook upgrades) on the service
image variant, reached by Ansible over SSH through a qemu host forward.

The node's only apt archive is the test's (tests/vm/driver_repo.py), relayed to the guest like the metadata service.
At first boot it holds one driver, which the node's own install step installs, holds, and reboots into. Then the
shipped playbooks run with a stand-in Slurm controller on the host (tests/ansible/fake): the driver upgrade to the
next driver, which the archive has just published, and again; the security updates, twice, once the archive's
security pocket has updates; and the driver upgrade to a broken driver, with a second, healthy stand-in node after
the VM in the inventory, which the stopped roll-out must never reach."""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from gpufleet.boot import boot_config, user_data_for
from gpufleet.pipeline import plan_cluster
from gpufleet.plan.stackfile import apply_overrides, read_stack_config
from gpufleet.spec import parse_cluster_spec
from tests.cloud_init.metadata_servers import MetadataServer
from tests.inventory.ansible_tools import ansible_env, tool

from .driver_repo import AptArchive, DriverPackages
from .image import Image
from .qemu import METADATA_ADDRESS, machine, make_seed, user_network

STACK, CLOUD, NODE = "gcp-dev", "gcp", "gpufleet-vm"
OVERRIDES = ["image.kind=ubuntu-24.04"]
REPO_ADDRESS = "169.254.169.253"
# The archive's drivers, oldest first: the first boot's, the upgrade's, and one whose module fails to load.
FIRST, NEXT, BROKEN = "580.95.05", "580.105.08", "580.126.09"
GUEST = Path(__file__).with_name("guest") / "day2"
FAKE_SLURM = Path(__file__).parents[1] / "ansible" / "fake"
STANDBY = "standby-node"
# Packages the node has besides the driver: one the security playbook updates, one it must leave (an NVIDIA prefix
# on the node's hold list, /etc/apt/apt.conf.d/51gpufleet-nvidia-hold, though not itself held).
OTHER_PACKAGES = ("gpufleet-vm-libexample", "libnvidia-gpufleet-vm")
SECURITY_VERSION = "1.0-1+security1"


@dataclass
class PlaybookRun:
    returncode: int
    output: dict  # the ansible.posix.json callback's document
    stderr: str
    slurm_calls: list[list[str]]  # what the stand-in controller was asked during this run
    boots_before: int
    node: dict  # the node afterwards: see Day2VM.facts

    def tasks(self, host: str = NODE) -> list[tuple[str, dict]]:
        """(task name, result) of `host`, in the order they ran (a delegated task is recorded under its host)."""
        return [(task["task"]["name"], task["hosts"][host]) for play in self.output.get("plays", [])
                for task in play["tasks"] if host in task["hosts"]]

    def first(self, name: str, changed: bool | None = None) -> int:
        """Where the first run of task `name` (with that changed flag) is in tasks(); -1 when it never ran."""
        for index, (task, result) in enumerate(self.tasks()):
            if task == name and (changed is None or bool(result.get("changed")) == changed):
                return index
        return -1

    def text(self) -> str:
        messages = [f"{name}: {result.get('msg', '')}" for name, result in self.tasks() if result.get("failed")]
        return " ".join((" ".join(messages) + " " + self.stderr[-2000:]).split())


@dataclass
class Day2Scenario:
    package_names: list[str] = field(default_factory=list)  # the node's driver packages
    first_boot: dict = field(default_factory=dict)
    runs: dict[str, PlaybookRun] = field(default_factory=dict)
    repo_requests: list[str] = field(default_factory=list)
    console: str = ""
    seconds: float = 0.0


def selection():
    config = apply_overrides(read_stack_config(STACK), OVERRIDES)
    return plan_cluster(parse_cluster_spec(config["gpufleet:cluster"]))


class Day2VM:
    """One node VM booted in the background (it reboots in place), with SSH forwarded to 127.0.0.1:`ssh_port`."""

    def __init__(self, image: Image, folder: Path, ssh_port: int, metadata_port: int, repo_port: int, timeout: float):
        self.folder, self.ssh_port, self.key = folder, ssh_port, folder / "id_ed25519"
        self.console = folder / "console.log"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.key)], check=True)
        disk = folder / "disk.img"
        subprocess.run(["cp", "--sparse=always", str(image.disk), str(disk)], check=True)
        install_guest(disk, folder, self.key.with_suffix(".pub"))
        seed = make_seed(folder, user_data_for(selection(), NODE).encode(), f"i-{STACK}-day2")
        nic = user_network({METADATA_ADDRESS: metadata_port, REPO_ADDRESS: repo_port}, {ssh_port: 22})
        self.process = subprocess.Popen(["timeout", str(int(timeout)), *machine(disk, image.kernel, image.initrd,
                                                                                 seed, self.console), "-nic", nic],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)

    def ssh_options(self) -> list[str]:
        return ["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",
                "-o", "ConnectTimeout=10", "-o", "BatchMode=yes", "-i", str(self.key)]

    def ssh(self, command: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run(["ssh", *self.ssh_options(), "-p", str(self.ssh_port), "root@127.0.0.1", command],
                              capture_output=True, text=True, timeout=timeout)

    def settled(self) -> dict | None:
        """The node once its setup is over (cloud-init done, no reboot pending, this boot's check written)."""
        try:
            done = self.ssh("cloud-init status | sed -n 's/^status: //p'; test ! -e /run/gpufleet/reboot-required"
                            " && echo settled; awk '/^btime/ {print $2}' /proc/stat;"
                            " stat -c %Y /var/lib/gpufleet/health.json 2>/dev/null || echo 0", timeout=30)
        except subprocess.TimeoutExpired:
            return None
        lines = done.stdout.split()
        if done.returncode != 0 or len(lines) != 4 or lines[0] not in ("done", "error") or lines[1] != "settled":
            return None
        return self.facts() if int(lines[3]) >= int(lines[2]) else None

    def wait_settled(self, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"the VM exited ({self.process.returncode}): {self.console_tail()}")
            facts = self.settled()
            if facts is not None:
                return facts
            time.sleep(5)
        raise AssertionError(f"the node never settled in {timeout} s: {self.console_tail()}")

    def facts(self) -> dict:
        """What the scenario asserts on, read over SSH in one go."""
        script = (
            "echo boots=$(journalctl --list-boots --no-pager -q | wc -l);"
            "echo packages=$(dpkg-query -W -f='${Package}=${Version}=${db:Status-Abbrev} ' 'nvidia-*' "
            "'linux-modules-nvidia-*' 'libnvidia-*' 'gpufleet-vm-*' 2>/dev/null);"
            "echo holds=$(apt-mark showhold | tr '\\n' ' ');"
            "echo loaded=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>&1 | tr '\\n' ' ');"
            "echo health=$(tr -d '\\n' < /var/lib/gpufleet/health.json);"
            "echo install_log=$(journalctl -q -b -1 -u cloud-final --no-pager 2>/dev/null | grep -m3 'driver' "
            "| tr '\\n' '|')")
        done = self.ssh(script)
        assert done.returncode == 0, done.stderr
        facts = dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)
        facts["boots"] = int(facts["boots"])
        # Installed ("ii"), or installed and held ("hi"); dpkg also knows packages it never installed ("un").
        entries = [entry.split("=") for entry in facts["packages"].split()]
        installed = {name: version for name, version, status in entries if status[1:2] == "i"}
        facts["others"] = {name: installed.pop(name) for name in OTHER_PACKAGES if name in installed}
        facts["packages"] = installed  # the driver's
        facts["holds"] = facts["holds"].split()
        facts["health"] = json.loads(facts["health"] or "{}")
        return facts

    def console_tail(self) -> str:
        return self.console.read_text(errors="replace")[-3000:] if self.console.exists() else ""

    def stop(self) -> None:
        if self.process.poll() is None:
            self.ssh("systemctl poweroff", timeout=30) if self.settled() is not None else None
            try:
                self.process.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def install_guest(disk: Path, folder: Path, public_key: Path) -> None:
    """root's SSH key, the apt source of the test's archive and the stand-in acceptance check, written into `disk`
    (ext4, not mounted) with debugfs."""
    sources = folder / "sources.list"
    sources.write_text(AptArchive.sources(REPO_ADDRESS))
    dropin = "/etc/systemd/system/gpufleet-health.service.d"
    script = "\n".join([
        f"write {public_key} /root/.ssh/authorized_keys", "sif /root/.ssh/authorized_keys mode 0100600",
        "rm /etc/apt/sources.list", f"write {sources} /etc/apt/sources.list",
        f"write {GUEST / 'gpufleet-vm-health'} /usr/local/sbin/gpufleet-vm-health",
        f"mkdir {dropin}", f"write {GUEST / 'health-override.conf'} {dropin}/gpufleet-vm.conf", ""])
    subprocess.run(["debugfs", "-w", "-f", "-", str(disk)], input=script, capture_output=True, text=True, check=True)
    listing = subprocess.run(["debugfs", "-R", "stat /usr/local/sbin/gpufleet-vm-health", str(disk)],
                             capture_output=True, text=True).stdout
    assert "Mode:  0755" in listing, listing


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Controller:
    """The stand-in Slurm controller (tests/ansible/fake) on the host, and the inventory around the VM."""

    def __init__(self, folder: Path, vm: Day2VM):
        self.folder, self.vm = folder, vm
        self.state, self.log = folder / "slurm.json", folder / "slurm.log"
        self.state.write_text(json.dumps({name: {"drain": False, "reason": ""} for name in (NODE, STANDBY)}))
        self.log.touch()
        self.standby = folder / STANDBY
        self.standby.mkdir()
        self.env = ansible_env(folder, PATH=f"{FAKE_SLURM}:{os.environ['PATH']}", FAKE_SLURM_STATE=str(self.state),
                               FAKE_SLURM_LOG=str(self.log), FAKE_SLURM_JOB_POLLS="1",
                               ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", ANSIBLE_PIPELINING="1",
                               ANSIBLE_HOST_KEY_CHECKING="False", ANSIBLE_TIMEOUT="60")

    def inventory(self, with_standby: bool) -> Path:
        ssh_args = " ".join(self.vm.ssh_options()[:-2])
        local = f"ansible_connection=local ansible_python_interpreter={Path(tool('ansible-playbook')).parent / 'python'}"
        lines = ["[gpu_nodes]",
                 f"{NODE} ansible_host=127.0.0.1 ansible_port={self.vm.ssh_port} ansible_user=root "
                 f"ansible_ssh_private_key_file={self.vm.key} ansible_ssh_common_args='{ssh_args}' "
                 "ansible_python_interpreter=/usr/bin/python3 gpufleet_health_command=/usr/local/sbin/gpufleet-vm-health"
                 f" drain_slurm_node={NODE} return_to_service_slurm_node={NODE}"]
        if with_standby:
            subprocess.run([FAKE_SLURM / "gpufleet-health"], env={"GPUFLEET_STATE_DIR": str(self.standby)}, check=True)
            lines.append(f"{STANDBY} {local} gpufleet_state_dir={self.standby} drain_slurm_node={STANDBY} "
                         f"return_to_service_slurm_node={STANDBY}")
        lines += ["[slurm_controller]", f"controller {local}", "[all:vars]", "ansible_become=false"]
        inventory = self.folder / ("hosts-standby.ini" if with_standby else "hosts.ini")
        inventory.write_text("\n".join(lines) + "\n")
        return inventory

    def upgrade(self, driver: str, with_standby: bool = False) -> PlaybookRun:
        return self.play("driver_upgrade", with_standby, "-e", f"driver_version={driver}")

    def play(self, playbook: str, with_standby: bool = False, *args: str) -> PlaybookRun:
        calls_before = len(self.log.read_text().splitlines())
        boots_before = self.vm.facts()["boots"]
        done = subprocess.run([tool("ansible-playbook"), "-i", str(self.inventory(with_standby)),
                               f"gpufleet.day2.{playbook}", "-e", "drain_poll_sec=1", "-e", "acceptance_timeout_sec=900",
                               *args], capture_output=True, text=True, env=self.env, timeout=1800, cwd=self.folder)
        try:
            output = json.loads(done.stdout)
        except ValueError:
            output = {"unparsed": done.stdout[-3000:]}
        calls = [json.loads(line) for line in self.log.read_text().splitlines()[calls_before:]]
        return PlaybookRun(done.returncode, output, done.stderr, calls, boots_before, self.vm.facts())

    def slurm_state(self) -> dict:
        return json.loads(self.state.read_text())


def run_scenario(image: Image, folder: Path, timeout: float) -> tuple[Day2Scenario, dict]:
    """The whole scenario; returns it and the stand-in controller's final Slurm state."""
    started = time.monotonic()
    result = Day2Scenario()
    packages = DriverPackages.for_node(boot_config(selection(), NODE), guest_kernel(image))
    result.package_names = packages.names()
    with MetadataServer(CLOUD) as metadata, AptArchive(folder / "archive", packages) as archive:
        archive.publish_driver(FIRST)
        for name in OTHER_PACKAGES:
            archive.publish(name, "1.0-1")
        vm = Day2VM(image, folder, free_port(), int(metadata.url.rsplit(":", 1)[1]), archive.port, timeout)
        try:
            result.first_boot = vm.wait_settled(timeout)
            installed = vm.ssh("apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "
                               + " ".join(OTHER_PACKAGES), timeout=600)
            assert installed.returncode == 0, installed.stdout[-2000:] + installed.stderr[-2000:]
            controller = Controller(folder, vm)
            archive.publish_driver(NEXT)
            result.runs["upgrade"] = controller.upgrade(NEXT)
            result.runs["again"] = controller.upgrade(NEXT)
            # Both packages get a security update; the NVIDIA one is on the node's hold list, the other asks for a
            # reboot as a new libc or microcode does.
            for name in OTHER_PACKAGES:
                archive.publish(name, SECURITY_VERSION, pocket="security",
                                postinst="" if name.startswith("libnvidia-") else "touch /var/run/reboot-required")
            result.runs["security"] = controller.play("security_updates")
            result.runs["security_again"] = controller.play("security_updates")
            archive.publish_driver(BROKEN, broken=True)
            result.runs["broken"] = controller.upgrade(BROKEN, with_standby=True)
            slurm = controller.slurm_state()
        finally:
            result.console = vm.console_tail()
            vm.stop()
        result.repo_requests = list(archive.requests)
    result.seconds = time.monotonic() - started
    (folder / "scenario.json").write_text(json.dumps({"scenario": asdict(result), "slurm": slurm}))
    return result, slurm


def replay(path: Path) -> tuple[Day2Scenario, dict]:
    """A scenario written by run_scenario (its folder's scenario.json), to rerun the assertions without the VM."""
    saved = json.loads(path.read_text())
    scenario = Day2Scenario(**saved["scenario"])
    scenario.runs = {name: PlaybookRun(**run) for name, run in scenario.runs.items()}
    return scenario, saved["slurm"]


def guest_kernel(image: Image) -> str:
    """The kernel release of the image (its vmlinuz is copied without the version in its name)."""
    listing = subprocess.run(["debugfs", "-R", "ls /boot", str(image.disk)], capture_output=True, text=True).stdout
    return next(word.removeprefix("vmlinuz-") for word in listing.split() if word.startswith("vmlinuz-"))
