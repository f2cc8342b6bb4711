"""The scaling engine's configuration: one JSON file on the Slurm controller (`CONFIG_PATH`), written by the
controller's cloud-config and read by every run of the power programs.

The same dataclasses are both ends of the file: `render_power_config` writes them (sorted keys, fixed indentation,
one trailing newline: the same config gives the same bytes, so the controller's user data does not change between
plans), and `load_power_config` reads them back on the controller, refusing unknown keys and bad values with the
key's path, so a file written by another gpufleet release fails loudly instead of half-working.

Per group it carries what each cloud needs to create and find that group's instances:
- AWS: the group's launch template, its placement group, the market, and the ordered targets (instance type, subnet,
  zone), tried one after another by EC2 Fleet `CreateFleet` (`Type=instant`);
- GCP: the ordered targets (instance template, zone), tried by zonal `instances.bulkInsert`;
- Azure: the ordered targets (a Uniform scale set per type and zone), grown by their capacity.
A group's Slurm node names are `node_prefix` + 1..`max_nodes` (`PowerGroup.node_names`); slurm.conf's `NodeName=`
lines (gpufleet.scheduler.power) use the same names.
"""

from __future__ import annotations

import json
import re
from dataclasses import MISSING, dataclass, fields, is_dataclass
from typing import Any, get_args, get_origin, get_type_hints

SCHEMA_VERSION = 1
CONFIG_PATH = "/etc/gpufleet-slurm/power.json"
STATE_DIR = "/var/lib/gpufleet-slurm/power"
LOG_FILE = "/var/log/slurm/gpufleet-power.log"
SCONTROL = "/usr/bin/scontrol"
CLOUDS = ("aws", "azure", "gcp")
MARKETS = ("on-demand", "spot")
NODE_NAME_KEY = "gpufleet-slurm-node"
"""AWS: the instance tag that names a resumed instance's Slurm node; Azure: the `key=value` line of the instance's
user data that does. GCP needs neither: the instance's name is the node's name."""
GCP_PREFIX_KEY = "gpufleet-slurm-node-prefix"
"""GCP: the instance-template metadata attribute holding the group's node prefix; a node whose instance name starts
with it runs as the Slurm node of that name."""
CLUSTER_KEY = "gpufleet-cluster"
"""The tag (AWS) or label (GCP) carrying the cluster's hash: a program only finds and deletes instances that carry it."""
GCP_COMPUTE_URL = "https://compute.googleapis.com/compute/v1"
GCP_METADATA_URL = "http://metadata.google.internal"
AZURE_MANAGEMENT_URL = "https://management.azure.com"
AZURE_METADATA_URL = "http://169.254.169.254"
AZURE_COMPUTE_API = "2024-07-01"
CAPACITY_RETRY_S = 600
"""How long a group's nodes stay DOWN after a capacity or quota error before `sync` returns them to service (powered
down) and Slurm may resume them again: ParallelCluster's `insufficient_capacity_timeout` default is the same 600 s."""
NODE_NAME = re.compile(r"[a-z][a-z0-9-]*")


@dataclass(frozen=True, kw_only=True)
class AwsTarget:
    """One (instance type, subnet) the group may launch into, in the group's order."""

    instance_type: str
    subnet_id: str
    availability_zone: str
    launch_template_id: str = ""
    """A fallback type's own launch template (its node config names its type); "" for the group's."""


@dataclass(frozen=True, kw_only=True)
class AwsGroup:
    launch_template_id: str
    targets: tuple[AwsTarget, ...]
    launch_template_version: str = "$Default"
    market: str = "on-demand"
    placement_group: str = ""
    """The cluster placement group every target launches into ("" when the group has none)."""

    def __post_init__(self) -> None:
        _one_of("market", self.market, MARKETS)
        _some("targets", self.targets)


