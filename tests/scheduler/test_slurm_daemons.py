"""The rendered slurm.conf, cgroup.conf and gres.conf run Debian's real Slurm: slurmctld starts with them, a dynamic
node fetches them (configless) and registers with its GPUs as GRES, a job step gets two GPUs and the fabric's job
environment through the TaskProlog, the example job scripts pass `sbatch --test-only`, and a spot notice's drain
requeues a running job and deletes the node, whose second boot brings it back to finish the job. Loopback only, in
a private mount namespace (tests/scheduler/loopback.sh), about 12 s."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from gpufleet.boot import boot_config
from gpufleet.cloud_init.env import render_job_env
from gpufleet.cloud_init.parts import for_node
from gpufleet.cloud_init.slurm_controller import METRICS_SCRIPT
from gpufleet.pipeline import plan_cluster
from gpufleet.plan.stackfile import apply_overrides, read_stack_config
from gpufleet.scheduler.conf import controller_files, slurm_settings
from gpufleet.spec import parse_cluster_spec

from ..validators import require_tool

# Real daemons registering, requeueing and rebooting take about 12 s of waiting: the `slow` suite (.ci/run).
pytestmark = pytest.mark.slow
HERE = Path(__file__).parent
FILES = HERE.parents[1] / "cloud_init" / "files"
JOBS = HERE.parents[1] / "examples" / "jobs"
CGROUP_V2 = os.path.exists("/sys/fs/cgroup/cgroup.controllers")
SLURM_HINT = "install Debian's Slurm with `apt-get install -y slurmctld slurmd slurm-client munge`"


def slurm_plan(stack: str = "aws-train", *overrides: str):
    config = apply_overrides(read_stack_config(stack), ["scheduler.kind=slurm", *overrides])
    return plan_cluster(parse_cluster_spec(config["gpufleet:cluster"]))


def sections(output: str) -> dict[str, str]:
    found, name = {}, None
    for line in output.splitlines():
        if line.startswith("== "):
            name = line[3:].strip()
            found[name] = ""
        elif name:
            found[name] += line + "\n"
    return found


def require_slurm_on_loopback(*tools: str) -> None:
    """Skips (fails in CI, through require_tool) unless Debian's Slurm tools are here, and unless this is root with
    unshare(1): munged's socket lives in a private mount namespace."""
    for tool in tools:
        require_tool(tool, SLURM_HINT)
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("needs root and unshare(1) (a private mount namespace for munged's socket)")


def free_ports(count: int) -> list[int]:
    """Ports on 127.0.0.1 that nothing listens on now, all held open until every one is chosen (so they differ)."""
    with contextlib.ExitStack() as held:
        sockets = [held.enter_context(socket.socket()) for _ in range(count)]
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]


