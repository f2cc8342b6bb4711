"""Assembles the cloud-config: the node's parameter files, the selected real files, one runcmd and a conditional
reboot. Nothing here writes shell; everything the node runs is under `files/`.
"""

from __future__ import annotations

import functools

import yaml

from .config import BootConfig
from .env import (
    DRAIN_HOOK_PATH,
    JOB_ENV_PATH,
    NCCL_CONF_PATH,
    NODE_ENV_PATH,
    nccl_library_path,
    node_env_items,
    render_drain_hook,
    render_env_file,
    render_job_env,
    render_nccl_conf,
)
from .parts import Part, static_parts, units_to_enable
from .yaml_entries import yaml_by_entry

# The NCCL plugin's directory for the dynamic linker: /etc/nccl.conf names the plugin for every process (MPI ranks
# over ssh, systemd services), while /etc/profile.d reaches login shells only.
NCCL_PLUGIN_LD_CONF = "/etc/ld.so.conf.d/gpufleet-nccl-plugin.conf"
INSTALL_COMMAND = ["/usr/local/sbin/gpufleet-install"]
REBOOT_MARKER = "/run/gpufleet/reboot-required"


def generated_parts(config: BootConfig) -> list[Part]:
    """The files that carry this node's values."""
    header = "gpufleet node parameters, written by cloud-init: do not edit."  # the values name cluster and type
    parts = [
        Part(NODE_ENV_PATH, "0644", render_env_file(node_env_items(config, units_to_enable(config)), header)),
        Part(NCCL_CONF_PATH, "0644", render_nccl_conf(config)),
        Part(JOB_ENV_PATH, "0644", render_job_env(config)),
    ]
    library = nccl_library_path(config)
    if library is not None:
        parts.append(Part(NCCL_PLUGIN_LD_CONF, "0644", f"{library}\n"))
    if config.spot_watcher:
        parts.append(Part(DRAIN_HOOK_PATH, "0755", render_drain_hook(config.drain_command, config.slurm is not None)))
    return parts


def cloud_config(config: BootConfig) -> dict:
    """The cloud-config document as data."""
    parts = generated_parts(config) + static_parts(config)
    return {
        "write_files": [{"path": p.path, "owner": "root:root", "permissions": p.permissions, "content": p.content}
                        for p in parts],
        "runcmd": [INSTALL_COMMAND],
        "power_state": {
            "mode": "reboot",
            "delay": "now",
            "message": "gpufleet: rebooting once to finish installing (driver, EFA); gpufleet-boot.service continues",
            "condition": f"test -f {REBOOT_MARKER}",
        },
    }


class _Dumper(yaml.SafeDumper):
    """Multi-line strings as literal blocks, so scripts stay readable in the user data."""


def _str_representer(dumper: yaml.SafeDumper, value: str):
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str_representer)


@functools.lru_cache(maxsize=64)
def render_cloud_config(config: BootConfig) -> str:
    """The node's cloud-config text, starting with "#cloud-config"; the same config gives the same bytes.

    Cached by the frozen config: emitting the YAML is most of a plan's time, and plans of one cluster at different
    sizes, or a stack planned again, render the very same node.
    """
    title = (f"# gpufleet node: cluster {config.cluster_name}, {config.instance_type} ({config.gpus}x "
             f"{config.gpu_model}), fabric {config.fabric}, image {config.image_kind}")
    return f"#cloud-config\n{title}\n" + yaml_by_entry(cloud_config(config), _dump)


def _dump(value: object) -> str:
    return yaml.dump(value, Dumper=_Dumper, sort_keys=False, width=120, allow_unicode=False)
