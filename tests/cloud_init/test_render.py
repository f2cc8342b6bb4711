"""Rendered cloud-config for every shipped shape: valid, within each cloud's limit, deterministic, and carrying
every part the spec asks for (and none it does not)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml

from gpufleet import cloud_init
from gpufleet.boot import boot_config, user_data_for
from gpufleet.cloud_init.s3_bootstrap import fits_inline
from gpufleet.pipeline import BY_REFERENCE
from tests.validators import CLOUD_INIT_HINT, cloud_config_problems, require_tool
from tests.yaml_reader import read_yaml

from .conftest import CASES, env_values, written_files

NVIDIA_OBSOLETE_EFA_VARS = ("FI_PROVIDER", "FI_EFA_USE_DEVICE_RDMA", "FI_EFA_FORK_SAFE", "FI_EFA_SET_CUDA_SYNC_MEMOPS",
                            "NCCL_PROTO", "RDMAV_FORK_SAFE")


# The CLI runs on one stack per cloud, and on gcp-train (GPUDirect-TCPXO's units, scripts and NCCL settings); every
# stack also goes through the function the CLI calls, in one process.
CLI_CASES = ("aws-p5-stock-everything", "azure-nd-h100", "gcp-a3-ultra-stock", "stack-gcp-train")


@pytest.fixture(scope="module")
def cloud_config_files(rendered, tmp_path_factory):
    folder = tmp_path_factory.mktemp("cloud-config")
    paths = {}
    for name, (_, text) in rendered.items():
        paths[name] = folder / f"{name}.yaml"
        paths[name].write_text(text)
    return paths


@pytest.fixture(scope="module")
def cli_results(cloud_config_files):
    tool = require_tool("cloud-init", CLOUD_INIT_HINT)
    running = {name: subprocess.Popen([tool, "schema", "-c", str(cloud_config_files[name])], stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True) for name in CLI_CASES}
    return {name: (p.wait(timeout=60), p.stdout.read()) for name, p in running.items()}


@pytest.mark.parametrize("name", CLI_CASES)
def test_cloud_config_passes_cloud_init_schema_cli(cli_results, name):
    code, output = cli_results[name]
    assert code == 0, output


def test_every_cloud_config_passes_cloud_init_schema_validation(cloud_config_files):
    assert cloud_config_problems(*cloud_config_files.values()) == {}


def test_cloud_init_schema_rejects_a_broken_document(tmp_path):
    tool = require_tool("cloud-init", CLOUD_INIT_HINT)
    bad = tmp_path / "bad.yaml"
    bad.write_text("#cloud-config\nruncmd: echo\npower_state: {mode: restart}\n")
    assert subprocess.run([tool, "schema", "-c", str(bad)], capture_output=True).returncode != 0
    assert list(cloud_config_problems(bad)) == [str(bad)]


@pytest.mark.parametrize("name", sorted(CASES))
def test_user_data_fits_the_cloud_limit_and_renders_byte_identical(rendered, name):
    """Within the cloud's limit, except on AWS, where a larger cloud-config goes to S3 behind a boothook."""
    selection, text = rendered[name]
    cloud = selection.spec.cloud
    limit, _ = cloud_init.LIMITS[cloud]
    assert cloud_init.measured_size(text, cloud) <= limit or cloud in BY_REFERENCE
    group = getattr(selection, "group", None)
    assert user_data_for(selection, "gpufleet-test", group=group) == text
    if fits_inline(text, cloud):
        assert cloud_init.encode_user_data(text, cloud) == cloud_init.encode_user_data(
            user_data_for(selection, "gpufleet-test", group=group), cloud)


# Bytes the shipped training stacks keep free under AWS's 16 KB: a small node change must not send them to S3.
AWS_TRAINING_HEADROOM_BYTES = 400


