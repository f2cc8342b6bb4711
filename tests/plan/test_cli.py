"""`gpufleet plan`: exit codes, --set, --json, --out, and that every shipped stack plans."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from functools import cache

import pytest

from gpufleet.plan.cli import main
from gpufleet.plan.stackfile import stack_names


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@cache
def planned(*argv: str) -> tuple[int, str, str]:
    """`run` for invocations that only print: one plan per distinct command line in a test process (plans are
    byte-identical between runs, which other tests check)."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_json_plan_lists_the_aws_train_cluster(capsys):
    code, out, _ = planned("plan", "aws-train", "--json")
    assert code == 0
    document = json.loads(out)
    assert set(document) == {"stack", "resources", "outputs"} and document["stack"] == "aws-train"
    types = {r["type"] for r in document["resources"]}
    for token in ("aws:ec2/vpc:Vpc", "aws:ec2/subnet:Subnet", "aws:ec2/natGateway:NatGateway",
                  "aws:ec2/securityGroup:SecurityGroup", "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule",
                  "aws:ec2/placementGroup:PlacementGroup", "aws:ec2/launchTemplate:LaunchTemplate",
                  "aws:iam/instanceProfile:InstanceProfile", "aws:autoscaling/group:Group"):
        assert token in types, token
    assert all(set(r) == {"urn", "type", "name", "parent", "inputs"} for r in document["resources"])


def test_set_overrides_a_path_and_keeps_the_resource_count(capsys):
    counts = []
    for nodes in ("8", "1024"):
        code, out, _ = run(capsys, "plan", "aws-train", "--json", "--set", f"nodes={nodes}")
        assert code == 0
        document = json.loads(out)
        counts.append(len(document["resources"]))
        group = next(r for r in document["resources"] if r["type"] == "aws:autoscaling/group:Group")
        assert group["inputs"]["desiredCapacity"] == int(nodes)
    assert counts[0] == counts[1]


def test_bad_override_exits_2_with_one_message(capsys):
    code, out, err = run(capsys, "plan", "aws-train", "--set", "nodes=0")
    assert code == 2 and out == ""
    assert "`nodes`: got 0" in err and "Traceback" not in err


def test_unknown_stack_exits_2(capsys):
    code, _, err = run(capsys, "plan", "nope")
    assert code == 2 and "`stack`: got 'nope'; expected one of" in err


@pytest.mark.parametrize("command", [["plan", "nope"], ["inventory", "nope"], ["bench", "nope", "--hosts", "a,b"]])
def test_a_stack_problem_is_reported_under_the_command_that_read_it(capsys, command):
    code, _, err = run(capsys, *command)
    assert code == 2 and err.startswith(f"error: invalid `gpufleet {command[0]}` (1 problem(s)):\n")
    assert "`stack`: got 'nope'; expected one of" in err


def test_malformed_set_exits_2(capsys):
    code, _, err = run(capsys, "plan", "aws-train", "--set", "nodes")
    assert code == 2 and "expected PATH=VALUE" in err


@pytest.mark.parametrize("stack, holder", [("aws-dev", "gpufleet-lt"), ("azure-dev", "gpufleet-nodes"),
                                           ("gcp-dev", "gpufleet-template")])
def test_out_writes_decoded_user_data(stack, holder, tmp_path, capsys):
    code, _, _ = run(capsys, "plan", stack, "--out", str(tmp_path))
    assert code == 0
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == [f"{holder}.user-data.yaml"]
    assert (tmp_path / files[0]).read_text().startswith("#cloud-config")


def test_table_view_says_ids_are_placeholders():
    code, out, _ = planned("plan", "aws-train")
    assert code == 0
    assert "placeholders" in out and "gpufleet-nodes" in out and "estimated_usd_per_hour" in out
    assert "Cost (catalog prices, USD)" in out and "*spot" in out
    assert "catalog prices for aws (p5.48xlarge in us-east-2 zone use2-az2) from" in out


