"""`git:REF:STACK` sides: planned in this process when the ref's code is this checkout's, otherwise by a child
interpreter whose `gpufleet` is the ref's components/ (checked here by planting a marker in a ref's tree)."""

from __future__ import annotations

import subprocess

import pytest

from gpufleet.plan.project import find_project
from gpufleet.plan.sources import BadSource, _run_worker, load_sides, parse_git_spec

from .plan_docs import plan_doc

PROJECT_DIR = find_project().root


@pytest.mark.slow  # a git tree and a child interpreter: seconds of CPU
def test_a_git_side_plans_the_refs_stack_file():
    (document,) = load_sides(["git:HEAD:aws-dev"], repo=PROJECT_DIR)
    assert document["stack"] == "aws-dev"
    assert {r["urn"] for r in document["resources"]} == {r["urn"] for r in plan_doc("aws-dev")["resources"]}


@pytest.mark.slow  # a git tree and a child interpreter: seconds of CPU
def test_a_child_planner_imports_gpufleet_from_the_refs_tree(tmp_path):
    tree = tmp_path / "tree"
    subprocess.run(["git", "-C", str(PROJECT_DIR), "worktree", "add", "--detach", "--quiet", str(tree), "HEAD"],
                   check=True)
    try:
        render = tree / "components" / "plan" / "render.py"
        render.write_text(render.read_text().replace('"stack": result.stack,', '"stack": "planned-from-the-tree",'))
        document = _run_worker(tree, "aws-dev", "git:HEAD:aws-dev", tmp_path / "shim")
    finally:
        subprocess.run(["git", "-C", str(PROJECT_DIR), "worktree", "remove", "--force", str(tree)], check=False)
    assert document["stack"] == "planned-from-the-tree"
    assert len(document["resources"]) == len(plan_doc("aws-dev")["resources"])


@pytest.mark.parametrize(("spec", "message"), [("git:HEAD", "expected git:REF:STACK"), ("git::x", "expected")])
def test_a_malformed_git_side_is_refused(spec, message):
    with pytest.raises(BadSource, match=message):
        parse_git_spec(spec)