def test_the_shipped_aws_training_stacks_fit_the_launch_template(rendered):
    """The shipped training stacks need no S3 bootstrap: their user data goes inline, with room to spare. The
    inference stack fits too, with less room (three containers pinned by digest, 64 incompressible hex characters
    each); one that grows past the limit goes to S3 behind the boothook (`gpufleet.aws.node_config`): change the
    expectation here on purpose, with the README. The team stack's nodes run Slurm besides (slurmd, its join,
    prolog and health scripts), which takes a p5 node's config past 16 KB: each of its groups' goes to S3."""
    names = sorted(name for name in rendered if name.startswith("stack-aws-"))
    assert {name: fits_inline(rendered[name][1], "aws") for name in names} == {
        "stack-aws-dev": True, "stack-aws-infer": True, "stack-aws-train": True, "stack-aws-team-debug": False,
        "stack-aws-team-train": False}
    limit, _ = cloud_init.LIMITS["aws"]
    free = {name: limit - cloud_init.measured_size(rendered[name][1], "aws") for name in ("stack-aws-dev", "stack-aws-train")}
    assert min(free.values()) >= AWS_TRAINING_HEADROOM_BYTES, free


def test_runcmd_runs_the_installer_and_reboot_is_conditional(rendered):
    doc = read_yaml(rendered["aws-p5-spot"][1])
    assert doc["runcmd"] == [["/usr/local/sbin/gpufleet-install"]]
    assert doc["power_state"]["mode"] == "reboot"
    assert doc["power_state"]["condition"] == "test -f /run/gpufleet/reboot-required"


LIB = "/usr/local/lib/gpufleet/"
PRESENCE = [
    # (case, paths that must be present, paths that must be absent)
    ("aws-p5-spot", [LIB + "install.d/30-fabricmanager", LIB + "boot.d/20-fabricmanager", LIB + "install.d/60-efa",
                     "/usr/local/sbin/gpufleet-watcher", "/etc/systemd/system/gpufleet-watcher.service",
                     "/etc/gpufleet/drain-hook", "/etc/systemd/system/gpufleet-jobs.slice", "/usr/local/bin/gpufleet-run",
                     "/etc/systemd/system/gpufleet-dcgm-exporter.service", "/etc/gpufleet/dcgm-counters.csv",
                     "/etc/systemd/system/gpufleet-node-exporter.service", "/usr/local/sbin/gpufleet-health",
                     "/etc/systemd/system/nvidia-persistenced.service.d/gpufleet.conf",
                     LIB + "install.d/50-container-toolkit", "/etc/apt/apt.conf.d/51gpufleet-nvidia-hold"],
     ["/etc/modprobe.d/gpufleet-blacklist-nouveau.conf", LIB + "boot.d/30-mig",
      "/etc/systemd/system/gpufleet-mps.service"]),
    ("aws-p5-stock-everything", ["/etc/modprobe.d/gpufleet-blacklist-nouveau.conf",
                                 "/etc/systemd/system/gpufleet-mps.service", LIB + "install.d/70-dcgm"], []),
    ("aws-p4d-mig", [LIB + "boot.d/30-mig", "/usr/local/sbin/gpufleet-watcher", "/etc/gpufleet/drain-hook"], []),
    ("aws-g6e-dev", [], [LIB + "install.d/30-fabricmanager", LIB + "install.d/60-efa"]),
    ("azure-nd-h100", ["/etc/modules-load.d/gpufleet-nvidia-peermem.conf", LIB + "install.d/61-infiniband",
                       LIB + "install.d/30-fabricmanager"], [LIB + "install.d/60-efa"]),
    ("gcp-a3-ultra-stock", [LIB + "install.d/62-gcp-gpudirect"], [LIB + "install.d/61-infiniband"]),
]


@pytest.mark.parametrize("name, present, absent", PRESENCE)
def test_parts_follow_the_spec(rendered, name, present, absent):
    paths = written_files(rendered[name][1])
    assert [p for p in present if p not in paths] == []
    assert [p for p in absent if p in paths] == []


