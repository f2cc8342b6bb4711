"""Where `gpufleet diff` gets each side's plan: a plan JSON file, or `git:REF:STACK` planned at that ref.

A ref whose program code (components/, cloud_init/, __main__.py) equals this checkout's is planned in this process
with the ref's stack file: the common "stack file changed" PR costs no second interpreter. Other refs are checked
out into a temporary worktree and planned by a child interpreter whose `gpufleet` package is that tree's
components/ (with its cloud_init/ as `gpufleet.cloud_init`); refs from before the package-dir layout import
`components` directly.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .project import find_project

CODE_PATHS = ("components", "cloud_init", "__main__.py", "Pulumi.yaml")
PLAN_TIMEOUT_S = 600
# The child runs the ref's own `plan.cli` (which may predate gpufleet.plan.entry) with the `gpufleet` command's
# process settings: no cyclic garbage collection, no interpreter teardown (see gpufleet.plan.entry for the numbers).
WORKER = r"""
import gc, os, sys
gc.disable()
root = sys.argv[1]
sys.path.insert(0, sys.argv[2])
sys.path.insert(1, root)
import importlib
cli = importlib.import_module(sys.argv[4] + ".plan.cli")
code = cli.main(["plan", sys.argv[3], "--json"])
sys.stdout.flush()
sys.stderr.flush()
os._exit(code)
"""


class BadSource(ValueError):
    """One line for the user: the side is not a plan, the stack or the ref does not exist."""


def load_sides(specs: list[str], repo: Path | None = None) -> list[dict]:
    """The plan document of each side. Sides needing a child interpreter run side by side; sides planned in this
    process run one after the other (the Pulumi runtime is one per process). `repo`: default, the current Pulumi
    project's folder (as `gpufleet plan` finds it)."""
    if repo is None and any(spec.startswith("git:") for spec in specs):
        repo = find_project().root
    jobs = [_git_job(spec, repo) if spec.startswith("git:") else (False, _file_job(spec)) for spec in specs]
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        children = {i: pool.submit(run) for i, (in_child, run) in enumerate(jobs) if in_child}
        here = {i: run() for i, (in_child, run) in enumerate(jobs) if not in_child}
        return [children[i].result() if i in children else here[i] for i in range(len(jobs))]


def _file_job(spec: str) -> Callable[[], dict]:
    document = _load_file(spec)
    return lambda: document


def _load_file(spec: str) -> dict:
    path = Path(spec)
    if not path.is_file():
        raise BadSource(f"{spec}: no such plan file (expected a `gpufleet plan --json` file or git:REF:STACK)")
    try:
        document = json.loads(path.read_text())
    except UnicodeDecodeError:
        raise BadSource(f"{spec}: not a plan (not UTF-8 text)") from None
    except json.JSONDecodeError as err:
        raise BadSource(f"{spec}: not a plan (invalid JSON: {err.msg} at line {err.lineno})") from None
    if not isinstance(document, dict) or not isinstance(document.get("resources"), list):
        raise BadSource(f"{spec}: not a plan (expected the object `gpufleet plan --json` prints, with `resources`)")
    return document


def parse_git_spec(spec: str) -> tuple[str, str]:
    ref, sep, stack = spec[len("git:"):].rpartition(":")
    if not sep or not ref or not stack:
        raise BadSource(f"{spec}: expected git:REF:STACK, e.g. git:origin/main:aws-train")
    return ref, stack


def _git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=check)


def _git_job(spec: str, repo: Path) -> tuple[bool, Callable[[], dict]]:
    """(runs in a child interpreter, the planning call) for one git side; refuses a missing ref or stack."""
    ref, stack = parse_git_spec(spec)
    if _git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False).returncode != 0:
        raise BadSource(f"{spec}: no git ref {ref!r} in {repo}")
    stack_file = f"stacks/Pulumi.{stack}.yaml"
    shown = _git(repo, "show", f"{ref}:{stack_file}", check=False)
    if shown.returncode != 0:
        listed = _git(repo, "ls-tree", "--name-only", f"{ref}:stacks", check=False).stdout.split()
        names = sorted(n[len("Pulumi."):-len(".yaml")] for n in listed if n.startswith("Pulumi."))
        raise BadSource(f"{spec}: no stack {stack!r} at {ref} (expected one of {', '.join(names) or 'none'})")
    same_code = _git(repo, "diff", "--quiet", ref, "--", *CODE_PATHS, check=False).returncode == 0
    if same_code:
        return False, lambda: _plan_here(stack, shown.stdout)
    return True, lambda: _plan_in_worktree(repo, ref, stack, spec)


def _plan_here(stack: str, stack_text: str) -> dict:
    import pulumi

    from ..spec.errors import SpecError
    from .render import plan_json
    from .runner import run_program
    from .stackfile import read_stack_config

    with tempfile.TemporaryDirectory(prefix="gpufleet-stack-") as folder:
        (Path(folder) / f"Pulumi.{stack}.yaml").write_text(stack_text)
        try:
            result = run_program(stack, read_stack_config(stack, Path(folder)))
        except (SpecError, pulumi.RunError) as err:
            raise BadSource(f"stack {stack}: {str(err).splitlines()[0]}") from None
    return json.loads(plan_json(result))


def _plan_in_worktree(repo: Path, ref: str, stack: str, spec: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="gpufleet-diff-") as folder:
        tree = Path(folder) / "tree"
        added = _git(repo, "worktree", "add", "--detach", "--quiet", str(tree), ref, check=False)
        if added.returncode != 0:
            raise BadSource(f"{spec}: cannot check out {ref}: {added.stderr.strip().splitlines()[-1:]}")
        try:
            return _run_worker(tree, stack, spec, Path(folder) / "shim")
        finally:
            _git(repo, "worktree", "remove", "--force", str(tree), check=False)


def _run_worker(tree: Path, stack: str, spec: str, shim: Path) -> dict:
    main_text = (tree / "__main__.py").read_text() if (tree / "__main__.py").exists() else ""
    layout = "gpufleet" if "gpufleet" in main_text else "components"
    shim.mkdir()
    if layout == "gpufleet":
        (shim / "gpufleet").symlink_to(tree / "components", target_is_directory=True)
        if (tree / "cloud_init").is_dir() and not (tree / "components" / "cloud_init").exists():
            (tree / "components" / "cloud_init").symlink_to(tree / "cloud_init", target_is_directory=True)
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTHONPATH", None)
    done = subprocess.run([sys.executable, "-c", WORKER, str(tree), str(shim), stack, layout], cwd=tree, env=env,
                          capture_output=True, text=True, timeout=PLAN_TIMEOUT_S)
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        raise BadSource(f"{spec}: planning failed: {lines[-1] if lines else f'exit {done.returncode}'}")
    try:
        return json.loads(done.stdout)
    except json.JSONDecodeError:
        raise BadSource(f"{spec}: planning printed no plan JSON") from None
