"""Policy rules for GPU infrastructure on AWS, Azure and GCP, as plain functions over (resource type, properties).

Shared by the CrossGuard pack in `policy/` and by `gpufleet policy PLAN.json` / `gpufleet diff`.
"""
