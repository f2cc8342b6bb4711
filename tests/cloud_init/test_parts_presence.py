"""Every part of the node stack is in the rendered user data exactly when the spec (and its catalog row) asks for it.

The expectations are written from the spec's point of view, independently of `cloud_init/parts.py`: each row names
the node paths of one part and the spec condition that asks for it. Every rendered shape (the shared cases, the
shipped stacks and a minimal node with every option off) is checked against every row, in both directions, and so
are the units enabled at install.
"""

from __future__ import annotations

import pytest

from gpufleet.boot import user_data_for

from .conftest import aws_selection, env_values, written_files

LIB = "/usr/local/lib/gpufleet/"
UNITS = "/etc/systemd/system/"


def _always(s) -> bool:
    return True


# (part, node paths, condition on the Selection). Issue 3's parts 1-9 and issue 2's base profile.
PARTS = [
    ("installer, per-boot oneshot and target", ["/usr/local/sbin/gpufleet-install", "/usr/local/sbin/gpufleet-boot",
                                                UNITS + "gpufleet-boot.service", UNITS + "gpufleet-node.target"],
     _always),
    ("driver verify/install", [LIB + "install.d/20-driver"], lambda s: not s.instance.is_vgpu_slice),
    ("driver wait", [LIB + "boot.d/10-driver"], _always),
    ("vGPU guest driver, fetched, verified and accepted",
     [LIB + "install.d/20-vgpu-driver", LIB + "vgpu-fetch", LIB + "boot.d/15-vgpu-check"],
     lambda s: s.instance.is_vgpu_slice),
    ("NVIDIA packages held from unattended-upgrades", ["/etc/apt/apt.conf.d/51gpufleet-nvidia-hold"], _always),
    ("nouveau blacklisted", ["/etc/modprobe.d/gpufleet-blacklist-nouveau.conf"],
     lambda s: s.spec.image.kind != "driver-ready"),
    ("Fabric Manager", [LIB + "install.d/30-fabricmanager", LIB + "boot.d/20-fabricmanager"],
     lambda s: s.instance.nvswitch),
    ("persistenced", [LIB + "install.d/40-persistenced", UNITS + "nvidia-persistenced.service.d/gpufleet.conf"],
     _always),
    ("container toolkit and CDI", [LIB + "install.d/50-container-toolkit", LIB + "boot.d/40-cdi"], _always),
    ("job slice and gpufleet-run",
     [UNITS + "gpufleet-jobs.slice", "/usr/local/bin/gpufleet-run", LIB + "boot.d/50-slice"],
     lambda s: s.spec.node.isolation.enabled),
    ("MPS", [UNITS + "gpufleet-mps.service", LIB + "mps-thread-limit"], lambda s: s.spec.node.mps.enabled),
    ("MIG", [LIB + "boot.d/30-mig"], lambda s: bool(s.spec.node.mig.profiles)),
    ("NCCL config and job environment",
     ["/etc/nccl.conf", "/etc/gpufleet/job.env", "/etc/profile.d/gpufleet-job-env.sh"], _always),
    ("EFA installer and aws-ofi-nccl", [LIB + "install.d/60-efa"], lambda s: s.fabric == "efa"),
    ("InfiniBand userspace and nvidia-peermem", [LIB + "install.d/61-infiniband",
                                                 "/etc/modules-load.d/gpufleet-nvidia-peermem.conf"],
     lambda s: s.fabric == "infiniband"),
    ("GCP GPUDirect plugin", [LIB + "install.d/62-gcp-gpudirect"], lambda s: s.fabric == "roce"),
    ("DCGM host engine", [LIB + "install.d/70-dcgm"],
     lambda s: s.spec.node.exporters.dcgm or s.spec.node.health.dcgm_diag),
    ("dcgm-exporter", [UNITS + "gpufleet-dcgm-exporter.service", LIB + "dcgm-exporter",
                       "/etc/gpufleet/dcgm-counters.csv"], lambda s: s.spec.node.exporters.dcgm),
    ("node_exporter", [LIB + "install.d/71-node-exporter", UNITS + "gpufleet-node-exporter.service"],
     lambda s: s.spec.node.exporters.node),
    ("per-job metrics of the job slice (textfile collector and its timer), on training nodes: Triton is the only GPU "
     "consumer of an inference node and reports its own metrics",
     [LIB + "job-metrics", UNITS + "gpufleet-job-metrics.service", UNITS + "gpufleet-job-metrics.timer"],
     lambda s: s.spec.node.exporters.node and s.spec.node.isolation.enabled and s.spec.inference is None),
    ("health endpoint for the cloud's repair probes",
     ["/usr/local/sbin/gpufleet-health-endpoint", UNITS + "gpufleet-health-endpoint.service"],
     lambda s: s.spec.cloud in ("gcp", "azure")),
    ("signed Auto Scaling calls without the AWS CLI", ["/usr/local/sbin/gpufleet-aws"],
     lambda s: s.spec.cloud == "aws" and s.spec.image.kind != "driver-ready"),
    ("watcher and drain hook (every node)", ["/usr/local/sbin/gpufleet-watcher", UNITS + "gpufleet-watcher.service",
                                     "/etc/gpufleet/drain-hook", UNITS + "gpufleet-shutdown-drain.service"], _always),
    ("speed measured against the type's figures (node.health.performance)", [LIB + "perf-check"],
     lambda s: s.spec.node.health.performance.enabled),
    ("acceptance check and reporting", ["/usr/local/sbin/gpufleet-health", "/usr/local/sbin/gpufleet-report-health",
                                        UNITS + "gpufleet-health.service"], _always),
]
ENABLED_UNITS = [("gpufleet-boot.service", _always), ("gpufleet-health.service", _always),
                 ("gpufleet-node.target", _always), ("gpufleet-mps.service", lambda s: s.spec.node.mps.enabled),
                 ("gpufleet-dcgm-exporter.service", lambda s: s.spec.node.exporters.dcgm),
                 ("gpufleet-node-exporter.service", lambda s: s.spec.node.exporters.node),
                 ("gpufleet-watcher.service", _always), ("gpufleet-shutdown-drain.service", _always),
                 ("gpufleet-job-metrics.timer",
                  lambda s: s.spec.node.exporters.node and s.spec.node.isolation.enabled and s.spec.inference is None),
                 ("gpufleet-job-metrics.service", lambda s: False)]  # started by its timer, never enabled
