"""`gpufleet migrate`: move a local workload onto a gpufleet cluster in four checked steps.

capture (manifest of the local environment and data) -> match (a stack file of equivalent nodes) -> sync (rsync
through the cloud's private path) -> verify (checksums, packages and the user's tests on the node).
"""
