"""A corpus of insecure plans: each mutates a real plan document so that exactly one policy must catch it."""

from __future__ import annotations

from collections.abc import Callable

from ..plan.plan_docs import NODE_CONFIG_IN_S3, plan_doc


def _first(doc: dict, token: str) -> dict:
    return next(r for r in doc["resources"] if r["type"] == token)["inputs"]


def _all(doc: dict, token: str) -> list[dict]:
    return [r for r in doc["resources"] if r["type"] == token]


LT = "aws:ec2/launchTemplate:LaunchTemplate"
ASG = "aws:autoscaling/group:Group"
VMSS = "azure-native:compute:VirtualMachineScaleSet"
TEMPLATE = "gcp:compute/instanceTemplate:InstanceTemplate"
FIREWALL = "gcp:compute/firewall:Firewall"


def _imds_v1(d): _first(d, LT)["metadataOptions"]["httpTokens"] = "optional"
def _hop_limit(d): _first(d, LT)["metadataOptions"]["httpPutResponseHopLimit"] = 2
def _unencrypted(d): _first(d, LT)["blockDeviceMappings"][0]["ebs"]["encrypted"] = "false"
def _public_ip(d): _first(d, LT)["networkInterfaces"][0]["associatePublicIpAddress"] = "true"


def _bucket_without_block(d):
    d["resources"] = [r for r in d["resources"]
                      if r["type"] != "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock"]


def _bucket_block_half_off(d):
    _first(d, "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock")["restrictPublicBuckets"] = False


def _open_ssh_aws(d):
    rule = dict(_all(d, "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")[0])
    d["resources"].append({**rule, "urn": rule["urn"] + "-ssh", "name": rule["name"] + "-ssh", "inputs": {
        "securityGroupId": rule["inputs"]["securityGroupId"], "cidrIpv4": "0.0.0.0/0", "ipProtocol": "tcp",
        "fromPort": 22, "toPort": 22}})


def _open_exporter_v6(d):
    rule = dict(_all(d, "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")[0])
    d["resources"].append({**rule, "urn": rule["urn"] + "-dcgm", "name": rule["name"] + "-dcgm", "inputs": {
        "securityGroupId": rule["inputs"]["securityGroupId"], "cidrIpv6": "::/0", "ipProtocol": "tcp",
        "fromPort": 9400, "toPort": 9400}})


def _no_self_egress(d):
    d["resources"] = [r for r in d["resources"] if not r["name"].endswith("-sg-self-out")]


def _no_placement_group(d): _first(d, ASG).pop("placementGroup")
def _capacity_block(d): _first(d, LT)["instanceMarketOptions"] = {"marketType": "capacity-block"}


def _lt_pg_with_odcr(d):
    lt = _first(d, LT)
    lt["placement"] = {"groupName": "gpufleet-pg"}
    lt["capacityReservationSpecification"] = {"capacityReservationTarget": {"capacityReservationId": "cr-123"}}


def _ib_multi_pg(d): _first(d, VMSS)["singlePlacementGroup"] = False
def _ib_too_big(d): _first(d, VMSS)["sku"]["capacity"] = 120
def _ib_vnet(d): _first(d, "azure-native:network:VirtualNetwork")["addressSpace"]["addressPrefixes"] = ["172.16.0.0/20"]


def _password(d):
    _first(d, VMSS)["virtualMachineProfile"]["osProfile"]["linuxConfiguration"]["disablePasswordAuthentication"] = False


def _nsg_open(d):
    _first(d, "azure-native:network:NetworkSecurityGroup")["securityRules"][0]["sourceAddressPrefixes"] = ["*"]


def _migrate(d): _first(d, TEMPLATE)["scheduling"]["onHostMaintenance"] = "MIGRATE"


def _spot_restart(d):
    scheduling = _first(d, TEMPLATE)["scheduling"]
    scheduling["automaticRestart"] = True


def _compact_restart(d):
    # gcp-train's A3 Mega group takes a workload policy; make it the compact placement policy older plans used.
    policy = _first(d, "gcp:compute/resourcePolicy:ResourcePolicy")
    policy.pop("workloadPolicy", None)
    policy["groupPlacementPolicy"] = {"collocation": "COLLOCATED", "maxDistance": 2}
    _first(d, TEMPLATE)["resourcePolicies"] = "projects/p/regions/us-central1/resourcePolicies/gpufleet-pg"
    scheduling = _first(d, TEMPLATE)["scheduling"]
    scheduling.update({"automaticRestart": True, "provisioningModel": "STANDARD", "preemptible": False})
    scheduling.pop("instanceTerminationAction", None)


def _roce_firewall(d):
    # gcp-train runs NCCL over TCP now (no RoCE VPC); give the network that carries its firewall rules a RoCE profile.
    net = next(r for r in d["resources"] if r["name"] == "gpufleet-net")
    net["inputs"]["networkProfile"] = "projects/p/global/networkProfiles/us-central1-a-vpc-roce"