MINIMAL_NODE = {"isolation": {"enabled": False}, "exporters": {"dcgm": False, "node": False},
                "container_runtime": "none"}


@pytest.fixture(scope="module")
def shapes(rendered) -> dict:
    """name -> (selection, written files): every shared case plus a minimal node with every option off."""
    out = {name: (selection, written_files(text)) for name, (selection, text) in rendered.items()}
    minimal = aws_selection(node=MINIMAL_NODE)
    out["aws-p5-minimal"] = (minimal, written_files(user_data_for(minimal, "gpufleet-test")))
    measured = aws_selection(node={"health": {"performance": {"enabled": True}}})
    out["aws-p5-performance"] = (measured, written_files(user_data_for(measured, "gpufleet-test")))
    return out


@pytest.mark.parametrize("part, paths, wanted", PARTS, ids=[p[0] for p in PARTS])
def test_part_is_present_exactly_when_the_spec_asks_for_it(shapes, part, paths, wanted):
    wrong = []
    for name, (selection, files) in sorted(shapes.items()):
        present = [p for p in paths if p in files]
        expected = paths if wanted(selection) else []
        if present != expected:
            wrong.append(f"{name}: has {present}, expected {expected}")
    assert wrong == []


def test_each_optional_part_is_both_present_and_absent_somewhere(shapes):
    """Guards the case list itself: every conditional row is seen in both states."""
    one_sided = [part for part, _, wanted in PARTS if wanted is not _always
                 and len({bool(wanted(selection)) for selection, _ in shapes.values()}) == 1]
    assert one_sided == []


@pytest.mark.parametrize("unit, wanted", ENABLED_UNITS, ids=[u[0] for u in ENABLED_UNITS])
def test_unit_is_enabled_exactly_when_written(shapes, unit, wanted):
    wrong = []
    for name, (selection, files) in sorted(shapes.items()):
        enabled = unit in env_values(files["/etc/gpufleet/node.env"]["content"])["GPUFLEET_UNITS"].split()
        if enabled != bool(wanted(selection)):
            wrong.append(f"{name}: enabled={enabled}")
    assert wrong == []