@pytest.fixture(scope="module")
def loopback(tmp_path_factory):
    require_slurm_on_loopback("slurmctld", "slurmd", "scontrol", "sinfo", "srun", "munged")
    plan = slurm_plan()
    work = tmp_path_factory.mktemp("slurm")
    settings = slurm_settings(plan, plan.cluster_name)
    for name, text in controller_files(settings).items():
        (work / name).write_text(text)
    # The real TaskProlog, reading the real job environment of this plan's node through a copy of the profile script.
    (work / "job.env").write_text(render_job_env(boot_config(plan, plan.cluster_name)))
    profile = (FILES / "etc/profile.d/gpufleet-job-env.sh").read_text().replace("/etc/gpufleet/job.env",
                                                                             str(work / "job.env"))
    (work / "profile.sh").write_text(profile)
    prolog = work / "task-prolog"
    prolog.write_text((FILES / "usr/local/lib/gpufleet/slurm/task-prolog").read_text().replace(
        "/etc/profile.d/gpufleet-job-env.sh", str(work / "profile.sh")))
    prolog.chmod(0o755)
    # The real Prolog and Epilog, mapping the job's GPUs through the real gpufleet-run into a folder under `work`.
    run = work / "gpufleet-run"
    run.write_text((FILES / "usr/local/bin/gpufleet-run").read_text())
    run.chmod(0o755)
    for name in ("prolog", "epilog"):
        script = work / name
        script.write_text((FILES / f"usr/local/lib/gpufleet/slurm/{name}").read_text().replace(
            "/usr/local/bin/gpufleet-run", f"env GPUFLEET_RUN_DIR={work / 'run-gpufleet'} {run}").replace(
            f"[ -x env GPUFLEET_RUN_DIR={work / 'run-gpufleet'} {run} ]", f"[ -x {run} ]"))
        script.chmod(0o755)
    jobs = " ".join(str(p) for p in sorted(JOBS.glob("*.sbatch")))
    # Ports of this fixture's own: xdist may start the fixture in two workers at once (worksteal splits modules).
    ctld_port, slurmd_port = free_ports(2)
    # The drain a fixed (not elastic) node ships: its `# only: elastic` section powers a CLOUD node down instead.
    drain = work / "drain"
    drain.write_text(for_node((FILES / "usr/local/lib/gpufleet/slurm/drain").read_text(), {"aws"}))
    drain.chmod(0o755)
    env = dict(os.environ, DRAIN_SCRIPT=str(drain), GPUS=str(settings.gpus_per_node), JOB_SCRIPTS=jobs,
               NODE_CONF=f"Gres=gpu:{settings.gpus_per_node} Feature=loopback", CTLD_PORT=str(ctld_port),
               SLURMD_PORT=str(slurmd_port), METRICS_SCRIPT=str(METRICS_SCRIPT))
    done = subprocess.run(["unshare", "-m", "bash", str(HERE / "loopback.sh"), str(work)], capture_output=True,
                          text=True, timeout=180, env=env)
    logs = "".join(p.read_text() for p in (work / "log").glob("*.log"))
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}\n{logs[-4000:]}"
    found = sections(done.stdout)
    found["slurmctld.log"] = (work / "log" / "slurmctld.log").read_text()
    return found, plan, work


def config_values(text: str) -> dict[str, str]:
    values = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            values[key.strip()] = value.strip()
    return values


def test_slurmctld_runs_the_rendered_configuration(loopback):
    found, plan, _ = loopback
    assert "is UP" in found["ping"]
    config = config_values(found["config"])
    assert "enable_configless" in config["SlurmctldParameters"]
    assert config["JobRequeue"] == "1"
    assert config["MaxNodeCount"] == "4112"  # the spec's bound and room for replacements, never the node count
    assert config["SrunPortRange"] == "60001-63000"
    assert config["SelectType"] == "select/cons_tres"
    assert config["ReturnToService"] == "2"
    assert config["HealthCheckProgram"] == "/bin/true"  # the test's stand-in; the rendered path is checked below
    if CGROUP_V2:  # on a cgroup v1 host the test tracks processes without cgroups, and scontrol omits cgroup.conf
        assert config["ConstrainDevices"] == "yes" and config["ConstrainCores"] == "yes"
        assert config["ConstrainRAMSpace"] == "yes" and config["CgroupPlugin"] == "cgroup/v2"


def test_a_dynamic_node_fetches_the_config_and_registers_its_gpus(loopback):
    found, plan, work = loopback
    assert found["sinfo"].split("\n")[1].split() == ["loopback1", "idle", f"{plan.spec.scheduler.slurm.partition}*",
                                                     "loopback", f"gpu:{plan.instance.gpus}"]
    assert set(found["fetched"].split()) >= {"slurm.conf", "gres.conf", "cgroup.conf"}
    assert "DYNAMIC" in found["node"]


def test_a_job_step_gets_its_gpus_and_the_fabric_environment_from_the_task_prolog(loopback):
    found, plan, _ = loopback
    line = next(line for line in found["srun"].splitlines() if line.startswith("task-env"))
    assert "GPUFLEET_TEST_VAR=unset" in line and "CUDA_VISIBLE_DEVICES=0,1" in line
    job_env = config_values(render_job_env(boot_config(plan, plan.cluster_name)))
    job_env = {name: value.strip("'") for name, value in job_env.items() if not name.startswith("#")}
    assert plan.fabric == "efa" and "FI_EFA_USE_HUGE_PAGE" in job_env
    step_env = set(found["srun"].splitlines())
    assert {f"{name}={value}" for name, value in job_env.items()} <= step_env


