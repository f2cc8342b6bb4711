"""gcp-burst's elastic Slurm cluster over VMs (marker `vm`), the test playing Google Cloud (tests/vm/elastic_boots.py):
from zero nodes, two one-node jobs make the real power programs create two instances, which the stand-in boots as
VMs from their template's rendered node user data. Their resume meets ZONE_RESOURCE_POOL_EXHAUSTED for both types
in the group's zone and for the first type in the first fallback zone, and is served by the fallback type there,
within the same resume. Each node joins after its (stand-in) acceptance
check and runs its job; after the idle time the idle node is suspended and its instance deleted while the busy node
is not; once the long job ends that node goes too, and sinfo shows the first node powered down."""

from __future__ import annotations

import os

import pytest

from .conftest import require_vm_tools
from .elastic_boots import EXHAUSTED_ZONE, FALLBACK_TYPE, ElasticBoots, boot_elastic_cluster
from .image import SERVICE_PACKAGES, build_image

pytestmark = [pytest.mark.vm, pytest.mark.timeout(3600)]

# A hang guard for the whole scenario, not a speed goal (three TCG guests share the host's cores).
TIMEOUT = float(os.environ.get("GPUFLEET_VM_ELASTIC_TIMEOUT", "2700"))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> ElasticBoots:
    require_vm_tools()
    folder = tmp_path_factory.mktemp("elastic")
    with (folder / "image-build.log").open("w") as log:
        image = build_image(log, SERVICE_PACKAGES)
    result = boot_elastic_cluster(image, folder, TIMEOUT)
    print(f"elastic cluster scenario: {round(result.seconds)} s (TCG, a controller and the nodes it resumed)")
    return result


def context(result: ElasticBoots) -> str:
    return (f"{result.controller}\nevents={result.events}\ncalls={result.calls}\n"
            + "\n".join(f"--- {name}\n{text}" for name, text in result.consoles.items()))


def states(report_value: str) -> dict[str, str]:
    return dict(line.split()[:2] for line in report_value.split("|") if line.strip())


def node_names(result: ElasticBoots) -> list[str]:
    return [f"{result.node_prefix}{index}" for index in range(1, 5)]


def events(result: ElasticBoots, kind: str) -> dict[str, float]:
    return {name: when for when, what, name, _ in result.events if what == kind}


def test_from_zero_nodes_a_job_resumes_a_node_that_joins_and_the_job_completes(cluster):
    report = cluster.controller
    assert report.get("slurmctld") == "active", context(cluster)
    # Every node of the group starts powered down (idle~): nothing runs, nothing is paid for.
    assert states(report["sinfo_start"]) == {name: "idle~" for name in node_names(cluster)}, report["sinfo_start"]
    short_state, short_nodes = report["short_job"].split()
    assert short_state == "JobState=COMPLETED", context(cluster)
    short_node, long_node = report["short_node"], report["long_node"]
    assert short_nodes == f"NodeList={short_node}" and {short_node, long_node} <= set(node_names(cluster))
    assert short_node != long_node, report
    # The stand-in booted a VM for exactly the two instances the resume created, named as the Slurm nodes.
    assert set(events(cluster, "boot")) == {short_node, long_node}, context(cluster)
    assert states(report["sinfo_running"])[long_node] == "alloc", report["sinfo_running"]
    # The nodes read the cluster's munge key from Secret Manager with their own token.
    assert len(cluster.secret_reads) >= 3, cluster.secret_reads  # the controller's and each node's


def test_a_capacity_error_on_the_first_type_and_zone_is_served_by_the_fallback_type_in_the_same_resume(cluster):
    zone, fallback = cluster.zones[0], cluster.zones[1]
    assert zone == EXHAUSTED_ZONE  # the group's zone; then its fallback zones, in order
    first, exhausted = "g2-standard-8", "ZONE_RESOURCE_POOL_EXHAUSTED"
    tries: dict[str, list[tuple[str, str, str]]] = {}
    for where, machine_type, name, verdict in cluster.verdicts:
        tries.setdefault(name, []).append((where, machine_type, verdict))
    created = {name for _, what, name, _ in cluster.events if what == "create"}
    assert created and set(tries) == created, (tries, created)
    # Each node's one resume: every type in the group's zone, then in the fallback zone, the fallback type last.
    for name, asked in tries.items():
        assert asked == [(zone, first, exhausted), (zone, FALLBACK_TYPE, exhausted), (fallback, first, exhausted),
                         (fallback, FALLBACK_TYPE, "created")], (name, asked)
    assert {where for _, what, _, where in cluster.events if what == "create"} == {fallback}, cluster.events
    # The stand-in booted each node from its fallback type's template (that type's rendered user data).
    assert cluster.boot_types == dict.fromkeys(created, FALLBACK_TYPE), cluster.boot_types
    assert set(cluster.bulk_errors[zone]) == {exhausted}, cluster.bulk_errors
    assert set(cluster.bulk_errors[fallback]) == {exhausted, "DONE"}, cluster.bulk_errors
    log = cluster.controller["power_log"]
    for refused in (f"{first} {zone}", f"{FALLBACK_TYPE} {zone}", f"{first} {fallback}"):
        assert f"{refused} capacity: {exhausted}" in log, log


def test_after_the_idle_time_the_idle_node_is_deleted_and_the_busy_one_is_not(cluster):
    report = cluster.controller
    short_node, long_node = report["short_node"], report["long_node"]
    deleted = events(cluster, "delete")
    assert short_node in deleted, context(cluster)
    # When the idle node was suspended and deleted, the long job still ran on its node, which was kept, and still
    # was 30 s later; its instance was deleted only after the job was released and ended.
    assert report["long_then"].startswith("JobState=RUNNING State=ALLOCATED"), report["long_then"]
    assert report["long_later"].startswith("JobState=RUNNING State=ALLOCATED"), report["long_later"]
    released = float(report["released"])
    assert deleted[short_node] < released, (deleted, released)
    assert long_node in deleted and deleted[long_node] > released, (deleted, released)
    assert report["long_job"].split()[0] == "JobState=COMPLETED", report["long_job"]
    assert f"released {short_node}=" in report["power_log"] and f"released {long_node}=" in report["power_log"]
    deletes = [path for method, path in cluster.calls if method == "DELETE"]
    assert sorted(path.rsplit("/", 1)[1] for path in deletes) == sorted([short_node, long_node]), deletes
    assert all(f"/zones/{cluster.zones[1]}/" in path for path in deletes), deletes


def test_sinfo_shows_the_released_node_powered_down(cluster):
    report = cluster.controller
    short_node = report["short_node"]
    assert "State=IDLE+CLOUD+POWERED_DOWN" in report["short_down"], report["short_down"]
    end = states(report["sinfo_end"])
    assert end[short_node] == "idle~", report["sinfo_end"]
    assert end[report["long_node"]] in ("idle%", "idle~"), report["sinfo_end"]  # powering down: SuspendTimeout
