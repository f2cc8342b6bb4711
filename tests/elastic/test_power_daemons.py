"""Elastic groups on Debian's real slurmctld with power saving on, and gpufleet's real power programs (the copies
the controller's cloud-config ships) against a loopback Compute Engine: a job submitted to an empty partition makes
slurmctld call ResumeProgram with the job's nodes; a zone without capacity falls back to the next within the same
resume; the idle node's instance is deleted by SuspendProgram after SuspendTime; a group with no capacity or quota
left goes DOWN with the cloud's error as the reason while its job stays pending, returns to service after the retry
time and runs the job once capacity is back; an instance that never boots is DOWN at ResumeTimeout and deleted by
ResumeFailProgram; a node the health check drains, and one whose slurmd dies during a job, are released by `sync`
and returned to service; a group's minimum is powered up and kept up past SuspendTime. Loopback only, in a private mount
namespace (tests/elastic/power_loopback.sh), about a minute."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from gpufleet.cloud_init.power.config import (
    CLUSTER_KEY,
    GcpApi,
    GcpGroup,
    GcpTarget,
    PowerConfig,
    PowerGroup,
    render_power_config,
)
from gpufleet.cloud_init.power_files import power_files
from gpufleet.scheduler.conf import Partition, SlurmSettings, cgroup_conf, gres_conf, slurm_conf
from gpufleet.scheduler.power import (
    ElasticGroup,
    PowerPrograms,
    cloud_node_count,
    cloud_node_lines,
    partition_lines,
    power_saving_lines,
    slurmctld_parameters,
)

from ..scheduler.test_slurm_daemons import free_ports, require_slurm_on_loopback, sections
from .fake_gce import FakeGce

SCRIPT_TIMEOUT_S = 360  # about 90 s on a quiet 2-core host; the waits in power_loopback.sh add up to less
pytestmark = [pytest.mark.slow, pytest.mark.timeout(SCRIPT_TIMEOUT_S + 60)]
HERE = Path(__file__).parent
SETUP = HERE.parent / "scheduler" / "loopback-setup.sh"
PROJECT, CLUSTER = "test-project", "c0ffee"
ZONES = ("us-central1-a", "us-central1-b")
SUSPEND_TIME_S, SUSPEND_TIMEOUT_S, RESUME_TIMEOUT_S = 4, 3, 20
SLURMD_TIMEOUT_S = 8  # a killed slurmd is "Not responding" within seconds, not conf.py's 5 minutes
DEBIAN_SLURM = (22, 5)
GROUPS = (ElasticGroup(name="burst", partition="burst", node_prefix="burst-", max_nodes=3, gpus=1, cpus=1,
                       memory_mib=500, features=("n2-standard-2",), suspend_time_s=SUSPEND_TIME_S,
                       resume_timeout_s=RESUME_TIMEOUT_S),
          ElasticGroup(name="keep", partition="keep", node_prefix="keep-", max_nodes=1, min_nodes=1, gpus=1, cpus=1,
                       memory_mib=500, suspend_time_s=SUSPEND_TIME_S, resume_timeout_s=RESUME_TIMEOUT_S))


def template(group: str) -> str:
    return f"projects/{PROJECT}/global/instanceTemplates/{group}"


def decide(zone: str, name: str, attempt: int, machine_type: str) -> str | None:
    """burst-1: no capacity in zone a. burst-2 and burst-3: zone a without capacity, zone b without quota, on their
    first resume (two attempts); capacity for both afterwards."""
    if name == "burst-1":
        return "ZONE_RESOURCE_POOL_EXHAUSTED" if zone == ZONES[0] else None
    if name in ("burst-2", "burst-3") and attempt <= 2:
        return "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS" if zone == ZONES[0] else "QUOTA_EXCEEDED"
    return None


def power_config(work: Path, base: str, keep_min: int = 0, retry_s: int = 3600) -> PowerConfig:
    groups = tuple(PowerGroup(name=g.name, partition=g.partition, node_prefix=g.node_prefix, max_nodes=g.max_nodes,
                              min_nodes=keep_min if g.name == "keep" else 0, gcp=GcpGroup(targets=tuple(
                                  GcpTarget(instance_template=template(g.name), zone=zone, machine_type="n2-standard-2")
                                  for zone in ZONES))) for g in GROUPS)
    return PowerConfig(cloud="gcp", cluster_id=CLUSTER, groups=groups,
                       gcp=GcpApi(project=PROJECT, compute_url=f"{base}/compute/v1", metadata_url=base),
                       state_dir=str(work / "power-state"), log_file=str(work / "log" / "power.log"),
                       metrics_file=str(work / "metrics.prom"), scontrol=shutil.which("scontrol") or "scontrol",
                       capacity_retry_s=retry_s)


def rendered_slurm_conf(work: Path, settings: SlurmSettings) -> str:
    """conf.py's slurm.conf of a one-group cluster, with power.py's lines for the elastic groups where conf.py will
    place them, power_save_interval=1 so the test does not wait out Slurm's 10 s default between passes, and a short