def test_the_prolog_maps_the_jobs_gpus_to_its_slurm_job_id_and_the_epilog_clears_it(loopback):
    """dcgm-exporter labels the GPUs' metrics hpc_job=<Slurm job id> from this folder (the jobs dashboard)."""
    found, _, _ = loopback
    mapped = [line.split() for line in found["srun"].splitlines() if line.startswith("gpu-job ")]
    assert sorted(gpu for _, gpu, _, _, _ in mapped) == ["0", "1"]
    assert all(job == step_job for _, _, job, _, step_job in mapped)
    assert found["gpu-jobs after"].strip() == "0"


def test_a_spot_notice_drains_the_node_requeues_its_job_and_deletes_it(loopback):
    """The drain hook's Slurm step (cloud_init/files/usr/local/lib/gpufleet/slurm/drain) against real Slurm."""
    found, _, _ = loopback
    assert found["drain"].splitlines() == ["before RUNNING", "after PENDING", "nodes 0"]
    assert "node loopback1 reason set to: gpufleet: spot instance-action" in found["slurmctld.log"]


def test_the_drained_nodes_second_boot_brings_it_back_and_the_requeued_job_finishes(loopback):
    found, _, _ = loopback
    lines = found["second boot"].splitlines()
    assert lines[0] == "loopback1 idle"
    assert lines[1].split() == ["JobState=COMPLETED", "Restarts=1"]


def test_the_example_job_scripts_are_accepted_by_sbatch_and_slurmctld(loopback):
    found, _, _ = loopback
    verdicts = {}
    for block in found["jobs"].split("-- ")[1:]:
        name, _, text = block.partition("\n")
        verdicts[name] = text.strip()
    assert set(verdicts) == {"nccl-allreduce.sbatch", "zero3-amp.sbatch"}
    for name, text in verdicts.items():
        assert "to start at" in text and "error" not in text.lower(), (name, text)


def parsed_metrics(path: Path) -> dict[str, float]:
    """Samples of a Prometheus text file as {'name{labels}': value}, after `promtool check metrics` accepted it."""
    text = path.read_text()
    checked = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    samples = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            samples[name] = float(value)
    return samples


def test_the_controllers_slurm_metrics_count_queue_jobs_and_nodes_by_state(loopback):
    """The real squeue and sinfo, read by the metrics script the controller's timer runs, give what Prometheus reads."""
    require_tool("promtool", "install Debian's prometheus (promtool)")
    _, _, work = loopback
    idle = parsed_metrics(work / "idle.prom")
    assert idle["gpufleet_slurm_up"] == 1
    assert idle['gpufleet_slurm_nodes{state="idle"}'] == 1
    assert idle['gpufleet_slurm_nodes{state="drained"}'] == 0
    assert idle["gpufleet_slurm_queue_jobs"] == 0
    assert idle['gpufleet_slurm_jobs{state="running"}'] == 0
    busy = parsed_metrics(work / "busy.prom")
    assert busy["gpufleet_slurm_queue_jobs"] == 1
    assert busy['gpufleet_slurm_jobs{state="pending"}'] == 1
    assert busy['gpufleet_slurm_jobs{state="running"}'] == 1
    assert busy['gpufleet_slurm_nodes{state="idle"}'] == 0
    assert busy['gpufleet_slurm_nodes{state="allocated"}'] + busy['gpufleet_slurm_nodes{state="mixed"}'] == 1
    assert busy["gpufleet_slurm_nodes_not_responding"] == 0


def test_the_slurm_metrics_say_down_when_slurmctld_does_not_answer(tmp_path):
    """No controller to answer: gpufleet_slurm_up is 0 (the SlurmMetricsDown alert) and no count pretends zero."""
    require_tool("promtool", "install Debian's prometheus (promtool)")
    require_tool("squeue", SLURM_HINT)
    (tmp_path / "slurm.conf").write_text("ClusterName=none\nSlurmctldHost=nohost(127.0.0.1)\nSlurmctldPort=1\n"
                                         "MessageTimeout=1\n")
    out = tmp_path / "slurm.prom"
    env = dict(os.environ, SLURM_CONF=str(tmp_path / "slurm.conf"))
    subprocess.run(["bash", str(METRICS_SCRIPT), str(out)], env=env, check=True, timeout=30)
    samples = parsed_metrics(out)
    assert samples["gpufleet_slurm_up"] == 0
    assert not any(name.startswith(("gpufleet_slurm_nodes", "gpufleet_slurm_jobs")) for name in samples)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["slurm.conf", "slurm.prom"]  # no temporary file left
