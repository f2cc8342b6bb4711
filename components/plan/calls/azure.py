"""Azure invokes the program makes: none.

The Azure component needs no lookups: the HPC image is a marketplace URN that Azure resolves when each VM is created,
the resource group and VNet of an existing subnet are parts of its resource id, and intra-VNet traffic is matched by
the `VirtualNetwork` service tag and the cluster's application security group instead of a looked-up range. Any
`azure-native:*` invoke the program starts to make must get an answer here, or the offline plan fails loudly.
"""

CALLS: dict = {}