def test_node_env_carries_catalog_and_spec_values(rendered):
    env = env_values(written_files(rendered["aws-p4d-mig"][1])["/etc/gpufleet/node.env"]["content"])
    assert env["GPUFLEET_GPUS"] == "8" and env["GPUFLEET_GPU_MODEL"] == "A100"
    assert env["GPUFLEET_MIG_PROFILES"] == "3g.20gb,3g.20gb"
    assert env["GPUFLEET_NVSWITCH"] == "1" and env["GPUFLEET_NVLSM"] == "0"  # 3rd-gen NVSwitch: no subnet manager
    assert env["GPUFLEET_RDMA_DEVICES"] == "4" and env["GPUFLEET_FABRIC"] == "efa"
    assert env["GPUFLEET_IMAGE_KIND"] == "ubuntu-22.04" and env["GPUFLEET_MIN_DRIVER_BRANCH"] == "580"
    assert "gpufleet-boot.service" in env["GPUFLEET_UNITS"].split()


def test_drain_command_keeps_its_quotes_in_its_own_script(rendered):
    hook = written_files(rendered["aws-p5-stock-everything"][1])["/etc/gpufleet/drain-hook"]
    assert hook["permissions"] == "0755"
    assert hook["content"].splitlines()[-1] == "pkill -USR1 -f 'train.py'"


def nccl(rendered, name) -> dict:
    return env_values(written_files(rendered[name][1])["/etc/nccl.conf"]["content"])


def test_efa_nccl_uses_only_current_variables(rendered):
    efa = [name for name, (selection, _) in rendered.items() if selection.fabric == "efa"]
    assert {"aws-p5-spot", "aws-p4d-mig", "aws-p6-b200", "stack-aws-train"} <= set(efa)
    for name in efa:
        files = written_files(rendered[name][1])
        for path in ("/etc/nccl.conf", "/etc/gpufleet/job.env"):
            conf = env_values(files[path]["content"])
            assert conf["FI_EFA_USE_HUGE_PAGE"] == "0", (name, path)
            assert conf["NCCL_SOCKET_IFNAME"] == "^docker,lo,veth", (name, path)
            assert [v for v in conf if v in NVIDIA_OBSOLETE_EFA_VARS or v.startswith("RDMAV_")] == [], (name, path)


def test_tcp_fallback_disables_ib_and_skips_container_interfaces(rendered):
    conf = nccl(rendered, "aws-g6e-dev")
    assert conf["NCCL_IB_DISABLE"] == "1" and conf["NCCL_SOCKET_IFNAME"] == "^docker,lo,veth"


def test_azure_infiniband_has_topology_and_relaxed_ordering(rendered):
    conf = nccl(rendered, "azure-nd-h100")
    assert conf["NCCL_TOPO_FILE"] == "/opt/microsoft/ndv5-topo.xml"
    assert conf["NCCL_IB_PCI_RELAXED_ORDERING"] == "1"
    files = written_files(rendered["azure-nd-h100"][1])
    assert "nvidia-peermem" in files["/etc/modules-load.d/gpufleet-nvidia-peermem.conf"]["content"]


@pytest.mark.parametrize("name, expected", [
    ("gcp-a3-high", {"NCCL_NET": None, "NCCL_IB_DISABLE": "1"}),
    ("gcp-a3-mega", {"NCCL_NET": None, "NCCL_IB_DISABLE": "1"}),
    ("gcp-a3-ultra-stock", {"NCCL_NET": "gIB", "NCCL_SOCKET_IFNAME": "enp0s19,enp192s20"}),
])
def test_gcp_gpudirect_plugin_environments(rendered, name, expected):
    """A3 High / Mega: GPUDirect-TCPX(O) is refused, so `fabric: auto` gives plain TCP, never a forced NCCL_NET."""
    conf = nccl(rendered, name)
    assert {k: conf.get(k) for k in expected} == expected


def test_user_debug_level_and_overrides_win(rendered):
    conf = nccl(rendered, "aws-p5-stock-everything")
    assert conf["NCCL_DEBUG"] == "INFO" and conf["NCCL_IB_HCA"] == "rdmap" and conf["NCCL_NVLS_ENABLE"] == "0"
    job = env_values(written_files(rendered["aws-p5-stock-everything"][1])["/etc/gpufleet/job.env"]["content"])
    assert job["CUDA_MPS_PIPE_DIRECTORY"] == "/run/nvidia-mps" and job["NCCL_DEBUG"] == "INFO"