@dataclass(frozen=True, kw_only=True)
class GcpTarget:
    instance_template: str
    """`projects/P/global/instanceTemplates/T` or `projects/P/regions/R/instanceTemplates/T` (or the full URL)."""
    zone: str
    machine_type: str
    """The template's machine type, for the reason a failed resume gives."""


@dataclass(frozen=True, kw_only=True)
class GcpGroup:
    targets: tuple[GcpTarget, ...]

    def __post_init__(self) -> None:
        _some("targets", self.targets)


@dataclass(frozen=True, kw_only=True)
class AzureTarget:
    scale_set_id: str
    """`/subscriptions/S/resourceGroups/G/providers/Microsoft.Compute/virtualMachineScaleSets/N` (Uniform, with
    overprovisioning off: an overprovisioned scale-out creates and deletes extra instances)."""
    vm_size: str
    zone: str = ""


@dataclass(frozen=True, kw_only=True)
class AzureGroup:
    targets: tuple[AzureTarget, ...]

    def __post_init__(self) -> None:
        _some("targets", self.targets)


@dataclass(frozen=True, kw_only=True)
class PowerGroup:
    """One elastic node group: its Slurm names and what its cloud needs to create them."""

    name: str
    partition: str
    node_prefix: str
    max_nodes: int
    min_nodes: int = 0
    aws: AwsGroup | None = None
    gcp: GcpGroup | None = None
    azure: AzureGroup | None = None

    def __post_init__(self) -> None:
        if not NODE_NAME.fullmatch(self.node_prefix) or not self.node_prefix.endswith("-"):
            raise ValueError(f"node_prefix: got {self.node_prefix!r}; expected lowercase letters, digits and `-`, "
                             "starting with a letter and ending with `-`")
        if not 1 <= self.max_nodes <= 10_000:
            raise ValueError(f"max_nodes: got {self.max_nodes}; expected 1 to 10000")
        if not 0 <= self.min_nodes <= self.max_nodes:
            raise ValueError(f"min_nodes: got {self.min_nodes}; expected 0 to max_nodes ({self.max_nodes})")
        if sum(cloud is not None for cloud in (self.aws, self.gcp, self.azure)) != 1:
            raise ValueError("exactly one of aws, gcp, azure must be set")

    def node_names(self) -> list[str]:
        return [f"{self.node_prefix}{index}" for index in range(1, self.max_nodes + 1)]

    def owns(self, node: str) -> bool:
        suffix = node[len(self.node_prefix):]
        return node.startswith(self.node_prefix) and suffix.isdigit() and 1 <= int(suffix) <= self.max_nodes \
            and not suffix.startswith("0")


@dataclass(frozen=True, kw_only=True)
class AwsApi:
    region: str
    endpoint_url: str = ""
    """"" for the region's own EC2 endpoint."""


@dataclass(frozen=True, kw_only=True)
class GcpApi:
    project: str
    compute_url: str = GCP_COMPUTE_URL
    metadata_url: str = GCP_METADATA_URL


@dataclass(frozen=True, kw_only=True)
class AzureApi:
    management_url: str = AZURE_MANAGEMENT_URL
    metadata_url: str = AZURE_METADATA_URL
    api_version: str = AZURE_COMPUTE_API
    client_id: str = ""
    """The controller's user-assigned identity ("" for the system-assigned one)."""


