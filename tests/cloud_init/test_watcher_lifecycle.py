"""Every way a node leaves takes one drain path: the AWS group's termination hook (scale-in, capacity rebalance,
Capacity Block end) seen in IMDS, completed once drained, and the drain at shutdown for a node that leaves without a
notice (GCP scale-in or delete). Against the loopback metadata emulators, with the node's own gpufleet-aws signing
the Auto Scaling calls (or a fake AWS CLI, as on the Deep Learning AMI). Every wait is on a condition."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from .conftest import node_script, write_env
from .metadata_servers import AWS_GROUP, MetadataServer
from .test_watcher import Watcher, answered, wait_until
from .test_watcher_faults import NOTICE_TO_DRAIN_SECONDS, hook_that_waits

HOOK = "gpufleet-drain"
ATTEMPTS = 5  # LIFECYCLE_ATTEMPTS in gpufleet-watcher


@pytest.fixture(scope="module")
def watcher_script(tmp_path_factory):
    return node_script(tmp_path_factory.mktemp("watcher"), "usr/local/sbin/gpufleet-watcher")


@pytest.fixture(scope="module")
def aws_api(tmp_path_factory):
    return node_script(tmp_path_factory.mktemp("aws-api"), "usr/local/sbin/gpufleet-aws")


def aws_watcher(script, tmp_path, server, api, **env):
    """The watcher as on a stock-image AWS node: the hook name from node.env, gpufleet-aws for the API calls."""
    settings = {"GPUFLEET_AWS_LIFECYCLE_HOOK": HOOK, "GPUFLEET_AWS_API": str(api),
                "GPUFLEET_AWS_ENDPOINT": server.url + "/", "GPUFLEET_AWS_RETRY_SECONDS": "0.05", **env}
    return Watcher(script, tmp_path, "aws", server.url, **settings)


def expected_completion() -> dict:
    return {"Action": "CompleteLifecycleAction", "Version": "2011-01-01", "LifecycleHookName": HOOK,
            "AutoScalingGroupName": AWS_GROUP, "LifecycleActionResult": "CONTINUE", "InstanceId": "i-0123456789abcdef0"}


def test_the_termination_hook_drains_once_then_completes_the_action(watcher_script, aws_api, tmp_path):
    release = tmp_path / "release"
    hook = hook_that_waits(tmp_path, release)
    with MetadataServer("aws") as server, \
            aws_watcher(watcher_script, tmp_path, server, aws_api, GPUFLEET_DRAIN_HOOK=str(hook)) as watcher:
        answered(server, 6)
        assert watcher.runs() == [] and server.asg_calls == []  # InService: nothing to do
        terminated = server.terminate()
        watcher.wait_for_runs(1)
        assert (tmp_path / "hook-runs").stat().st_mtime - (time.time() - (time.monotonic() - terminated)) \
            <= NOTICE_TO_DRAIN_SECONDS
        answered(server, 6)
        assert server.completions() == []  # not before the drain has finished
        release.touch()
        assert wait_until(lambda: server.completions() == [expected_completion()])
        answered(server, 8)
        assert server.completions() == [expected_completion()] and watcher.runs() == ["termination"]
        assert [c["Action"] for c in server.asg_calls] == ["DescribeAutoScalingInstances", "CompleteLifecycleAction"]
        assert server.asg_calls[0]["InstanceIds.member.1"] == "i-0123456789abcdef0"
        assert f"completed lifecycle action {HOOK}" in watcher.output()


def test_a_spot_notice_then_the_hook_drains_once_and_still_completes(watcher_script, aws_api, tmp_path):
    with MetadataServer("aws") as server, aws_watcher(watcher_script, tmp_path, server, aws_api) as watcher:
        server.notice()
        watcher.wait_for_runs(1)
        server.terminate()
        assert wait_until(lambda: len(server.completions()) == 1)
        answered(server, 8)
        assert watcher.runs() == ["interruption"] and len(server.completions()) == 1


def test_drain_on_rebalance_drains_at_the_recommendation_and_the_hook_only_completes(watcher_script, aws_api, tmp_path):
    with MetadataServer("aws") as server, aws_watcher(watcher_script, tmp_path, server, aws_api,
                                                      GPUFLEET_DRAIN_ON_REBALANCE="1") as watcher:
        server.rebalance()
        watcher.wait_for_runs(1)
        server.terminate()
        assert wait_until(lambda: len(server.completions()) == 1)
        assert watcher.runs() == ["rebalance"]


@pytest.mark.slow  # waits on real time: off the default run
def test_a_hanging_drain_is_killed_at_its_timeout_and_the_action_completed_anyway(watcher_script, aws_api, tmp_path):
    hook = hook_that_waits(tmp_path, tmp_path / "never")
    with MetadataServer("aws") as server, aws_watcher(watcher_script, tmp_path, server, aws_api,
                                                      GPUFLEET_DRAIN_HOOK=str(hook),
                                                      GPUFLEET_DRAIN_TIMEOUT_SECONDS="1") as watcher:
        server.terminate()
        watcher.wait_for_runs(1)
        assert wait_until(lambda: server.completions() == [expected_completion()])
        assert "timed out" in watcher.output()
        assert json.loads((tmp_path / "run" / "drained.json").read_text())["kind"] == "termination"


@pytest.mark.slow  # waits on real time: off the default run
def test_a_failed_completion_is_retried_and_logged(watcher_script, aws_api, tmp_path):
    with MetadataServer("aws", asg_failures=2) as server, \
            aws_watcher(watcher_script, tmp_path, server, aws_api) as watcher:
        server.terminate()
        assert wait_until(lambda: f"completed lifecycle action {HOOK}" in watcher.output())
        assert len(server.completions()) == 3
        assert watcher.output().count("HTTP 500") == 2 and "(2/5)" in watcher.output()
        assert watcher.runs() == ["termination"]


@pytest.mark.slow  # waits on real time: off the default run
def test_completion_gives_up_after_a_bounded_number_of_attempts(watcher_script, aws_api, tmp_path):
    """The hook's default result CONTINUE ends the wait at its timeout; the watcher neither loops nor exits."""
    with MetadataServer("aws", asg_failures=1000) as server, \
            aws_watcher(watcher_script, tmp_path, server, aws_api) as watcher:
        server.terminate()
        assert wait_until(lambda: "gave up" in watcher.output())
        answered(server, 8)
        assert len(server.completions()) == ATTEMPTS
        assert watcher.process.poll() is None


