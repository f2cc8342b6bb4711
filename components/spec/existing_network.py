"""Existing-network fields of `network:` (mixed into `Network`): join a network the account already has.

What each mode creates is documented in README "Existing networks":
- AWS `existing_vpc_id`: only the node subnet, the NAT subnet, the NAT gateway and the route tables, in that VPC.
  `existing_subnet_id`: nothing; the subnet's AZ is checked at deploy time against `zone`.
- Azure `existing_resource_group`: every resource goes into that group (VNet, NAT, NSG, scale set).
  `existing_subnet_id`: the scale set joins that subnet; no VNet, NAT or NSG is created.
- GCP `existing_network` + `existing_subnetwork`: the primary NIC uses them (no primary VPC, router or NAT is
  created); gpufleet still creates the GPU VPCs the machine family needs.
"""

from __future__ import annotations

from .strict import StrictModel


class ExistingNetwork(StrictModel):
    existing_vpc_id: str | None = None
    """AWS: create the node subnet, NAT and routes in this VPC (`network.cidr` must be a free range inside it). Default: gpufleet creates a VPC."""
    existing_resource_group: str | None = None
    """Azure: put every resource in this resource group instead of a new one. Default: gpufleet creates one."""
    existing_network: str | None = None
    """GCP: the primary NIC's VPC (name or self link); requires `existing_subnetwork`. Default: gpufleet creates one."""
    existing_subnetwork: str | None = None
    """GCP: the primary NIC's subnetwork (name or self link) in `region`; needs Cloud NAT or another egress already. Default: gpufleet creates one."""
