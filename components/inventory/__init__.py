"""`gpufleet inventory`: Ansible inventory files that find a stack's live nodes by the tags and labels gpufleet sets.

One file per cloud plugin, named as the plugin requires (`<stack>.aws_ec2.yml`, `.gcp_compute.yml`, `.azure_rm.yml`),
with the groups the shipped playbooks use (`gpu_nodes`, `slurm_controller`, `monitoring_server`) and host variables
(`gpufleet_cloud`, `gpufleet_instance_type`, `gpufleet_fabric`, `gpufleet_node_group`). Nodes are reached without
opening SSH to the world: AWS Session Manager, GCP IAP, Azure Bastion or a jump host.

Public entry points: `facts.cluster_facts`, `build.inventory_document`, `files.write_inventory`; imported from
their modules, so that `gpufleet select` never pays for the cloud SDKs this package needs.
"""
