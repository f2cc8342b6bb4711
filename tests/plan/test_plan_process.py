"""`gpufleet plan` as a process: a plan of one cloud imports no other cloud's code or provider SDK, and the
`gpufleet` command (gpufleet.plan.entry, which skips the interpreter's teardown) still flushes its whole output and
exits with the command's code."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Each test starts a fresh interpreter that imports a provider SDK (about 1.5 s of CPU): the `slow` suite.
pytestmark = pytest.mark.slow
CLOUD_CODE = {"aws": ("pulumi_aws", "gpufleet.aws"), "azure": ("pulumi_azure_native", "gpufleet.azure"),
              "gcp": ("pulumi_gcp", "gpufleet.gcp")}


@pytest.mark.parametrize("cloud", sorted(CLOUD_CODE))
def test_a_plan_imports_only_its_own_clouds_code(cloud):
    others = [name for other, names in CLOUD_CODE.items() if other != cloud for name in names]
    probe = ("import contextlib, gc, io, json, sys\n"
             "gc.disable()\n"
             "from gpufleet.plan.cli import main\n"
             "with contextlib.redirect_stdout(io.StringIO()):\n"
             f"    code = main(['plan', '{cloud}-train', '--json'])\n"
             "loaded = sorted(m for m in sys.modules if m.split('.')[0] in {'pulumi_aws', 'pulumi_azure_native', "
             "'pulumi_gcp', 'gpufleet'})\n"
             "print(json.dumps([code, loaded]))\n")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    code, loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert code == 0
    assert any(name == CLOUD_CODE[cloud][0] or name.startswith(CLOUD_CODE[cloud][0] + ".") for name in loaded)
    wrong = sorted(name for name in loaded if name.split(".")[0] in others or name.startswith(tuple(others)))
    assert wrong == [], f"a {cloud} plan imported {wrong}: import another cloud's code only where it is used"


def gpufleet(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpufleet.plan.entry", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)


def test_the_gpufleet_command_flushes_its_output_and_exits_with_the_commands_code():
    selected = gpufleet("select", "--gpu", "H100", "--gpus-per-node", "8", "--nodes", "2", "--json")
    assert selected.returncode == 0, selected.stderr[-2000:]
    assert json.loads(selected.stdout)["offers"]  # the whole document, not a cut buffer
    refused = gpufleet("plan", "no-such-stack")
    assert refused.returncode == 2
    assert refused.stderr.startswith("error: ") and "Traceback" not in refused.stderr
    usage = gpufleet("plan")
    assert usage.returncode == 2 and "usage: gpufleet plan" in usage.stderr
    helped = gpufleet("--help")
    assert helped.returncode == 0 and helped.stdout.startswith("usage: gpufleet")
