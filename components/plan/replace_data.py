"""Which input changes REPLACE a resource, per resource type, and where each fact comes from.

Bridged providers (aws, gcp) replace a resource when a Terraform `ForceNew` argument changes; azure-native replaces
when a property the schema lists under `replaceOnChanges` changes. The SDK packages carry neither fact, so the
table below is written from the providers' published sources named in `source`. A type missing here is UNKNOWN:
the diff says so instead of guessing "updated in place" (tests/plan/test_replace_data.py keeps every type that the
shipped stacks declare in the table).

Properties are top-level Pulumi input names (camelCase). `ALL` means every input change replaces the resource.
`checked` names the provider revision an entry was compared with, field by field (aws_subnet, aws_security_group,
google_compute_firewall, google_compute_instance_group_manager); the other entries are written from the same
sources but not yet compared line by line.
"""

from __future__ import annotations

from dataclasses import dataclass

ALL = "*"
TF_AWS = "hashicorp/terraform-provider-aws"
TF_GOOGLE = "hashicorp/terraform-provider-google (magic-modules)"
AZURE_NATIVE = "pulumi/pulumi-azure-native schema replaceOnChanges (create-only properties, resource name, location)"


@dataclass(frozen=True)
class ReplaceFacts:
    """The inputs whose change replaces a resource of one type, and the provider source they were read from."""

    properties: frozenset[str]
    source: str
    note: str = ""
    checked: str = ""  # the provider source revision these properties were compared with, where one was


    def replaces(self, prop: str) -> bool:
        return ALL in self.properties or prop in self.properties


def _facts(properties: str, source: str, note: str = "", checked: str = "") -> ReplaceFacts:
    return ReplaceFacts(frozenset(properties.split()), source, note, checked)