@pytest.mark.slow  # waits on real time: off the default run
def test_a_completion_call_that_hangs_is_cut_off_while_polling_goes_on(watcher_script, aws_api, tmp_path):
    with MetadataServer("aws", asg_hang_seconds=20) as server, \
            aws_watcher(watcher_script, tmp_path, server, aws_api, GPUFLEET_AWS_CALL_SECONDS="0.5") as watcher:
        server.terminate()
        watcher.wait_for_runs(1)
        assert wait_until(lambda: "timed out after 0.5 seconds" in watcher.output())
        answered(server, 8)  # the call runs in its own thread: the metadata is still polled
        assert watcher.process.poll() is None and server.completions() == []


def test_on_the_deep_learning_ami_the_aws_cli_completes_the_action(watcher_script, tmp_path):
    """No gpufleet-aws there (it is left out of the 16 KB of user data): the image's AWS CLI is used instead."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "aws-calls"
    fake_aws = bin_dir / "aws"
    fake_aws.write_text(f'#!/bin/sh\necho "$*" >>"{calls}"\n'
                        'case "$2" in describe-auto-scaling-instances) '
                        f'echo \'{{"AutoScalingInstances": [{{"AutoScalingGroupName": "{AWS_GROUP}"}}]}}\';; esac\n')
    fake_aws.chmod(0o755)
    with MetadataServer("aws") as server, \
            Watcher(watcher_script, tmp_path, "aws", server.url, path_prefix=str(bin_dir),
                    GPUFLEET_AWS_LIFECYCLE_HOOK=HOOK, GPUFLEET_AWS_API=str(tmp_path / "absent")) as watcher:
        server.terminate()
        assert wait_until(lambda: f"completed lifecycle action {HOOK}" in watcher.output())
        assert calls.read_text().splitlines() == [
            "autoscaling describe-auto-scaling-instances --region us-east-2 --output json "
            "--instance-ids i-0123456789abcdef0",
            "autoscaling complete-lifecycle-action --region us-east-2 --output json --lifecycle-hook-name "
            f"{HOOK} --auto-scaling-group-name {AWS_GROUP} --lifecycle-action-result CONTINUE "
            "--instance-id i-0123456789abcdef0"]
        assert watcher.runs() == ["termination"]


def run_shutdown(script, tmp_path, path_prefix: str = "", **env) -> subprocess.CompletedProcess:
    """`gpufleet-watcher --shutdown`, as gpufleet-shutdown-drain.service's ExecStop runs it."""
    hook = env.pop("hook", None) or tmp_path / "drain-hook"
    if not hook.exists():
        hook.write_text(f'#!/bin/sh\necho "$GPUFLEET_NOTICE_KIND" >>"{tmp_path / "hook-runs"}"\n')
        hook.chmod(0o755)
    env_file = write_env(tmp_path / "node.env", {"GPUFLEET_CLOUD": "gcp", "GPUFLEET_METADATA_URL": "http://127.0.0.1:9",
                                                 "GPUFLEET_DRAIN_HOOK": str(hook),
                                                 "GPUFLEET_RUN_DIR": str(tmp_path / "run"), **env})
    environment = {k: v for k, v in os.environ.items() if not k.startswith("GPUFLEET_")}
    environment["GPUFLEET_ENV_FILE"] = str(env_file)
    if path_prefix:
        environment["PATH"] = f"{path_prefix}:{environment['PATH']}"
    return subprocess.run([sys.executable, str(script), "--shutdown"], env=environment, capture_output=True,
                          text=True, timeout=60)