@dataclass(frozen=True, kw_only=True)
class PowerConfig:
    """Everything the power programs need; the same config renders the same bytes."""

    cloud: str
    cluster_id: str
    """The cluster's hash, the value of `CLUSTER_KEY` on every instance the programs may find or delete."""
    groups: tuple[PowerGroup, ...]
    aws: AwsApi | None = None
    gcp: GcpApi | None = None
    azure: AzureApi | None = None
    state_dir: str = STATE_DIR
    log_file: str = LOG_FILE
    metrics_file: str = ""
    """node_exporter textfile collector file for the capacity metrics ("" without monitoring)."""
    scontrol: str = SCONTROL
    """Absolute: slurmctld starts the programs with SLURM_CONF as their only environment, no PATH."""
    capacity_retry_s: int = CAPACITY_RETRY_S
    version: int = SCHEMA_VERSION

    def __post_init__(self) -> None:
        _one_of("cloud", self.cloud, CLOUDS)
        if self.version != SCHEMA_VERSION:
            raise ValueError(f"version: got {self.version}; this release reads {SCHEMA_VERSION}")
        if getattr(self, self.cloud) is None:
            raise ValueError(f"{self.cloud}: the cloud's API settings are missing")
        names = [group.name for group in self.groups]
        if len(set(names)) != len(names):
            raise ValueError(f"groups: group names repeat: {names}")
        prefixes = sorted(group.node_prefix for group in self.groups)
        for first, second in zip(prefixes, prefixes[1:], strict=False):
            if second.startswith(first):
                raise ValueError(f"groups: node prefix {second!r} starts with {first!r}; node names would clash")
        for group in self.groups:
            if getattr(group, self.cloud) is None:
                raise ValueError(f"groups.{group.name}: no {self.cloud} settings on a {self.cloud} cluster")

    def group_of(self, node: str) -> PowerGroup | None:
        return next((group for group in self.groups if group.owns(node)), None)


def render_power_config(config: PowerConfig) -> str:
    """The config file's text: sorted keys, one space of indentation a level, a trailing newline."""
    return json.dumps(_plain(config), sort_keys=True, indent=1) + "\n"


def load_power_config(text: str) -> PowerConfig:
    """The config from its JSON text; ValueError names the key path of the first problem."""
    return _build(PowerConfig, json.loads(text), "")


def _plain(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return {item.name: _plain(getattr(value, item.name)) for item in fields(value)
                if getattr(value, item.name) is not None}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


def _build(cls: type, data: Any, path: str) -> Any:
    if not isinstance(data, dict):
        raise ValueError(f"{path or 'config'}: expected an object, got {type(data).__name__}")
    hints = get_type_hints(cls)
    known = {item.name: item for item in fields(cls)}
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ValueError(f"{path or 'config'}: unknown keys {unknown}")
    values = {}
    for name, item in known.items():
        where = f"{path}.{name}" if path else name
        if name not in data:
            if item.default is MISSING and item.default_factory is MISSING:
                raise ValueError(f"{where}: missing")
            continue
        values[name] = _value(hints[name], data[name], where)
    try:
        return cls(**values)
    except ValueError as error:
        raise ValueError(f"{path or 'config'}: {error}") from error


def _value(hint: Any, data: Any, path: str) -> Any:
    args = get_args(hint)
    if type(None) in args:  # X | None
        inner = next(arg for arg in args if arg is not type(None))
        return None if data is None else _value(inner, data, path)
    if get_origin(hint) is tuple:
        if not isinstance(data, list):
            raise ValueError(f"{path}: expected a list")
        return tuple(_value(args[0], item, f"{path}[{index}]") for index, item in enumerate(data))
    if isinstance(hint, type) and is_dataclass(hint):
        return _build(hint, data, path)
    if hint is int and (isinstance(data, bool) or not isinstance(data, int)):
        raise ValueError(f"{path}: expected an integer, got {data!r}")
    if hint is str and not isinstance(data, str):
        raise ValueError(f"{path}: expected a string, got {data!r}")
    return data


def _one_of(name: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"{name}: got {value!r}; expected one of {', '.join(allowed)}")


def _some(name: str, values: tuple) -> None:
    if not values:
        raise ValueError(f"{name}: at least one is needed")


__all__ = ["AwsApi", "AwsGroup", "AwsTarget", "AzureApi", "AzureGroup", "AzureTarget", "CONFIG_PATH", "GcpApi",
           "GcpGroup", "GcpTarget", "PowerConfig", "PowerGroup", "load_power_config", "render_power_config"]