REPLACE_ON_CHANGES: dict[str, ReplaceFacts] = {
    # Monitoring server (issue 15): read from memory of the provider source, not re-read here (UNVERIFIED).
    "aws:ebs/volume:Volume": _facts(
        "availabilityZone encrypted kmsKeyId outpostArn snapshotId", f"{TF_AWS} internal/service/ec2/ebs_volume.go",
        "size, type, IOPS and throughput are modified in place; read from memory of the provider source, not re-read here (UNVERIFIED)"),
    "aws:ec2/instance:Instance": _facts(
        "ami availabilityZone ebsBlockDevices ephemeralBlockDevices hostId keyName networkInterfaces placementGroup "
        "privateIp subnetId tenancy", f"{TF_AWS} internal/service/ec2/ec2_instance.go",
        "userData replaces only with userDataReplaceOnChange; read from memory of the provider source, not re-read here (UNVERIFIED)"),
    # The Slurm controller (issue 28), first declared by a shipped stack with aws-team (issue 43); read from the
    # provider's schema: subnet_id and interface_type are ForceNew, private_ips only when the primary address changes.
    "aws:ec2/networkInterface:NetworkInterface": _facts(
        "interfaceType subnetId", f"{TF_AWS} internal/service/ec2/vpc_network_interface.go",
        "a changed primary address in privateIps also replaces it (a CustomizeDiff); the controller sets none"),
    "aws:ssm/parameter:Parameter": _facts(
        "dataType name", f"{TF_AWS} internal/service/ssm/parameter.go",
        "value, type and description are put in place; a tier downgrade from Advanced replaces it"),
    "aws:ec2/volumeAttachment:VolumeAttachment": _facts(
        "deviceName instanceId volumeId", f"{TF_AWS} internal/service/ec2/ec2_volume_attachment.go", "read from memory of the provider source, not re-read here (UNVERIFIED)"),
    "azure-native:authorization:RoleDefinition": _facts("roleDefinitionId scope", AZURE_NATIVE, "read from memory of the provider source, not re-read here (UNVERIFIED)"),
    "azure-native:compute:Disk": _facts(
        "creationData diskName location resourceGroupName zones", AZURE_NATIVE, "read from memory of the provider source, not re-read here (UNVERIFIED)"),
    "azure-native:compute:VirtualMachine": _facts(
        "location osProfile resourceGroupName vmName zones", AZURE_NATIVE,
        "osProfile (customData) cannot change on an existing VM; read from memory of the provider source, not re-read here (UNVERIFIED)"),
    "azure-native:keyvault:Vault": _facts("location resourceGroupName vaultName", AZURE_NATIVE, "read from memory of the provider source, not re-read here (UNVERIFIED)"),
    "azure-native:network:NetworkInterface": _facts(
        "location networkInterfaceName resourceGroupName", AZURE_NATIVE, "read from memory of the provider source, not re-read here (UNVERIFIED)"),
    "gcp:compute/disk:Disk": _facts(
        "image name project snapshot type zone", f"{TF_GOOGLE} mmv1/products/compute/Disk.yaml",
        "size grows in place; read from memory of the provider source, not re-read here (UNVERIFIED)"),
    "gcp:compute/address:Address": _facts(
        "address addressType name network networkTier prefixLength project purpose region subnetwork",
        f"{TF_GOOGLE} mmv1/products/compute/Address.yaml",
        "labels are set in place; read from memory of the provider source, not re-read here (UNVERIFIED)"),
    "gcp:secretmanager/secret:Secret": _facts(
        "project replication secretId", f"{TF_GOOGLE} mmv1/products/secretmanager/Secret.yaml",
        "read from memory of the provider source, not re-read here (UNVERIFIED)"),
    "gcp:secretmanager/secretVersion:SecretVersion": _facts(
        "secret secretData", f"{TF_GOOGLE} mmv1/products/secretmanager/SecretVersion.yaml",
        "a new value is a new version; read from memory of the provider source, not re-read here (UNVERIFIED)"),
    "gcp:secretmanager/secretIamMember:SecretIamMember": _facts(
        ALL, f"{TF_GOOGLE} mmv1/products/secretmanager/Secret.yaml iam_policy (IAM members: all fields ForceNew)"),
    "gcp:compute/instance:Instance": _facts(
        "bootDisk metadataStartupScript name project scratchDisks zone",
        f"{TF_GOOGLE} google/services/compute/resource_compute_instance.go", "read from memory of the provider source, not re-read here (UNVERIFIED)"),
    # Inference serving (issue 16): read from memory of the provider source, not re-read here (UNVERIFIED).
    "aws:autoscaling/attachment:Attachment": _facts(
        "autoscalingGroupName elb lbTargetGroupArn", f"{TF_AWS} internal/service/autoscaling/attachment.go",
        "read from memory of the provider source, not re-read here (UNVERIFIED)"),
    "aws:autoscaling/policy:Policy": _facts(
        "autoscalingGroupName name", f"{TF_AWS} internal/service/autoscaling/policy.go", "read from memory of the provider source, not re-read here (UNVERIFIED)"),
    "aws:lb/listener:Listener": _facts(
        "loadBalancerArn", f"{TF_AWS} internal/service/elbv2/listener.go", "read from memory of the provider source, not re-read here (UNVERIFIED)"),
    "aws:lb/loadBalancer:LoadBalancer": _facts(
        "internal loadBalancerType name namePrefix", f"{TF_AWS} internal/service/elbv2/load_balancer.go",
        "read from memory of the provider source, not re-read here (UNVERIFIED)"),
    "aws:lb/targetGroup:TargetGroup": _facts(
        "ipAddressType name namePrefix port protocol protocolVersion targetType vpcId",
        f"{TF_AWS} internal/service/elbv2/target_group.go", "read from memory of the provider source, not re-read here (UNVERIFIED)"),
    "azure-native:authorization:RoleAssignment": _facts(
        "principalId roleAssignmentName roleDefinitionId scope", AZURE_NATIVE, "read from memory of the provider source, not re-read here (UNVERIFIED)"),
    "azure-native:monitor:AutoscaleSetting": _facts(
        "autoscaleSettingName location resourceGroupName", AZURE_NATIVE, "read from memory of the provider source, not re-read here (UNVERIFIED)"),
    "azure-native:network:LoadBalancer": _facts(
        "loadBalancerName location resourceGroupName", AZURE_NATIVE, "read from memory of the provider source, not re-read here (UNVERIFIED)"),
    "gcp:compute/autoscaler:Autoscaler": _facts(
        "name project zone", f"{TF_GOOGLE} mmv1/products/compute/Autoscaler.yaml", "read from memory of the provider source, not re-read here (UNVERIFIED)"),
    "gcp:compute/forwardingRule:ForwardingRule": _facts(
        "allPorts allowGlobalAccess backendService ipAddress ipProtocol loadBalancingScheme name network "
        "networkTier ports project region subnetwork", f"{TF_GOOGLE} mmv1/products/compute/ForwardingRule.yaml",
        "read from memory of the provider source, not re-read here (UNVERIFIED)"),
    "gcp:compute/regionBackendService:RegionBackendService": _facts(
        "loadBalancingScheme name project region", f"{TF_GOOGLE} mmv1/products/compute/RegionBackendService.yaml",
        "read from memory of the provider source, not re-read here (UNVERIFIED)"),
    "gcp:compute/regionHealthCheck:RegionHealthCheck": _facts(
        "name project region", f"{TF_GOOGLE} mmv1/products/compute/RegionHealthCheck.yaml", "read from memory of the provider source, not re-read here (UNVERIFIED)"),
    "gcp:storage/bucketIAMMember:BucketIAMMember": _facts(
        "bucket condition member role", f"{TF_GOOGLE} google/services/storage/iam_storage_bucket.go",
        "read from memory of the provider source, not re-read here (UNVERIFIED)"),
    # AWS (Terraform ForceNew)
    "aws:ec2/vpc:Vpc": _facts("cidrBlock ipv4IpamPoolId ipv4NetmaskLength", f"{TF_AWS} internal/service/ec2/vpc_.go"),
    "aws:ec2/subnet:Subnet": _facts(
        "availabilityZone availabilityZoneId cidrBlock ipv4IpamPoolId ipv4NetmaskLength ipv6IpamPoolId ipv6Native "
        "ipv6NetmaskLength outpostArn vpcId", f"{TF_AWS} internal/service/ec2/vpc_subnet.go",
        "ipv6CidrBlock also replaces when the subnet assigned IPv6 on creation (CustomizeDiff)",
        checked="00cda125a19d31754cb0d073cf551264c57955cb"),
    "aws:ec2/internetGateway:InternetGateway": _facts(
        "", f"{TF_AWS} internal/service/ec2/vpc_internet_gateway.go", "vpcId re-attaches in place"),
    "aws:ec2/eip:Eip": _facts(
        "address customerOwnedIpv4Pool domain ipamPoolId networkBorderGroup publicIpv4Pool",
        f"{TF_AWS} internal/service/ec2/ec2_eip.go"),
    "aws:ec2/natGateway:NatGateway": _facts(
        "allocationId connectivityType privateIp subnetId", f"{TF_AWS} internal/service/ec2/vpc_nat_gateway.go"),
    "aws:ec2/routeTable:RouteTable": _facts("vpcId", f"{TF_AWS} internal/service/ec2/vpc_route_table.go"),
    "aws:ec2/routeTableAssociation:RouteTableAssociation": _facts(
        "gatewayId subnetId", f"{TF_AWS} internal/service/ec2/vpc_route_table_association.go",
        "routeTableId is replaced in place (ReplaceRouteTableAssociation)"),
    "aws:ec2/securityGroup:SecurityGroup": _facts(
        "description name namePrefix vpcId", f"{TF_AWS} internal/service/ec2/vpc_security_group.go",
        checked="01606926a0c0ab9174aec440f976a48b0baee722"),
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule": _facts(
        "securityGroupId", f"{TF_AWS} internal/service/vpc/security_group_ingress_rule.go (RequiresReplace)"),
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule": _facts(
        "securityGroupId", f"{TF_AWS} internal/service/vpc/security_group_egress_rule.go (RequiresReplace)"),
    "aws:ec2/placementGroup:PlacementGroup": _facts(
        "name partitionCount spreadLevel strategy", f"{TF_AWS} internal/service/ec2/ec2_placement_group.go"),
    "aws:ec2/launchTemplate:LaunchTemplate": _facts(
        "name namePrefix", f"{TF_AWS} internal/service/ec2/ec2_launch_template.go",
        "other changes write a new template version; running instances keep the version they booted with"),
    "aws:autoscaling/group:Group": _facts(
        "name namePrefix", f"{TF_AWS} internal/service/autoscaling/group.go",
        "launch template, size and subnets update in place; instances are only replaced by an instance refresh"),
    "aws:autoscaling/lifecycleHook:LifecycleHook": _facts(
        "name", f"{TF_AWS} internal/service/autoscaling/lifecycle_hook.go",
        "create and update are the same PutLifecycleHook call; only the hook's name is ForceNew"),
    "aws:autoscaling/schedule:Schedule": _facts(
        "autoscalingGroupName scheduledActionName", f"{TF_AWS} internal/service/autoscaling/schedule.go",
        "times and sizes update in place"),
    "aws:ec2/vpcEndpoint:VpcEndpoint": _facts(
        "resourceConfigurationArn serviceName serviceNetworkArn serviceRegion vpcEndpointType vpcId",
        f"{TF_AWS} internal/service/ec2/vpc_endpoint.go", "routeTableIds update in place (ModifyVpcEndpoint)",
        checked="008db85aad5e56627b1eecab8830464a282552ed"),
    "aws:fsx/lustreFileSystem:LustreFileSystem": _facts(
        "backupId copyTagsToBackups deploymentType driveCacheType exportPath fileSystemTypeVersion importPath "
        "importedFileChunkSize kmsKeyId perUnitStorageThroughput securityGroupIds storageType subnetIds",
        f"{TF_AWS} internal/service/fsx/lustre_file_system.go",
        "storageCapacity grows in place; a smaller capacity replaces the filesystem (CustomizeDiff)",
        checked="06ee53d9fed4877dc55cefbe3ba1423b863eda61"),
    "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation": _facts(
        "dataRepositoryPath fileSystemId fileSystemPath",
        f"{TF_AWS} internal/service/fsx/data_repository_association.go",
        checked="0a77465627efb9003f87978f901d1a4004a2fc09"),
    # The node config bucket (only where the user data exceeds 16 KB, gpufleet.aws.node_config)
    "aws:s3/bucket:Bucket": _facts(
        "bucket bucketPrefix objectLockEnabled", f"{TF_AWS} internal/service/s3/bucket.go"),
    "aws:s3/bucketObjectv2:BucketObjectv2": _facts(
        "bucket key", f"{TF_AWS} internal/service/s3/object.go",
        "the key is the config's SHA-256: a changed config is a new object; content changes alone update in place",
        checked="033c721bf1eda7db79395cd73acb54c7efa57ffc"),
    "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock": _facts(
        "bucket", f"{TF_AWS} internal/service/s3/bucket_public_access_block.go",
        checked="01606926a0c0ab9174aec440f976a48b0baee722"),
    "aws:s3/bucketOwnershipControls:BucketOwnershipControls": _facts(
        "bucket", f"{TF_AWS} internal/service/s3/bucket_ownership_controls.go"),
    "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration": _facts(
        "bucket expectedBucketOwner", f"{TF_AWS} internal/service/s3/bucket_server_side_encryption_configuration.go",
        checked="01606926a0c0ab9174aec440f976a48b0baee722"),
    "aws:s3/bucketPolicy:BucketPolicy": _facts(
        "bucket", f"{TF_AWS} internal/service/s3/bucket_policy.go", "the policy document updates in place",
        checked="0073593e7d6993ba482409f4dc35438daaa79bb3"),
    # The SSM transfer bucket's object expiry (gpufleet.aws.ssm_transfer); rules update in place
    "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration": _facts(
        "bucket expectedBucketOwner", f"{TF_AWS} internal/service/s3/bucket_lifecycle_configuration.go",
        "the rules update in place", checked="01606926a0c0ab9174aec440f976a48b0baee722"),
    "aws:iam/role:Role": _facts("name namePrefix path", f"{TF_AWS} internal/service/iam/role.go"),
    "aws:iam/instanceProfile:InstanceProfile": _facts(
        "name namePrefix path", f"{TF_AWS} internal/service/iam/instance_profile.go"),
    "aws:iam/rolePolicy:RolePolicy": _facts("name namePrefix role", f"{TF_AWS} internal/service/iam/role_policy.go"),
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment": _facts(
        "policyArn role", f"{TF_AWS} internal/service/iam/role_policy_attachment.go"),
    # GCP (Terraform ForceNew; generated resources mark immutable fields ForceNew)
    "gcp:compute/network:Network": _facts(
        "autoCreateSubnetworks enableUlaInternalIpv6 internalIpv6Range mtu name networkProfile project",
        f"{TF_GOOGLE} google/services/compute/resource_compute_network.go"),
    "gcp:compute/subnetwork:Subnetwork": _facts(
        "ipv6AccessType name network project purpose region reservedInternalRange",
        f"{TF_GOOGLE} google/services/compute/resource_compute_subnetwork.go",
        "ipCidrRange may only be expanded in place"),
    "gcp:compute/firewall:Firewall": _facts(
        "direction name params project", f"{TF_GOOGLE} google/services/compute/resource_compute_firewall.go",
        "network updates in place", checked="07fc8657afe854e6679f9e01de04f96955a1f910"),
    "gcp:compute/router:Router": _facts(
        "name network project region", f"{TF_GOOGLE} google/services/compute/resource_compute_router.go"),
    "gcp:compute/routerNat:RouterNat": _facts(
        "name project region router", f"{TF_GOOGLE} google/services/compute/resource_compute_router_nat.go"),
    "gcp:compute/instanceTemplate:InstanceTemplate": _facts(
        ALL, f"{TF_GOOGLE} google/services/compute/resource_compute_instance_template.go",
        "instance templates are immutable: every argument is ForceNew"),
    "gcp:compute/instanceGroupManager:InstanceGroupManager": _facts(
        "baseInstanceName name project zone",
        f"{TF_GOOGLE} google/services/compute/resource_compute_instance_group_manager.go",
        "a new template version rolls instances only as updatePolicy says",
        checked="03534e70bfe56bd9d2910db36f83bc8d23479ae6"),
    "gcp:compute/healthCheck:HealthCheck": _facts(
        "name project", f"{TF_GOOGLE} mmv1/products/compute/HealthCheck.yaml",
        "checks, intervals and thresholds are patched in place"),
    "gcp:compute/resourcePolicy:ResourcePolicy": _facts(
        ALL, f"{TF_GOOGLE} google/services/compute/resource_compute_resource_policy.go",
        "resource policies are immutable"),
    "gcp:serviceaccount/account:Account": _facts(
        "accountId project", f"{TF_GOOGLE} google/services/resourcemanager/resource_google_service_account.go"),
    "gcp:projects/iAMCustomRole:IAMCustomRole": _facts(
        "project roleId", f"{TF_GOOGLE} google/services/resourcemanager/resource_google_project_iam_custom_role.go"),
    "gcp:projects/iAMMember:IAMMember": _facts(
        ALL, f"{TF_GOOGLE} google/services/resourcemanager/iam_member (all fields ForceNew)"),
    "gcp:serviceaccount/iAMMember:IAMMember": _facts(
        ALL, f"{TF_GOOGLE} google/services/resourcemanager/iam_service_account.go with tpgiamresource's "
        "ResourceIamMember (all fields ForceNew)"),
    # Azure (azure-native replaceOnChanges)
    "azure-native:resources:ResourceGroup": _facts("location resourceGroupName", AZURE_NATIVE),
    "azure-native:network:VirtualNetwork": _facts("location resourceGroupName virtualNetworkName", AZURE_NATIVE),
    "azure-native:network:Subnet": _facts("resourceGroupName subnetName virtualNetworkName", AZURE_NATIVE),
    "azure-native:network:NetworkSecurityGroup": _facts(
        "location networkSecurityGroupName resourceGroupName", AZURE_NATIVE),
    "azure-native:network:ApplicationSecurityGroup": _facts(
        "applicationSecurityGroupName location resourceGroupName", AZURE_NATIVE),
    "azure-native:network:NatGateway": _facts("location natGatewayName resourceGroupName zones", AZURE_NATIVE),
    "azure-native:network:PublicIPAddress": _facts(
        "location publicIpAddressName publicIPAddressVersion resourceGroupName sku zones", AZURE_NATIVE),
    "azure-native:compute:VirtualMachineScaleSet": _facts(
        "location orchestrationMode platformFaultDomainCount resourceGroupName vmScaleSetName zones", AZURE_NATIVE,
        "model changes (custom data, image) apply to new instances; existing ones need a reimage or upgrade"),
    "azure-native:compute:ProximityPlacementGroup": _facts(
        "location proximityPlacementGroupName resourceGroupName zones", AZURE_NATIVE),
}

# Types whose changes are not resource replacements: component resources hold no cloud state; a provider's change
# shows on the resources it manages.
NO_CLOUD_STATE_PREFIXES = ("gpufleet:", "pulumi:providers:")


def replace_facts(resource_type: str) -> ReplaceFacts | None:
    """The type's facts, or None when gpufleet has no replace-on-change data for it (the diff says "unknown")."""
    return REPLACE_ON_CHANGES.get(resource_type)


def has_cloud_state(resource_type: str) -> bool:
    return not resource_type.startswith(NO_CLOUD_STATE_PREFIXES)
