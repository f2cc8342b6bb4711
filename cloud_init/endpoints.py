"""Ports and paths the node software serves, shared with the cloud components that must reach them.

The health endpoint serves the node's acceptance result (`/var/lib/gpufleet/health.json`): 200 when the node is
healthy, 503 when it is not or when the check has not run yet. Cloud repair mechanisms probe it: GCP's autohealing
health check (from Google's probe ranges) and Azure's Application Health extension (on the node itself).
"""

HEALTH_ENDPOINT_PORT = 9408
HEALTH_ENDPOINT_PATH = "/health"
