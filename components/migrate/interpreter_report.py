"""Run INSIDE the interpreter being captured (locally or on a node, fed on stdin): prints one JSON report.

Standard library only, because it runs in the user's environment, whose packages are what is being measured. It
reads installed distributions with importlib.metadata (what `pip list --format=freeze` reports, without conda's
`@ file://` rewriting), each one's PEP 610 direct_url.json (editable and local-file installs), and the
environment-marker variables, so that markers are evaluated with the node's values rather than the caller's.
"""

import json
import os
import platform
import sys
from importlib import metadata


def direct_url(dist):
    try:
        text = dist.read_text("direct_url.json")
        return json.loads(text) if text else None
    except (OSError, ValueError):
        return None


def packages():
    seen = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if not name:
            continue
        key = name.lower().replace("_", "-").replace(".", "-")
        if key not in seen:  # the first on sys.path wins, as for pip
            seen[key] = {"name": name, "version": dist.version, "direct_url": direct_url(dist)}
    return sorted(seen.values(), key=lambda p: p["name"].lower())


def frameworks():
    """CUDA and cuDNN as the installed PyTorch reports them, when it is installed and imports."""
    found = {}
    try:
        metadata.distribution("torch")
    except metadata.PackageNotFoundError:
        return found
    try:
        import torch  # noqa: F401

        found["cuda"] = torch.version.cuda
        found["cudnn"] = cudnn_text(torch.backends.cudnn.version())
    except Exception:  # a broken or CPU-only install: the package versions still tell the story
        pass
    return found


def cudnn_text(number):
    """cuDNN's version number as major.minor: 8302 -> "8.3" (cuDNN 8), 90100 -> "9.1" (cuDNN 9 and later)."""
    if not number:
        return None
    if number >= 10000:
        return f"{number // 10000}.{number // 100 % 100}"
    return f"{number // 1000}.{number // 100 % 10}"


def markers():
    return {
        "implementation_name": sys.implementation.name,
        "implementation_version": platform.python_version(),
        "os_name": os.name,
        "platform_machine": platform.machine(),
        "platform_python_implementation": platform.python_implementation(),
        "platform_release": platform.release(),
        "platform_system": platform.system(),
        "platform_version": platform.version(),
        "python_full_version": platform.python_version(),
        "python_version": ".".join(platform.python_version_tuple()[:2]),
        "sys_platform": sys.platform,
    }


print(json.dumps({
    "executable": sys.executable,
    "version": platform.python_version(),
    "implementation": sys.implementation.name,
    "platform": sys.platform,
    "markers": markers(),
    "packages": packages(),
    "frameworks": frameworks(),
}))
