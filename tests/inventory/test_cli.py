"""`gpufleet inventory` on bad or missing input: exit 2 with one message naming what to provide, nothing written;
and the same stack and outputs always give the same bytes."""

from __future__ import annotations

import json

import pytest

from gpufleet.plan.cli import main
from tests.inventory.ansible_tools import ROOT


@pytest.fixture(autouse=True)
def in_project(monkeypatch):
    monkeypatch.chdir(ROOT)


def test_aws_without_the_deployed_outputs_names_the_output_and_how_to_get_it(tmp_path, capsys):
    assert main(["inventory", "aws-dev", "--out", str(tmp_path / "out")]) == 2
    error = capsys.readouterr().err
    assert "`outputs.ssm_transfer_bucket`" in error and "pulumi stack output --json -s aws-dev" in error
    assert not (tmp_path / "out").exists()


def test_gcp_without_a_project_says_how_to_set_it(tmp_path, capsys):
    assert main(["inventory", "gcp-dev", "--out", str(tmp_path / "out")]) == 2
    assert "pulumi config set gcp:project <id> -s gcp-dev" in capsys.readouterr().err


def test_outputs_that_are_not_a_json_object_are_refused(tmp_path, capsys):
    outputs = tmp_path / "outputs.json"
    outputs.write_text("[1, 2]")
    assert main(["inventory", "aws-dev", "--outputs", str(outputs), "--out", str(tmp_path / "out")]) == 2
    assert "expected a JSON object" in capsys.readouterr().err


def test_an_invalid_stack_is_refused_as_plan_refuses_it(tmp_path, capsys):
    stack = tmp_path / "Pulumi.bad.yaml"
    stack.write_text("config:\n  gpufleet:cluster:\n    cloud: aws\n    region: us-east-1\n    zone: use1-az4\n"
                     "    nodes: 0\n    accelerator: {instance_type: g6e.xlarge}\n")
    assert main(["inventory", str(stack), "--out", str(tmp_path / "out")]) == 2
    assert "nodes" in capsys.readouterr().err


def test_the_same_stack_and_outputs_give_the_same_files(tmp_path):
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps({"ssm_transfer_bucket": "gpufleet-ssm-x", "fleet_name": "gpufleet-nodes-1"}))
    texts = []
    for run in ("one", "two"):
        assert main(["inventory", "aws-dev", "--outputs", str(outputs), "--out", str(tmp_path / run)]) == 0
        texts.append([(tmp_path / run / name).read_text() for name in ("aws-dev.aws_ec2.yml", "ansible.cfg")])
    assert texts[0] == texts[1]


def test_an_ansible_cfg_of_the_users_own_is_kept(tmp_path):
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps({"ssm_transfer_bucket": "gpufleet-ssm-x"}))
    out = tmp_path / "out"
    out.mkdir()
    (out / "ansible.cfg").write_text("[defaults]\nforks = 50\n")
    assert main(["inventory", "aws-dev", "--outputs", str(outputs), "--out", str(out)]) == 0
    assert (out / "ansible.cfg").read_text() == "[defaults]\nforks = 50\n"