def hook_runs(tmp_path) -> list[str]:
    record = tmp_path / "hook-runs"
    return record.read_text().split() if record.exists() else []


def test_a_node_leaving_without_a_notice_drains_once_at_shutdown(watcher_script, tmp_path):
    done = run_shutdown(watcher_script, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert hook_runs(tmp_path) == ["shutdown"]
    assert json.loads((tmp_path / "run" / "drained.json").read_text())["outcome"] == "exit 0"
    again = run_shutdown(watcher_script, tmp_path)
    assert again.returncode == 0 and "already drained" in again.stdout
    assert hook_runs(tmp_path) == ["shutdown"]


def test_shutdown_after_the_watcher_drained_does_not_drain_again(watcher_script, tmp_path):
    with MetadataServer("gcp") as server, Watcher(watcher_script, tmp_path, "gcp", server.url) as watcher:
        server.notice()
        watcher.wait_for_runs(1)
        assert wait_until(lambda: (tmp_path / "run" / "drained.json").exists())
    done = run_shutdown(watcher_script, tmp_path)
    assert "already drained" in done.stdout and hook_runs(tmp_path) == ["interruption"]


@pytest.mark.slow  # waits on real time: off the default run
def test_a_hanging_drain_at_shutdown_is_killed_within_its_timeout(watcher_script, tmp_path):
    hook = hook_that_waits(tmp_path, tmp_path / "never")
    started = time.monotonic()
    done = run_shutdown(watcher_script, tmp_path, hook=hook, GPUFLEET_SHUTDOWN_DRAIN_SECONDS="1")
    assert done.returncode == 0 and "timed out" in done.stdout
    assert time.monotonic() - started < 1 + 5 + 5  # the timeout, the kill grace, a slow start
    assert json.loads((tmp_path / "run" / "drained.json").read_text())["kind"] == "shutdown"


def test_a_reboot_does_not_drain(watcher_script, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    systemctl = bin_dir / "systemctl"
    systemctl.write_text('#!/bin/sh\n[ "$1" = list-jobs ] && echo "1 reboot.target start waiting"\n')
    systemctl.chmod(0o755)
    done = run_shutdown(watcher_script, tmp_path, path_prefix=str(bin_dir))
    assert done.returncode == 0 and "a reboot, not draining" in done.stdout
    assert hook_runs(tmp_path) == [] and not (tmp_path / "run" / "drained.json").exists()


@pytest.mark.parametrize("market, runs", [
    ("spot", True), ("mixed", True), ("on-demand", True),
    ({"type": "on-demand", "capacity_reservation_id": "cr-0abc1234", "capacity_block": True,
      "capacity_block_start": "2099-01-10T11:30:00Z", "capacity_block_end": "2099-01-12T11:30:00Z"}, True)])
def test_aws_nodes_that_run_the_watcher_know_their_groups_hook(market, runs):
    """The hook name comes from the group's declaration (gpufleet.aws.capacity); every AWS node runs the watcher and
    leaves through the hook, on-demand ones too (scale-in, repair, a Capacity Block's end)."""
    from gpufleet.aws.capacity import DRAIN_HOOK_NAME
    from gpufleet.boot import user_data_for

    from .conftest import aws_selection, env_values, written_files
    if isinstance(market, str) and market == "mixed":
        market = {"type": "mixed", "on_demand_base": 1}
    files = written_files(user_data_for(aws_selection(market=market), "gpufleet-test"))
    env = env_values(files["/etc/gpufleet/node.env"]["content"])
    units = env["GPUFLEET_UNITS"].split()
    assert env["GPUFLEET_AWS_LIFECYCLE_HOOK"] == (DRAIN_HOOK_NAME if runs else "")
    assert ("gpufleet-watcher.service" in units, "gpufleet-shutdown-drain.service" in units) == (runs, runs)
    assert ("/usr/local/sbin/gpufleet-watcher" in files) == runs
