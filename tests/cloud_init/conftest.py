"""Selections and boot configs for the cloud_init tests, built once per session where they are shared."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
import yaml

from gpufleet.catalog.loader import load_catalog
from gpufleet.catalog.models import InstanceType
from gpufleet.catalog.selector import Selection, select
from gpufleet.pipeline import plan_node_groups
from gpufleet.plan.stackfile import CLUSTER_KEY, read_stack_config, stack_names
from gpufleet.spec import parse_cluster_spec

REPO = Path(__file__).resolve().parents[2]
FILES = REPO / "cloud_init" / "files"
FIXTURES = REPO / "tests" / "fixtures" / "node"


def aws_spec(**overrides) -> dict:
    spec = {"cloud": "aws", "region": "us-east-2", "zone": "us-east-2a", "nodes": 2,
            "accelerator": {"instance_type": "p5.48xlarge"}}
    spec.update(overrides)
    return spec


def aws_selection(**overrides) -> Selection:
    return select(parse_cluster_spec(aws_spec(**overrides)))


def catalog_row(cloud: str, name: str) -> InstanceType:
    row = load_catalog().instance(cloud, name)
    assert row is not None, f"{cloud} {name} is not in the catalog"
    return row


AZURE_ND_H100 = catalog_row("azure", "Standard_ND96isr_H100_v5")
AZURE_NC_A100 = catalog_row("azure", "Standard_NC24ads_A100_v4")
GCP_A3_HIGH = catalog_row("gcp", "a3-highgpu-8g")
GCP_A3_MEGA = catalog_row("gcp", "a3-megagpu-8g")
GCP_A3_ULTRA = catalog_row("gcp", "a3-ultragpu-8g")
GCP_G2 = catalog_row("gcp", "g2-standard-8")


def selection_for(instance: InstanceType, nodes: int = 2, market: str = "on-demand", node: dict | None = None,
                  image: str = "driver-ready", scheduler: dict | None = None) -> Selection:
    """A Selection for `instance`, built the way the selector builds one but without its price, zone and node
    checks (the node rules are tested on their own)."""
    zone = {"aws": "us-east-2a", "azure": "1", "gcp": "us-central1-a"}[instance.cloud]
    region = {"aws": "us-east-2", "azure": "eastus", "gcp": "us-central1"}[instance.cloud]
    raw = {"cloud": instance.cloud, "region": region, "zone": zone, "nodes": nodes,
           "accelerator": {"gpu": instance.gpu, "gpus_per_node": instance.gpus}, "market": market,
           "image": {"kind": image}}
    if node is not None:
        raw["node"] = node
    if scheduler is not None:
        raw["scheduler"] = scheduler
    spec = parse_cluster_spec(raw)
    from gpufleet.catalog.selector import NodePrice
    fabric = instance.fabric if nodes > 1 else None
    return Selection(spec=spec, instance=instance, gpu=load_catalog().gpu(instance.gpu), fabric=fabric,
                     placement_group=nodes > 1, price=NodePrice(None, None), warnings=())


@pytest.fixture(scope="session")
def files_dir() -> Path:
    return FILES


def _aws(instance_type: str, **overrides) -> Selection:
    return aws_selection(accelerator={"instance_type": instance_type}, **overrides)


# The shipped stacks and the representative shapes of each cloud: name -> selection builder.
CASES = {
    "aws-p5-spot": lambda: _aws("p5.48xlarge", market="spot"),
    # Every node option on stock Ubuntu, with the exporters off: with them too it is over AWS's 16 KB (refused, see
    # test_contract.py; the exporters are checked on the other shapes).
    "aws-p5-stock-everything": lambda: _aws("p5.48xlarge", market="spot", image={"kind": "ubuntu-24.04"}, node={
        "mps": {"enabled": True, "active_thread_percentage": 50}, "health": {"dcgm_diag": True, "nccl_allreduce": True},
        "exporters": {"dcgm": False, "node": False},
        "isolation": {"cpu_quota_percent": 9000, "allowed_cpus": "0-95"}, "nccl": {"debug": "INFO", "env": {
            "NCCL_IB_HCA": "rdmap", "NCCL_NVLS_ENABLE": "0"}}, "spot": {"drain_command": "pkill -USR1 -f 'train.py'"}}),
    # Every node option and both storage parts together exceed AWS's 16 KB of user data (refused, see
    # test_contract.py), so storage has a stock-image case of its own.
    "aws-p5-stock-storage": lambda: _aws("p4d.24xlarge", image={"kind": "ubuntu-22.04"},
        storage={"shared": {"kind": "lustre"}, "local_nvme": {"enabled": True, "container_data_root": True}}),
    "aws-p4d-mig": lambda: _aws("p4d.24xlarge", image={"kind": "ubuntu-22.04"},
                                node={"mig": {"profiles": ["3g.20gb", "3g.20gb"]}}),
    "aws-p6-b200": lambda: _aws("p6-b200.48xlarge", market="spot"),
    "aws-g6e-dev": lambda: _aws("g6e.xlarge", nodes=1, node={"container_runtime": "containerd"}),
    "azure-nd-h100": lambda: selection_for(AZURE_ND_H100, market="spot"),
    "azure-nc-a100-mig": lambda: selection_for(AZURE_NC_A100, nodes=1, node={"mig": {"profiles": ["7g.80gb"]}}),
    "gcp-a3-high": lambda: selection_for(GCP_A3_HIGH, market="spot"),
    "gcp-a3-mega": lambda: selection_for(GCP_A3_MEGA),
    "gcp-a3-ultra-stock": lambda: selection_for(GCP_A3_ULTRA, image="ubuntu-22.04", node={"mps": {"enabled": True}}),
    "gcp-g2-dev": lambda: selection_for(GCP_G2, nodes=1, market="spot"),
    # scheduler.kind: slurm on each cloud (its own join section of slurm/join).
    "aws-p5-slurm": lambda: _aws("p5.48xlarge", market="spot", scheduler={"kind": "slurm"}),
    "azure-nd-slurm": lambda: selection_for(AZURE_ND_H100, market="spot", scheduler={"kind": "slurm"}),
    "gcp-a3-mega-slurm": lambda: selection_for(GCP_A3_MEGA, scheduler={"kind": "slurm", "slurm": {"requeue": False}}),
    # vGPU slices: the GRID guest driver in place of the datacenter driver, on each cloud.
    "aws-g6f-slice": lambda: _aws("g6f.2xlarge", zone="use2-az1", image={"kind": "ubuntu-22.04"}),
    "azure-nv-slice": lambda: select(parse_cluster_spec({
        "cloud": "azure", "region": "westeurope", "nodes": 2, "accelerator": {"instance_type": "Standard_NV6ads_A10_v5"},
        "image": {"kind": "ubuntu-24.04"}, "node": {"driver": {"grid_sha256": "ab" * 32}},
        "access": {"ssh_public_key": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGdwdWZsZWV0LWV4YW1wbGUtcmVwbGFjZS1tZS0wMDAw a@b"}})),
    "gcp-g4-slice": lambda: select(parse_cluster_spec({
        "cloud": "gcp", "region": "us-central1", "zone": "us-central1-b", "nodes": 1, "market": "spot",
        "accelerator": {"gpu": "RTX-PRO-6000", "gpu_fraction": 0.25}, "image": {"kind": "ubuntu-22.04"}})),
}


def _stack(name: str, group: str | None = None) -> Selection:
    """The selection of the shipped stack file stacks/Pulumi.<name>.yaml (of its node group `group`), as `pulumi up`
    would build it."""
    return plan_node_groups(parse_cluster_spec(read_stack_config(name)[CLUSTER_KEY])).group(group)


def _stack_cases(name: str) -> dict:
    """One case per shipped stack, or per node group of a stack with `node_groups`."""
    groups = parse_cluster_spec(read_stack_config(name)[CLUSTER_KEY]).node_groups
    if groups is None:
        return {f"stack-{name}": functools.partial(_stack, name)}
    return {f"stack-{name}-{group}": functools.partial(_stack, name, group) for group in sorted(groups)}


# Every shipped stack is rendered too, so schema, size and determinism hold for what users actually deploy.
SHIPPED_STACKS = stack_names()
for _name in SHIPPED_STACKS:
    CASES.update(_stack_cases(_name))


# Elastic groups' nodes (SlurmNodeConfig.cloud_node) on each cloud: the spec has no field for them yet, so their
# boot config is the Slurm case's with the flag set (slurm/node-name, slurmd-exec and the `elastic` sections).
ELASTIC_CASES = {f"{name}-elastic": name for name in ("aws-p5-slurm", "azure-nd-slurm", "gcp-a3-mega-slurm")}


@pytest.fixture(scope="session")
def rendered() -> dict:
    """name -> (selection, cloud-config text), rendered once for the session."""
    import dataclasses

    from gpufleet.boot import boot_config, user_data_for
    from gpufleet.cloud_init import render_cloud_config
    out = {}
    for name, build in CASES.items():
        selection = build()
        out[name] = (selection, user_data_for(selection, "gpufleet-test", group=getattr(selection, "group", None)))
    for name, base in ELASTIC_CASES.items():
        selection = out[base][0]
        config = boot_config(selection, "gpufleet-test")
        assert config.slurm is not None
        config = dataclasses.replace(config, slurm=dataclasses.replace(config.slurm, cloud_node=True))
        out[name] = (selection, render_cloud_config(config))
    return out


@functools.cache
def written_files(text: str) -> dict:
    """path -> write_files entry of a rendered cloud-config (parsed once per text)."""
    return {entry["path"]: entry for entry in yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))[
        "write_files"]}


def env_values(content: str) -> dict:
    values = {}
    for line in content.splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            values[key] = value.strip("'")
    return values


FAKE_BIN = FIXTURES / "bin"


def node_script(tmp_path: Path, relative: str) -> Path:
    """The copy of files/<relative> that a node gets (comments stripped), as an executable under tmp_path."""
    from gpufleet.cloud_init.parts import shipped
    target = tmp_path / "node" / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(shipped((FILES / relative).read_text(), relative))
    target.chmod(0o755)
    return target


def write_env(path: Path, values: dict) -> Path:
    path.write_text("".join(f"{k}='{v}'\n" for k, v in values.items()))
    return path
