"""Node groups: several kinds of node in one cluster, each its own fleet and Slurm partition (README "Node groups").

A spec without `node_groups` is one group (the top-level fields), declared exactly as before. With `node_groups`,
each group is resolved into a full spec of its own (`resolve.group_specs`: the cluster's fields with the group's
overrides), so every rule and every stage of the pipeline runs on each group unchanged, and its problems are
reported at the group's path (`node_groups.debug.market.type`). What spans groups (one zone, one fabric per
placement, one partition per group, unique names) is checked in `rules.py`.
"""