SlurmdTimeout."""
    text = slurm_conf(settings)
    parameters = ",".join(("enable_configless", *slurmctld_parameters(GROUPS, DEBIAN_SLURM), "power_save_interval=1"))
    text = text.replace("SlurmctldParameters=enable_configless", f"SlurmctldParameters={parameters}")
    text = text.replace("SlurmdTimeout=300", f"SlurmdTimeout={SLURMD_TIMEOUT_S}")
    text = text.replace(f"MaxNodeCount={settings.max_nodes}",
                        f"MaxNodeCount={settings.max_nodes + cloud_node_count(GROUPS)}")
    programs = PowerPrograms(resume=str(work / "bin/gpufleet-slurm-resume"),
                             suspend=str(work / "bin/gpufleet-slurm-suspend"),
                             resume_fail=str(work / "bin/gpufleet-slurm-resume-fail"))
    lines = power_saving_lines(GROUPS, programs, SUSPEND_TIMEOUT_S, DEBIAN_SLURM)
    for group in GROUPS:
        lines += cloud_node_lines(group) + partition_lines(group)
    return text + "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def loopback(tmp_path_factory):
    require_slurm_on_loopback("slurmctld", "slurmd", "scontrol", "sinfo", "sbatch", "munged")
    work = tmp_path_factory.mktemp("power")
    for folder in ("spawn", "kill"):
        (work / folder).mkdir()
    fake = FakeGce(PROJECT, {template(g.name): {"machineType": "n2-standard-2", "labels": {CLUSTER_KEY: CLUSTER}}
                             for g in GROUPS}, decide,
                   on_create=lambda name: (work / "spawn" / name).touch(),
                   on_delete=lambda name: (work / "kill" / name).touch())
    server = fake.server().start()
    try:
        settings = SlurmSettings(cluster_name="elastic", controller_host="ctl", partition="fixed", max_nodes=4,
                                 gpus_per_node=1, partitions=(Partition("fixed", "fixed", True),))
        (work / "slurm.conf").write_text(rendered_slurm_conf(work, settings))
        (work / "cgroup.conf").write_text(cgroup_conf())
        (work / "gres.conf").write_text(gres_conf(settings))
        for name in ("task-prolog", "prolog", "epilog"):
            (work / name).write_text("#!/bin/sh\nexit 0\n")
            (work / name).chmod(0o755)
        config = power_config(work, server.url)
        for name, variant in (("power.json", config), ("power-retry.json", power_config(work, server.url, retry_s=0)),
                              ("power-min.json", power_config(work, server.url, keep_min=1))):
            (work / name).write_text(render_power_config(variant))
        root = work / "root"  # what the controller's cloud-config writes, shipped copies of the programs included
        for entry in power_files(config):
            path = root / entry["path"].lstrip("/")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(entry["content"])
        ctld_port, slurmd_port = free_ports(2)
        env = dict(os.environ, CTLD_PORT=str(ctld_port), SLURMD_PORT=str(slurmd_port), GPUS="1", SETUP=str(SETUP),
                   POWER_LIB=str(root / "usr/local/lib/gpufleet"), PYTHON="/usr/bin/python3", DEAD="burst-2",
                   POWER_ENTRY=str(root / "usr/local/sbin/gpufleet-slurm-power"), SUSPEND_TIME=str(SUSPEND_TIME_S))
        script = subprocess.Popen(["unshare", "-m", "bash", str(HERE / "power_loopback.sh"), str(work)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                                  start_new_session=True)
        try:
            stdout, stderr = script.communicate(timeout=SCRIPT_TIMEOUT_S)
        finally:
            if script.poll() is None:  # timed out or interrupted: its EXIT trap stops slurmctld, slurmd and munged
                os.killpg(script.pid, signal.SIGTERM)
                script.wait(timeout=30)
    finally:
        server.close()
    done = subprocess.CompletedProcess(script.args, script.returncode, stdout, stderr)
    logs = "".join(p.read_text() for p in sorted((work / "log").glob("*.log")))
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}\n{logs[-6000:]}"
    return sections(done.stdout), fake, work, logs


def test_the_elastic_keys_reach_slurmctld(loopback):
    found, _, work, _ = loopback
    config = dict(map(str.strip, line.split("=", 1)) for line in found["config"].splitlines())
    assert config["SuspendProgram"] == str(work / "bin/gpufleet-slurm-suspend")
    assert config["ResumeFailProgram"] == str(work / "bin/gpufleet-slurm-resume-fail")
    assert config["ResumeProgram"] == str(work / "bin/gpufleet-slurm-resume")
    assert config["SuspendTime"] == "INFINITE"  # for the cluster; the elastic partitions set their own
    assert config["SuspendExcNodes"] == "keep-1:1"
    assert "cloud_reg_addrs" in config["SlurmctldParameters"]


def test_cloud_nodes_start_powered_down_in_their_partitions(loopback):
    found, *_ = loopback
    nodes = {line.split()[0]: line.split()[1:] for line in found["powered down"].splitlines()}
    assert nodes["burst-1"][:2] == ["idle~", "burst"] and "n2-standard-2" in nodes["burst-1"][2].split(",")
    assert nodes["keep-1"][:2] == ["idle~", "keep"]


def test_a_job_on_an_empty_partition_resumes_its_node_falling_back_to_the_next_zone(loopback):
    found, fake, _, logs = loopback
    assert "ran on burst-1" in found["fallback"] and "JobState=COMPLETED" in found["fallback"]
    inserts = [(path.split("/")[6], sorted(body["perInstanceProperties"])) for method, path, body in fake.calls
               if path.endswith("/instances/bulkInsert")]
    assert inserts[:2] == [(ZONES[0], ["burst-1"]), (ZONES[1], ["burst-1"])]
    assert "resume burst-1" in logs


def test_the_idle_node_is_suspended_and_its_instance_deleted(loopback):
    found, fake, _, logs = loopback
    assert found["suspend"].strip() == "burst-1 idle~"
    assert ("DELETE", f"/compute/v1/projects/{PROJECT}/zones/{ZONES[1]}/instances/burst-1", None) in fake.calls
    assert "suspend burst-1" in logs


def test_a_group_without_capacity_goes_down_with_the_clouds_error_and_its_job_stays_pending(loopback):
    found, fake, work, logs = loopback
    lines = found["short"].splitlines()
    for node, line in zip(("burst-2", "burst-3"), lines, strict=False):
        assert line.startswith(f"{node} down~ gpufleet quota: QUOTA_EXCEEDED on n2-standard-2 {ZONES[1]}"), line
        assert "(2 of 2 targets failed)" in line
    assert lines[2] == "job PENDING"
    assert "resume burst-[2-3]" in logs  # the job's two nodes in one host list
    short = (work / "short.prom").read_text()
    assert 'gpufleet_capacity_short{group="burst",reason="quota"} 1' in short
    assert 'gpufleet_power_resume_failures_total{group="burst",reason="quota"} 2' in short


def test_short_nodes_return_to_service_after_the_retry_time_and_run_the_job_when_capacity_is_back(loopback):
    found, _, work, _ = loopback
    lines = found["retry"].splitlines()
    assert lines[:2] == ["burst-2 idle~", "burst-3 idle~"]
    assert "ran on burst-3" in lines
    assert 'gpufleet_capacity_short{group="burst",reason="quota"} 0' in (work / "retry.prom").read_text()


def test_a_resume_that_times_out_goes_through_resume_fail_program(loopback):
    found, fake, _, logs = loopback
    lines = found["timeout"].splitlines()
    assert lines[0] == "burst-2 down~ ResumeTimeout reached", lines
    assert lines[1] == "job PENDING"  # requeued, not failed
    assert "resume-fail burst-2" in logs
    assert ("DELETE", f"/compute/v1/projects/{PROJECT}/zones/{ZONES[0]}/instances/burst-2", None) in fake.calls
    assert "burst-2 never boots" in found["instances"]


def test_a_node_the_health_check_drained_is_released_and_returned_to_service(loopback):
    found, _, work, logs = loopback
    lines = found["unhealthy"].splitlines()
    assert lines == ["burst-1 down~ gpufleet repair: gpufleet: unhealthy: test", "burst-1 instance deleted",
                     "burst-1 idle~"], lines
    assert "burst: repairing burst-1: gpufleet: unhealthy: test" in logs
    assert 'gpufleet_power_nodes_repaired_total{group="burst"} 1' in (work / "repair.prom").read_text()


def test_a_node_whose_slurmd_died_during_a_job_is_released_and_its_job_requeued(loopback):
    found, *_ = loopback
    lines = found["not responding"].splitlines()
    assert lines[:4] == ["burst-1 down* Not responding", "job PENDING",
                         "burst-1 down~ gpufleet repair: Not responding", "burst-1 instance deleted"], lines
    assert lines[4] in ("burst-1 idle~", "burst-1 alloc#", "burst-1 mix#"), lines  # back, or resumed for its job


def test_a_groups_minimum_is_powered_up_and_kept_up(loopback):
    found, *_ = loopback
    assert found["min"].splitlines() == ["keep-1 idle", "keep-1 idle"]
