"""`gpufleet select` has a 1 s budget per process (benchmarks/select_speed.py): the CLI path to it must not import
the Pulumi SDK, its mock runtime (grpc) or a provider SDK, which alone cost about 0.3 s of the budget."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("pulumi", "pulumi_aws", "pulumi_azure_native", "pulumi_gcp", "grpc")


def test_the_select_path_does_not_import_pulumi_or_a_provider_sdk():
    probe = ("import json, sys\n"
             "from gpufleet.plan.cli import main\n"
             "import contextlib, io\n"
             "with contextlib.redirect_stdout(io.StringIO()):\n"
             "    code = main(['select', '--gpu', 'H100', '--gpus-per-node', '8', '--json'])\n"
             f"print(json.dumps([code, sorted(m for m in {HEAVY!r} if m in sys.modules)]))\n")
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True).stdout
    code, loaded = json.loads(out.strip().splitlines()[-1])
    assert code == 0
    assert loaded == [], f"`gpufleet select` imported {loaded}: import them inside the command that needs them"
