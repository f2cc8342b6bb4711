"""The AWS monitoring server: private, least-privilege, encrypted, and admitted to the nodes on the exporter ports only."""

from __future__ import annotations

import base64
import gzip
import json

from tests.conftest import cached_plan, of_type, one, refusal
from tests.yaml_reader import read_yaml

TRAIN = {"cloud": "aws", "region": "us-east-2", "zone": "use2-az2", "nodes": 2,
         "accelerator": {"instance_type": "p5.48xlarge"}, "market": "spot", "fabric": "efa"}
DEV = {"cloud": "aws", "region": "us-east-1", "zone": "use1-az4", "nodes": 1, "accelerator": {"instance_type": "g6e.xlarge"}}
ALERTS = {"slack_webhook_secret": "slackWebhook", "pagerduty_key_secret": "pagerdutyKey"}
SECRETS = {"gpufleet:slackWebhook": "https://hooks.slack.com/services/T0/B0/aws-slack-s3cr3t",
           "gpufleet:pagerdutyKey": "aws-pagerduty-s3cr3t", "gpufleet:grafanaAdminPassword": "aws-grafana-s3cr3t"}


def server_plan():
    return cached_plan({**TRAIN, "monitoring": {"alerts": ALERTS, "retention_days": 60}}, SECRETS)


def by_name(result, token: str) -> dict:
    return {r.name: r.inputs for r in of_type(result, token)}


def user_data(result) -> str:
    server = by_name(result, "aws:ec2/instance:Instance")["gpufleet-monitoring-server"]
    return gzip.decompress(base64.b64decode(server["userDataBase64"])).decode()


def test_training_cluster_gets_a_private_imdsv2_server_with_an_encrypted_data_disk():
    result = server_plan()
    server = one(result, "aws:ec2/instance:Instance").inputs
    assert server["associatePublicIpAddress"] is False and server["subnetId"] == "gpufleet-subnet-id"
    assert server["metadataOptions"]["httpTokens"] == "required" and server["rootBlockDevice"]["encrypted"] is True
    volume = one(result, "aws:ebs/volume:Volume").inputs
    assert volume["encrypted"] is True and volume["size"] == 50
    attach = one(result, "aws:ec2/volumeAttachment:VolumeAttachment").inputs
    assert attach["volumeId"] == "gpufleet-monitoring-data-id" and attach["instanceId"] == "gpufleet-monitoring-server-id"
    config = read_yaml(user_data(result))
    env = next(f["content"] for f in config["write_files"] if f["path"] == "/etc/gpufleet-monitoring/setup.env")
    assert "DATA_DEVICE=/dev/disk/by-id/nvme-Amazon_Elastic_Block_Store_gpufleet" in env
    assert "--storage.tsdb.retention.time=60d" in user_data(result)


def test_server_role_may_only_discover_read_its_parameters_and_open_sessions():
    result = server_plan()
    policy = json.loads(by_name(result, "aws:iam/rolePolicy:RolePolicy")["gpufleet-monitoring-role-access"]["policy"])
    actions = {action for statement in policy["Statement"] for action in statement["Action"]}
    assert actions == {"ec2:DescribeInstances", "ssm:GetParameter", "ssm:UpdateInstanceInformation",
                       "ssmmessages:CreateControlChannel", "ssmmessages:CreateDataChannel",
                       "ssmmessages:OpenControlChannel", "ssmmessages:OpenDataChannel"}
    own = next(s for s in policy["Statement"] if s["Sid"] == "OwnSecrets")
    assert len(own["Resource"]) == 3 and all("monitoring-secret" in arn for arn in own["Resource"])
    attached = [r.inputs["role"] for r in of_type(result, "aws:iam/rolePolicyAttachment:RolePolicyAttachment")]
    assert "gpufleet-monitoring-role" not in attached


def test_nodes_admit_the_server_on_the_exporter_ports_and_the_server_admits_nothing():
    result = server_plan()
    ingress = [r.inputs for r in of_type(result, "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
               if r.inputs.get("referencedSecurityGroupId") == "gpufleet-monitoring-sg-id"]
    assert sorted((rule["fromPort"], rule["toPort"], rule["securityGroupId"]) for rule in ingress) == [
        (9100, 9100, "gpufleet-sg-id"), (9400, 9400, "gpufleet-sg-id")]
    assert not [r for r in of_type(result, "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
                if r.inputs["securityGroupId"] == "gpufleet-monitoring-sg-id"]


def test_secrets_go_to_secure_string_parameters_and_nowhere_else():
    result = server_plan()
    parameters = by_name(result, "aws:ssm/parameter:Parameter")
    assert sorted(parameters) == ["gpufleet-monitoring-secret-grafana-admin",
                                  "gpufleet-monitoring-secret-pagerduty-key", "gpufleet-monitoring-secret-slack-webhook"]
    assert all(p["type"] == "SecureString" and p["value"] == "[secret]" for p in parameters.values())
    text = user_data(result) + json.dumps([r.inputs for r in result.resources]) + json.dumps(result.outputs, default=str)
    assert not [value for value in SECRETS.values() if value in text]
    assert "/gpufleet/test/gpufleet/monitoring/slack-webhook" in user_data(result)


def test_dev_cluster_has_no_server_but_exports_dashboards_and_rules():
    result = cached_plan(DEV)
    assert of_type(result, "aws:ec2/instance:Instance") == []
    assert set(result.outputs["grafana_dashboards"]) == {"gpufleet-overview.json", "gpufleet-node-jobs.json",
                                                          "gpufleet-jobs.json"}
    assert "GpuFatalXid" in result.outputs["prometheus_alert_rules"]


def test_a_named_secret_that_is_not_set_is_refused_before_anything_is_declared():
    message = refusal({**TRAIN, "monitoring": {"alerts": {"pagerduty_key_secret": "pdKey"}}})
    assert "monitoring.alerts.pagerduty_key_secret" in message and "pulumi config set --secret pdKey" in message


def test_an_inference_fleet_gets_no_jobs_dashboard():
    """Inference nodes run no `gpufleet-run` jobs and no job collector (Triton owns their GPUs): a jobs dashboard
    there would only ever be empty."""
    from tests.inference.helpers import spec_for
    result = cached_plan(spec_for("aws"))
    assert set(result.outputs["grafana_dashboards"]) == {"gpufleet-overview.json", "gpufleet-node-jobs.json"}
