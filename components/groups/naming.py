"""How a node group is named on its resources and in its nodes' metrics."""

GROUP_TAG = "gpufleet-node-group"
"""AWS tag, Azure tag and GCP label on a named group's resources: the nodes' Prometheus label `node_group` comes
from it (monitoring.scrape), and `gpufleet inventory` groups hosts by it."""
GROUP_LABEL = "node_group"
"""The Prometheus label that carries a node's group."""
