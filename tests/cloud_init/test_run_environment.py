"""`gpufleet-run` forwards to the job exactly the variables `node.nccl.env` may set (one list, in node_rules), plus
the plugin library path; anything else in the job profile or the caller's environment stays out of the job."""

from __future__ import annotations

import pytest

from gpufleet.spec.node_rules import NCCL_ENV_PREFIXES

from .conftest import node_script, write_env
from .test_scripts import run

NOT_FORWARDED = ("LD_PRELOAD", "PYTHONPATH", "GPUFLEET_SECRET", "XNCCL_DEBUG", "NCCLX_A")


@pytest.fixture(scope="module")
def gpufleet_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("node")
    for relative in ("usr/local/bin/gpufleet-run", "usr/local/lib/gpufleet/common.sh"):
        node_script(root, relative)
    return root / "node" / "usr/local/bin/gpufleet-run"


def forwarded(gpufleet_run, tmp_path, job_env: dict[str, str]) -> set[str]:
    profile = tmp_path / "profile.sh"
    profile.write_text(f"set -a\n. {write_env(tmp_path / 'job.env', job_env)}\nset +a\n")
    done, fake = run(gpufleet_run, tmp_path, {}, "--", "true", extra_env={"GPUFLEET_JOB_PROFILE": str(profile)})
    assert done.returncode == 0, done.stderr
    args = (fake / "systemd-run.args").read_text().splitlines()
    return {arg[len("--setenv="):].split("=", 1)[0] for arg in args if arg.startswith("--setenv=")}


def test_every_name_node_nccl_env_may_hold_reaches_the_job(gpufleet_run, tmp_path):
    names = {f"{prefix}GPUFLEET_TEST": "1" for prefix in NCCL_ENV_PREFIXES}
    names.update({"TORCH_NCCL_ASYNC_ERROR_HANDLING": "1", "UCX_TLS": "rc,cuda_copy", "OFI_NCCL_PROTOCOL": "RDMA",
                  "LD_LIBRARY_PATH": "/opt/amazon/ofi-nccl/lib"})
    assert set(names) <= forwarded(gpufleet_run, tmp_path, names)


def test_other_names_stay_out_of_the_job(gpufleet_run, tmp_path):
    names = {name: "1" for name in NOT_FORWARDED}
    assert forwarded(gpufleet_run, tmp_path, names) & set(NOT_FORWARDED) == set()