@pytest.mark.parametrize("stack", stack_names())
def test_every_shipped_stack_plans(stack):
    code, out, err = planned("plan", stack, "--json")
    assert code == 0, err
    document = json.loads(out)
    assert document["resources"]
    cost = document["outputs"]["cost"]
    outputs = document["outputs"]
    if "node_groups" in outputs:  # one row per group at its market, and the total (gpufleet.groups.cost)
        assert [row["group"] for row in cost] == [*sorted(outputs["node_groups"]), None]
        assert cost[-1]["usd_per_hour"] == pytest.approx(sum(row["usd_per_hour"] for row in cost[:-1]), abs=0.02)
        cost = outputs["node_groups"][sorted(outputs["node_groups"])[0]]["cost"]
    if "idle_usd_per_hour" in cost[0]:  # an elastic group: its market's row (per node-hour, idle, full), the total
        assert [row["label"] for row in cost][-1] == "total" and cost[0]["chosen"]
        assert cost[0]["full_usd_per_hour"] == pytest.approx(cost[0]["usd_per_node_hour"] * cost[0]["nodes"])
        assert cost[0]["note"].startswith("idle: $")
    else:
        assert [row["market"] for row in cost] == ["on-demand", "spot", "mixed", "reserved-1y", "reserved-3y"]
        assert sum(row["chosen"] for row in cost) == 1
    assert f"catalog prices for {outputs['cloud']} ({outputs['instance_type']} in " in err
    assert "days old" in err or "from an undated snapshot (age unknown)" in err


def test_long_outputs_are_shown_by_size_and_json_keeps_them_whole():
    """A PR preview stays readable: dashboards and alert rules are named with their size in the table, not printed."""
    code, out, _ = planned("plan", "aws-train")
    assert code == 0
    assert "gpufleet-overview.json:" in out and "bytes" in out and "--json shows" in out
    assert '"panels"' not in out and "GpuFatalXid" not in out
    code, out, _ = planned("plan", "aws-train", "--json")
    outputs = json.loads(out)["outputs"]
    assert '"panels"' in outputs["grafana_dashboards"]["gpufleet-overview.json"]
    assert "GpuFatalXid" in outputs["prometheus_alert_rules"]


@pytest.mark.parametrize("stack, limit", [("aws-train", "16,384 gzip-compressed bytes"),
                                          ("azure-train", "65,535 gzip-compressed bytes"),
                                          ("gcp-train", "262,144 raw bytes")])
def test_the_plan_shows_how_much_of_the_user_data_limit_each_node_group_takes(stack, limit):
    from gpufleet.cloud_init import measured_size
    from gpufleet.plan.userdata import node_user_data
    code, out, _ = planned("plan", stack, "--json")
    document = json.loads(out)
    texts = node_user_data([type("R", (), r) for r in document["resources"]])
    assert texts, "no node group with user data"
    code, out, _ = planned("plan", stack)
    assert code == 0
    cloud = document["outputs"]["cloud"]
    for name, text in texts.items():
        assert f"user data of {name}: {measured_size(text, cloud):,} of {limit}" in out, (name, out[-800:])


def test_the_aws_monitoring_server_user_data_is_measured_too():
    """The server's `userDataBase64` counts against the same 16 KB as the nodes' template."""
    code, out, _ = planned("plan", "aws-train", "--set", "monitoring.server=true")
    assert code == 0
    assert "user data of gpufleet-monitoring-server: " in out and "of 16,384 gzip-compressed bytes" in out


def test_a_node_config_in_s3_is_named_as_such_and_written_by_out(tmp_path):
    from tests.plan.plan_docs import NODE_CONFIG_IN_S3
    sets = [arg for item in NODE_CONFIG_IN_S3 for arg in ("--set", item)]
    code, out, _ = planned("plan", "aws-train", *sets, "--out", str(tmp_path))
    assert code == 0
    assert "user data of gpufleet-node-config-object: " in out and "stored in S3 and fetched at boot" in out
    assert (tmp_path / "gpufleet-node-config-object.user-data.yaml").read_text().startswith("#cloud-config\n")
    assert (tmp_path / "gpufleet-lt.user-data.yaml").read_text().startswith("#cloud-boothook\n")