def test_gcp_plugin_library_path_reaches_every_process(rendered):
    """Not only login shells: the dynamic linker finds the plugin for ssh-started ranks and systemd services."""
    files = written_files(rendered["gcp-a3-ultra-stock"][1])
    job = env_values(files["/etc/gpufleet/job.env"]["content"])
    assert job["GPUFLEET_NCCL_LIBRARY_PATH"] == "/usr/local/gib/lib64"
    assert files["/etc/ld.so.conf.d/gpufleet-nccl-plugin.conf"]["content"] == "/usr/local/gib/lib64\n"
    assert "/etc/ld.so.conf.d/gpufleet-nccl-plugin.conf" not in written_files(rendered["gcp-a3-mega"][1])


def test_single_node_has_no_rdma_fabric(rendered):
    env = env_values(written_files(rendered["gcp-g2-dev"][1])["/etc/gpufleet/node.env"]["content"])
    assert env["GPUFLEET_FABRIC"] == "tcp" and env["GPUFLEET_RDMA_DEVICES"] == "0"
    assert env["GPUFLEET_SPOT_WATCHER"] == "1" and env["GPUFLEET_METADATA_URL"] == "http://metadata.google.internal"


def test_gcp_nic_names_come_from_the_catalog_row():
    import dataclasses

    from .conftest import GCP_A3_ULTRA, selection_for
    row = dataclasses.replace(GCP_A3_ULTRA, extra={"nic_names": {"host": ["ens4", "ens5"]}})
    conf = nccl_of(user_data_for(selection_for(row), "gpufleet-test"))
    assert conf["NCCL_SOCKET_IFNAME"] == "ens4,ens5"


def nccl_of(text: str) -> dict:
    return env_values(written_files(text)["/etc/nccl.conf"]["content"])


def test_node_count_does_not_change_the_user_data():
    """Changing `nodes` must touch only the fleet, never the launch template / scale set model."""
    from .conftest import aws_selection
    assert user_data_for(aws_selection(nodes=2), "c") == user_data_for(aws_selection(nodes=1024), "c")


GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "node" / "golden" / "aws-p5-spot.cloud-config"


def test_golden_user_data_changes_only_on_purpose(rendered):
    """A changed user data replaces every node: review the diff, then regenerate with GPUFLEET_UPDATE_GOLDEN=1."""
    text = rendered["aws-p5-spot"][1]
    if os.environ.get("GPUFLEET_UPDATE_GOLDEN") == "1":
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text(), "user data changed; if intended: GPUFLEET_UPDATE_GOLDEN=1 pytest tests/cloud_init"


def test_every_shipped_stack_is_rendered_and_checked(rendered):
    """Guards the case list: a new stacks/Pulumi.*.yaml is schema-validated and size-checked like the others."""
    from .conftest import SHIPPED_STACKS
    assert {"aws-train", "aws-dev", "azure-train", "azure-dev", "gcp-train", "gcp-dev"} <= set(SHIPPED_STACKS)
    assert all(any(case == f"stack-{name}" or case.startswith(f"stack-{name}-") for case in rendered)
               for name in SHIPPED_STACKS)


def _unit(text: str) -> dict:
    """KEY=VALUE lines of a unit file (sections flattened; enough for the keys checked here)."""
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith("#"))


def test_reboot_is_handled_by_a_per_boot_systemd_oneshot_not_runcmd(rendered):
    """runcmd runs once per instance, never after cloud-init's reboot: the per-boot work is a oneshot unit that the
    installer enables, pulled in by a target that multi-user.target wants."""
    files = written_files(rendered["aws-p5-stock-everything"][1])
    boot = _unit(files["/etc/systemd/system/gpufleet-boot.service"]["content"])
    assert (boot["Type"], boot["ExecStart"], boot["WantedBy"]) == ("oneshot", "/usr/local/sbin/gpufleet-boot",
                                                                  "gpufleet-node.target")
    assert boot["ConditionPathExists"] == "/var/lib/gpufleet/installed"
    assert _unit(files["/etc/systemd/system/gpufleet-node.target"]["content"])["WantedBy"] == "multi-user.target"
    health = _unit(files["/etc/systemd/system/gpufleet-health.service"]["content"])
    assert health["Type"] == "oneshot" and "gpufleet-boot.service" in health["After"].split()
    installer = files["/usr/local/sbin/gpufleet-install"]["content"]
    assert 'touch "$GPUFLEET_STATE_DIR/installed"' in installer and "systemctl enable $GPUFLEET_UNITS" in installer
    assert "reboot" not in " ".join(" ".join(c) for c in read_yaml(rendered["aws-p5-stock-everything"][1])[
        "runcmd"])


