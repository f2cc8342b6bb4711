"""`gpufleet migrate capture`: record the local interpreter, frameworks, GPUs and data folders in one manifest."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from packaging.version import InvalidVersion, Version

from ..catalog.loader import Catalog, load_catalog
from ..spec.errors import Problem, SpecError
from .compat import cuda_from_local_label, tensorflow_build
from .data import scan_folder
from .gpus import read_gpus
from .manifest import ROOT, Frameworks, Manifest, Package, PythonEnv
from .packages import normalise

REPORT_SCRIPT = Path(__file__).with_name("interpreter_report.py")
TIMEOUT_S = 300  # importing a large torch install from a cold disk takes a while


def capture(python: str | None, data: list[Path], catalog: Catalog | None = None, now: datetime | None = None) -> Manifest:
    catalog = catalog or load_catalog()
    notes: list[str] = []
    report = interpreter_report(python or sys.executable)
    packages = normalise(report["packages"])
    gpus, driver = read_gpus(catalog, notes)
    frameworks = read_frameworks(packages, report.get("frameworks") or {}, driver)
    if frameworks.cuda is None and any(p.name in ("torch", "tensorflow", "jax") for p in packages):
        notes.append("the framework's CUDA version could not be read: `match` cannot check it against the GPU")
    env = PythonEnv(executable=report["executable"], version=report["version"],
                    implementation=report["implementation"], platform=report["platform"], packages=packages)
    folders = tuple(scan_folder(path) for path in data)
    names = [folder.name for folder in folders]
    clash = sorted({n for n in names if names.count(n) > 1})
    if clash:
        raise SpecError([Problem("--data", clash[0], "two data folders share this name, and each is synced to "
                                 "<to>/<name>; rename one")], root=ROOT)
    created = (now or datetime.now(timezone.utc)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return Manifest(created=created, python=env, frameworks=frameworks, gpus=gpus, data=folders, notes=tuple(notes))


def interpreter_report(python: str, cwd: str | None = None) -> dict:
    """Runs the report script inside `python` (from an empty folder, so the caller's files do not shadow packages)."""
    script = REPORT_SCRIPT.read_text()
    try:
        with tempfile.TemporaryDirectory() as empty:
            done = subprocess.run([python, "-"], input=script, capture_output=True, text=True, timeout=TIMEOUT_S,
                                  cwd=cwd or empty)
    except FileNotFoundError:
        raise SpecError([Problem("--python", python, "no such interpreter; name a Python executable, e.g. "
                                 ".venv/bin/python")], root=ROOT) from None
    except PermissionError:
        raise SpecError([Problem("--python", python, "not executable; name a Python executable")], root=ROOT) from None
    except subprocess.TimeoutExpired:
        raise SpecError([Problem("--python", python, f"did not answer within {TIMEOUT_S} s")], root=ROOT) from None
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise SpecError([Problem("--python", python, f"expected a Python 3.8+ interpreter; it exited "
                                 f"{done.returncode}: {tail}")], root=ROOT)
    return parse_report(done.stdout, "--python", python)


def parse_report(stdout: str, field: str, python: str) -> dict:
    """The report is the last line: a sitecustomize or .pth file may print before it."""
    lines = stdout.strip().splitlines()
    try:
        report = json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        report = None
    if not isinstance(report, dict) or "packages" not in report:
        raise SpecError([Problem(field, python, "expected a Python 3.8+ interpreter; its report could not be read: "
                                 f"{(lines or ['no output'])[-1][:120]}")], root=ROOT)
    return report


def read_frameworks(packages: tuple[Package, ...], runtime: dict, driver: str | None) -> Frameworks:
    """Framework versions, and CUDA/cuDNN from (best first): what torch reports at import, a `+cuXYZ` local label,
    NVIDIA's CUDA runtime/cuDNN wheels, TensorFlow's tested build configuration."""
    by_name = {p.name: p for p in packages}
    torch, tensorflow, jax = (by_name.get(n) for n in ("torch", "tensorflow", "jax"))
    cuda = cuda_source = cudnn = cudnn_source = None
    if runtime.get("cuda"):
        cuda, cuda_source = runtime["cuda"], "torch.version.cuda"
    for package in packages:
        label_cuda = cuda_from_local_label(package.local)
        if cuda is None and label_cuda:
            cuda, cuda_source = label_cuda, f"{package.name} {package.version}+{package.local}"
    for package in packages:
        if cuda is None and package.name.startswith("nvidia-cuda-runtime-cu"):
            cuda, cuda_source = _major_minor(package.version), f"{package.name} {package.version}"
    if runtime.get("cudnn"):
        cudnn, cudnn_source = runtime["cudnn"], "torch.backends.cudnn.version()"
    for package in packages:
        if cudnn is None and package.name.startswith("nvidia-cudnn-cu"):
            cudnn, cudnn_source = _major_minor(package.version), f"{package.name} {package.version}"
    build = tensorflow_build(tensorflow.version) if tensorflow else None
    if build and cuda is None:
        cuda, cuda_source = build[0], f"tensorflow {tensorflow.version} (tested build configuration)"
    if build and cudnn is None:
        cudnn, cudnn_source = build[1], f"tensorflow {tensorflow.version} (tested build configuration)"
    return Frameworks(torch=torch.version if torch else None, tensorflow=tensorflow.version if tensorflow else None,
                      jax=jax.version if jax else None, cuda=cuda, cuda_source=cuda_source, cudnn=cudnn,
                      cudnn_source=cudnn_source, driver=driver)


def _major_minor(text: str) -> str | None:
    try:
        release = Version(text).release
    except InvalidVersion:
        return None
    return f"{release[0]}.{release[1]}" if len(release) >= 2 else None
