"""The Slurm controller's cloud-config: the files slurmctld serves (rendered by `gpufleet.scheduler`, passed in as
text, since cloud_init never imports components), its settings and one setup script.

A small CPU VM from the distribution's Ubuntu 24.04 image: no GPU stack, no public address. It holds the munge
key's *name* only; the setup script reads the key with the controller's own identity.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from .env import quote_env_value
from .parts import for_node
from .power.config import PowerConfig
from .power_files import SYNC_UNIT, power_files
from .yaml_entries import yaml_by_entry

SETUP_SCRIPT = Path(__file__).parent / "controller" / "gpufleet-slurm-controller-setup"
SETUP_PATH = "/usr/local/sbin/gpufleet-slurm-controller-setup"
METRICS_SCRIPT = Path(__file__).parent / "controller" / "gpufleet-slurm-metrics"
METRICS_PATH = "/usr/local/sbin/gpufleet-slurm-metrics"
METRICS_UNIT = "gpufleet-slurm-metrics"
TEXTFILE_DIR = "/var/lib/prometheus/node-exporter"
ENV_PATH = "/etc/gpufleet-slurm/controller.env"
CLOUDS = ("aws", "azure", "gcp")


@dataclass(frozen=True)
class ControllerConfig:
    """Everything the controller VM needs; the same config renders the same bytes."""

    cloud: str
    hostname: str
    files: tuple[tuple[str, str], ...]
    """(name under /etc/slurm, content): slurm.conf, cgroup.conf, gres.conf."""
    munge_key_name: str
    """AWS SSM parameter name, GCP secret resource name, Azure Key Vault secret URL."""
    state_device: str
    """The state disk's stable device path."""
    region: str = ""
    metrics: bool = False
    """Serve Slurm metrics to the monitoring server (node_exporter's textfile collector); off without monitoring."""
    power: PowerConfig | None = None
    """Elastic node groups: the power programs and their config (`power_files`); None for fixed-size clusters,
    whose controller user data is then what it was before elastic groups existed."""

    def __post_init__(self) -> None:
        if self.cloud not in CLOUDS:
            raise ValueError(f"ControllerConfig.cloud: got {self.cloud!r}; expected one of {', '.join(CLOUDS)}")


def controller_document(config: ControllerConfig) -> dict:
    env = [("CLOUD", config.cloud), ("MUNGE_KEY_NAME", config.munge_key_name), ("STATE_DEVICE", config.state_device),
           ("AWS_REGION", config.region)]
    sections = {config.cloud}
    if config.power is not None:  # the setup script's `# only: elastic` sections (and boto3 on AWS)
        env.append(("POWER_METRICS_FILE", config.power.metrics_file))
        sections |= {"elastic", f"elastic-{config.cloud}"}
    script = for_node(SETUP_SCRIPT.read_text(), sections)
    files = [{"path": f"/etc/slurm/{name}", "owner": "root:root", "permissions": "0644", "content": content}
             for name, content in config.files]
    files += [
        {"path": ENV_PATH, "owner": "root:root", "permissions": "0644",
         "content": "\n".join(quote_env_value(name, value) for name, value in env) + "\n"},
        {"path": SETUP_PATH, "owner": "root:root", "permissions": "0755",
         "content": script},
    ]
    runcmd: list = [[SETUP_PATH]]
    if config.power is not None:
        files += power_files(config.power)
        runcmd.append(["systemctl", "enable", "--now", f"{SYNC_UNIT}.timer"])
    if config.metrics:
        files += _metrics_files()
        # The distribution's packaged node_exporter (its textfile collector reads TEXTFILE_DIR by default on
        # Debian and Ubuntu); installed here, not in the setup script, so a controller without monitoring is unchanged.
        runcmd.append(["sh", "-c", "command -v prometheus-node-exporter >/dev/null || "
                       "DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "
                       "prometheus-node-exporter"])
        runcmd.append(["systemctl", "enable", "--now", f"{METRICS_UNIT}.timer"])
    return {"hostname": config.hostname, "fqdn": config.hostname, "prefer_fqdn_over_hostname": False,
            "manage_etc_hosts": True, "package_update": False, "write_files": files, "runcmd": runcmd}


def _metrics_files() -> list[dict]:
    """The metrics script and its timer: every 30 s, after slurmctld, into node_exporter's textfile directory.
    The directory is made only when missing (`mkdir -p`): an elastic controller's setup makes it group-writable for
    SlurmUser, whose power programs write their metrics there, and `install -d -m 0755` would take that away every
    30 s (the programs' resume then failed after creating the instances, and the nodes were released)."""
    service = (
        "[Unit]\nDescription=gpufleet: Slurm queue, job and node counts for Prometheus\n"
        "After=slurmctld.service prometheus-node-exporter.service\n\n"
        f"[Service]\nType=oneshot\nExecStartPre=/bin/mkdir -p {TEXTFILE_DIR}\n"
        f"ExecStart={METRICS_PATH} {TEXTFILE_DIR}/gpufleet-slurm.prom\n")
    timer = (
        "[Unit]\nDescription=gpufleet: write Slurm metrics every 30 s\n\n"
        "[Timer]\nOnActiveSec=10s\nOnUnitActiveSec=30s\nAccuracySec=1s\n\n"
        "[Install]\nWantedBy=timers.target\n")
    return [
        {"path": METRICS_PATH, "owner": "root:root", "permissions": "0755", "content": METRICS_SCRIPT.read_text()},
        {"path": f"/etc/systemd/system/{METRICS_UNIT}.service", "owner": "root:root", "permissions": "0644",
         "content": service},
        {"path": f"/etc/systemd/system/{METRICS_UNIT}.timer", "owner": "root:root", "permissions": "0644",
         "content": timer},
    ]


def render_controller_cloud_config(config: ControllerConfig) -> str:
    """`#cloud-config` text for the controller VM."""
    return "#cloud-config\n" + yaml_by_entry(controller_document(config), _dump)


class _Dumper(yaml.SafeDumper):
    """Multi-line strings as literal blocks, so the files stay readable in the user data."""


_Dumper.add_representer(str, lambda dumper, value: dumper.represent_scalar(
    "tag:yaml.org,2002:str", value, style="|" if "\n" in value else None))


def _dump(value: object) -> str:
    return yaml.dump(value, Dumper=_Dumper, sort_keys=False, width=120, allow_unicode=False)