def test_entry_by_entry_yaml_is_the_whole_documents_yaml(rendered):
    """render_cloud_config emits each write_files entry once and joins them; that must be byte-identical to emitting
    the whole document at once (a changed byte would replace every node)."""
    from gpufleet.cloud_init import render
    for name, (selection, _text) in rendered.items():
        config = boot_config(selection, "gpufleet-test")
        title = render.render_cloud_config(config).split("\n")[1]
        whole = yaml.dump(render.cloud_config(config), Dumper=render._Dumper, sort_keys=False, width=120,
                          allow_unicode=False)
        assert render.render_cloud_config(config) == f"#cloud-config\n{title}\n{whole}", name


def test_a_tcpxo_node_gets_googles_plugin_settings_and_a_fallback_node_none_of_them(rendered):
    """gcp-train (TCPXO delivered): /etc/nccl.conf and the job environment carry the same FasTrak settings, on the
    host NIC and the eight GPU NICs the catalog's A3 Mega has, with the aperture directory the boot step binds and the
    tuner configs the plugin installer writes, and the loader finds the plugin; the fallback (no opt-ins) keeps
    none of it and ships none of TCPXO's parts."""
    from gpufleet.cloud_init.gpudirect import STATIC
    from gpufleet.gcp.gpudirect import sources
    from gpufleet.plan.stackfile import CLUSTER_KEY, read_stack_config
    from tests.conftest import cached_plan

    from .stack_configs import plan_cloud_configs

    text = rendered["stack-gcp-train"][1]
    files = written_files(text)
    conf, job = nccl_of(text), env_values(files["/etc/gpufleet/job.env"]["content"])
    fastrak = {k: v for k, v in conf.items() if k.startswith("NCCL_FASTRAK_")}
    assert fastrak and {k: job[k] for k in fastrak} == fastrak
    assert conf["NCCL_FASTRAK_CTRL_DEV"] == conf["NCCL_SOCKET_IFNAME"] == "enp0s12"
    assert conf["NCCL_FASTRAK_IFNAME"].split(",") == ["enp6s0", "enp7s0", "enp13s0", "enp14s0", "enp134s0",
                                                      "enp135s0", "enp141s0", "enp142s0"]
    assert conf["NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY"] == sources.APERTURE_DIR
    assert conf["NCCL_TUNER_CONFIG_PATH"].startswith(sources.TCPXO_LIB_DIR + "/")
    assert files["/etc/ld.so.conf.d/gpufleet-nccl-plugin.conf"]["content"].split() == [sources.TCPXO_LIB_DIR]
    assert job["GPUFLEET_NCCL_LIBRARY_PATH"] == sources.TCPXO_LIB_DIR
    assert {"/" + path for path in STATIC} <= set(files)

    spec = {**read_stack_config("gcp-train")[CLUSTER_KEY], "gpudirect": {}}
    [fallback] = [t for t in plan_cloud_configs(cached_plan(spec)).values() if "fabric tcp-multinic" in t]
    fallback_files = written_files(fallback)
    assert "NCCL_FASTRAK" not in fallback and "GPUFLEET_TCPXO_" not in fallback
    assert sources.TCPXO_LIB_DIR not in fallback_files.get("/etc/ld.so.conf.d/gpufleet-nccl-plugin.conf", {}).get(
        "content", "")
    assert not {"/" + path for path in STATIC} & set(fallback_files)