def _gcp_open_ssh(d):
    fw = next(r for r in _all(d, FIREWALL) if r["name"].endswith("-fw-ssh"))
    fw["inputs"]["sourceRanges"] = ["0.0.0.0/0"]


def _not_shielded(d): _first(d, TEMPLATE).pop("shieldedInstanceConfig")


def _project_instance_admin(d):
    _first(d, "gcp:projects/iAMMember:IAMMember").update(role="roles/compute.instanceAdmin.v1", condition=None)


def _unscoped_terminate(d):
    """A role policy that terminates any instance and launches from any template (what a hand-written power
    program's policy often grants)."""
    import json

    _first(d, "aws:iam/rolePolicy:RolePolicy")["policy"] = json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": ["ec2:RunInstances", "ec2:TerminateInstances"], "Resource": "*"}]})


def _scale_set_writer_on_the_group(d):
    role = _first(d, "azure-native:authorization:RoleDefinition")  # the monitoring server's discovery role
    role["permissions"][0]["actions"].append("Microsoft.Compute/virtualMachineScaleSets/write")


def _on_demand_fleet(d):
    mixed = _first(d, ASG)["mixedInstancesPolicy"]
    mixed["instancesDistribution"]["onDemandPercentageAboveBaseCapacity"] = 100
    _first(d, ASG).update({"desiredCapacity": 4, "minSize": 4, "maxSize": 4})


def _a4_on_demand(d):
    _first(d, TEMPLATE)["machineType"] = "a4-highgpu-8g"  # gcp-dev's template is STANDARD (on demand)


def _dev_bigger(d):
    _first(d, LT)["instanceType"] = "p5.48xlarge"


# (policy, stack, mutation): the mutated plan must violate `policy` (and the unmutated one must not).
CORPUS: list[tuple[str, str, Callable[[dict], None]]] = [
    ("aws-imdsv2-hop-limit-1", "aws-train", _imds_v1),
    ("aws-imdsv2-hop-limit-1", "aws-dev", _hop_limit),
    ("aws-ebs-encrypted", "aws-train", _unencrypted),
    ("aws-gpu-no-public-ip", "aws-dev", _public_ip),
    ("aws-no-open-admin-or-exporter-ingress", "aws-train", _open_ssh_aws),
    ("aws-no-open-admin-or-exporter-ingress", "aws-dev", _open_exporter_v6),
    ("aws-efa-sg-self-referencing", "aws-train", _no_self_egress),
    ("aws-efa-placement", "aws-train", _no_placement_group),
    ("aws-efa-placement", "aws-train", _capacity_block),
    ("aws-no-placement-group-with-reservation", "aws-train", _lt_pg_with_odcr),
    ("aws-s3-bucket-private", "aws-train", _bucket_without_block),
    ("aws-s3-bucket-private", "aws-train", _bucket_block_half_off),
    ("aws-instance-writers-scoped", "aws-train", _unscoped_terminate),
    ("azure-ib-single-placement-group", "azure-train", _ib_multi_pg),
    ("azure-ib-single-placement-group", "azure-train", _ib_too_big),
    ("azure-ib-no-172-16-overlap", "azure-train", _ib_vnet),
    ("azure-no-password-auth", "azure-dev", _password),
    ("azure-no-open-admin-or-exporter-ingress", "azure-train", _nsg_open),
    ("gcp-gpu-terminate-on-maintenance", "gcp-dev", _migrate),
    ("gcp-spot-no-automatic-restart", "gcp-train", _spot_restart),
    ("gcp-compact-no-automatic-restart", "gcp-train", _compact_restart),
    ("gcp-no-firewall-on-roce", "gcp-train", _roce_firewall),
    ("gcp-no-open-ssh", "gcp-train", _gcp_open_ssh),
    ("gcp-gpu-shielded-vm", "gcp-dev", _not_shielded),
    ("gcp-instance-writers-scoped", "gcp-train", _project_instance_admin),
    ("gcp-reservation-only-machine-not-standard", "gcp-dev", _a4_on_demand),
    ("azure-scale-set-writers-scoped", "azure-train", _scale_set_writer_on_the_group),
    ("cost-on-demand-multi-node", "aws-train", _on_demand_fleet),
    ("cost-dev-stack-without-spot", "aws-dev", _dev_bigger),
]


# Mutations that need the node config bucket start from the plan that declares it.
OVERRIDES = {_bucket_without_block: NODE_CONFIG_IN_S3, _bucket_block_half_off: NODE_CONFIG_IN_S3}


def mutated(stack: str, mutation: Callable[[dict], None]) -> dict:
    document = plan_doc(stack, *OVERRIDES.get(mutation, ()))
    mutation(document)
    return document
