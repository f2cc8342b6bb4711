"""`gpufleet plan` as a process: a plan of one cloud imports no other cloud's code or provider SDK, and the
`gpufleet` command (gpufleet.plan.entry, which skips the interpreter's teardown) still flushes its whole output and
exits with the command's code."""

from __future__ import annotations

import json
import os
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


def test_a_repeated_plan_skips_what_only_other_commands_or_a_first_plan_need(tmp_path):
    """The second plan of a stack reads its dashboards and catalog from the content cache (no grafana-foundation-sdk)
    and never loads the other commands' modules."""
    probe = ("import contextlib, gc, io, json, sys\n"
             "gc.disable()\n"
             "from gpufleet.plan.cli import main\n"
             "with contextlib.redirect_stdout(io.StringIO()):\n"
             "    code = main(['plan', 'aws-train'])\n"
             "print(json.dumps([code, sorted(sys.modules)]))\n")
    env = {**os.environ, "GPUFLEET_CACHE_DIR": str(tmp_path / "cache")}
    runs = [subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=300,
                           env=env) for _ in range(2)]
    assert all(run.returncode == 0 for run in runs), runs[-1].stderr[-2000:]
    (first_code, first), (code, loaded) = (json.loads(run.stdout.strip().splitlines()[-1]) for run in runs)
    assert first_code == code == 0
    assert "grafana_foundation_sdk" in first  # the first plan builds the dashboards
    unused = ("grafana_foundation_sdk", "gpufleet.bench.cli", "gpufleet.catalog.cli", "gpufleet.catalog.refresh",
              "gpufleet.migrate", "gpufleet.inventory", "gpufleet.plan.diff_cli", "statistics")
    assert sorted(name for name in loaded if name.startswith(unused)) == []


@pytest.mark.parametrize(("given", "expected"), [(None, "__all__"), ("", ""), ("logfire", "logfire")])
def test_the_gpufleet_command_skips_pydantic_plugins_unless_told(given, expected):
    probe = ("import os\n"
             "import gpufleet.plan.cli as cli\n"
             "cli.main = lambda argv: print(repr(os.environ.get('PYDANTIC_DISABLE_PLUGINS'))) or 0\n"
             "from gpufleet.plan.entry import main\n"
             "main([])\n")
    env = {key: value for key, value in os.environ.items() if key != "PYDANTIC_DISABLE_PLUGINS"}
    if given is not None:
        env["PYDANTIC_DISABLE_PLUGINS"] = given
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == repr(expected)
