"""Every rule, by name. The CrossGuard pack and the offline checker both read this list."""

from __future__ import annotations

from . import aws, aws_iam, azure, cost, gcp
from .model import ADVISORY, MANDATORY, Rule

RULES: tuple[Rule, ...] = (
    Rule("aws-imdsv2-hop-limit-1", "GPU launch templates and instances require IMDSv2 with hop limit 1", MANDATORY,
         check=aws.imdsv2),
    Rule("aws-ebs-encrypted", "EBS volumes are encrypted", MANDATORY, check=aws.encrypted_ebs),
    Rule("aws-gpu-no-public-ip", "GPU launch templates and instances get no public IP", MANDATORY,
         check=aws.no_public_ip),
    Rule("aws-no-open-admin-or-exporter-ingress", "no 0.0.0.0/0 or ::/0 ingress on 22, 3389 or exporter ports",
         MANDATORY, check=aws.no_open_ingress),
    Rule("aws-efa-sg-self-referencing", "EFA interfaces use a security group with all-traffic self-referencing "
         "ingress and egress", MANDATORY, stack_check=aws.efa_self_referencing_sg),
    Rule("aws-efa-placement", "multi-node EFA fleets use a cluster placement group, never together with a "
         "Capacity Block or targeted reservation", MANDATORY, stack_check=aws.efa_placement_group),
    Rule("aws-no-placement-group-with-reservation", "no placement group in a launch template that targets a "
         "Capacity Block or capacity reservation", MANDATORY, check=aws.pg_with_reservation),
    Rule("aws-s3-bucket-private", "S3 buckets block every kind of public access", MANDATORY,
         stack_check=aws.private_buckets),
    Rule("aws-instance-writers-scoped", "instances are launched only from named launch templates, tagged on "
         "create, terminated only by the cluster's tag; roles passed by ARN", MANDATORY,
         check=aws_iam.instance_writers_scoped),
    Rule("azure-ib-single-placement-group", "InfiniBand scale sets use singlePlacementGroup: true and at most 100 "
         "instances", MANDATORY, check=azure.ib_single_placement_group),
    Rule("azure-ib-no-172-16-overlap", "no VNet or subnet overlapping 172.16.0.0/16 with InfiniBand sizes",
         MANDATORY, stack_check=azure.ib_vnet_overlap),
    Rule("azure-no-password-auth", "VMs and scale sets use SSH keys, never passwords", MANDATORY,
         check=azure.no_password_auth),
    Rule("azure-no-open-admin-or-exporter-ingress", "no internet ingress on 22, 3389 or exporter ports", MANDATORY,
         check=azure.nsg_open_ingress),
    Rule("azure-scale-set-writers-scoped", "roles that grow scale sets or delete their instances are assigned on "
         "scale sets only, and their holder gets no Owner, Contributor or Virtual Machine Contributor", MANDATORY,
         stack_check=azure.scale_set_writers_scoped),
    Rule("gcp-gpu-terminate-on-maintenance", "GPU VMs set onHostMaintenance: TERMINATE", MANDATORY,
         check=gcp.terminate_on_maintenance),
    Rule("gcp-spot-no-automatic-restart", "spot VMs set automaticRestart: false", MANDATORY,
         check=gcp.spot_without_restart),
    Rule("gcp-compact-no-automatic-restart", "VMs in a compact placement policy set automaticRestart: false",
         MANDATORY, stack_check=gcp.compact_without_restart),
    Rule("gcp-no-firewall-on-roce", "no firewall rules on RoCE networks", MANDATORY,
         stack_check=gcp.no_firewall_on_roce),
    Rule("gcp-instance-writers-scoped", "instances.create/delete are granted only on named instances (an IAM "
         "condition), never project-wide", MANDATORY, stack_check=gcp.instance_writers_scoped),
    Rule("gcp-no-open-ssh", "no 0.0.0.0/0 or ::/0 ingress on SSH or RDP", MANDATORY, check=gcp.no_open_ssh),
    Rule("gcp-gpu-shielded-vm", "GPU VMs are Shielded VMs (vTPM, integrity monitoring)", MANDATORY,
         check=gcp.shielded_vm),
    Rule("gcp-reservation-only-machine-not-standard", "A4X, A4 and A3 Ultra VMs are Spot or reservation-bound, "
         "never STANDARD (Google does not sell them on demand)", MANDATORY, check=gcp.reservation_only_not_standard),
    Rule("cost-on-demand-multi-node", "on-demand multi-node fleets over a $/h limit", ADVISORY,
         stack_check=cost.on_demand_multi_node,
         config={"max_on_demand_usd_per_hour": cost.DEFAULT_MAX_ON_DEMAND_USD_PER_HOUR}),
    Rule("cost-dev-stack-without-spot", "idle-prone dev stacks on on-demand capacity over a $/h limit", ADVISORY,
         stack_check=cost.dev_stack_without_spot,
         config={"dev_stack_pattern": cost.DEFAULT_DEV_STACK_PATTERN,
                 "dev_max_usd_per_hour": cost.DEFAULT_DEV_MAX_USD_PER_HOUR}),
)

BY_NAME = {rule.name: rule for rule in RULES}
