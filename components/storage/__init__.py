"""Shared storage (`storage.shared`, `storage.local_nvme`): the parts every cloud shares, in one place.

- `catalog.py` with `services.yaml`: each cloud's filesystem services (sizes, throughput tiers, regions, list
  prices), read by the spec's rules and by the cost table;
- `cost.py`: the filesystem's line under the cost table and the `shared_filesystem` stack output;
- `boot.py`: `storage:` as the node's boot fields, and the filesystem's address put into rendered user data once the
  filesystem exists.

What lives elsewhere, and why:
- The node side (`gpufleet.cloud_init.storage`: the mount and NVMe-array steps and their settings) stays in
  `cloud_init/`. Data flows spec -> cloud -> cloud_init and cloud_init imports nothing from `components/`
  (tests/test_architecture.py), so the node's half cannot live in a package under `components/`; this package
  imports it, never the reverse.
- Each cloud's builder stays in its cloud folder (`components/<cloud>/storage.py`). It declares that cloud's
  resources with the cloud's own tagging and naming (`aws.tagging`, `azure.tagging`, `gcp.labels`) and feeds its
  security rules (Azure's NSG takes `node_storage_rules`), so it belongs to the cloud as much as its network does.
  Moved here as `gpufleet.storage.<cloud>`, it would import `gpufleet.<cloud>.tagging`, whose package imports the
  cloud's `cluster.py`, which imports the builder back: a cycle through the cloud package's `__init__` that fails
  (ImportError, "partially initialized module") whenever the builder is imported before its cloud, and that the
  module-level cycle test does not see. The builders would also leave the folders in which
  tests/test_architecture.py keeps one cloud from importing another.
- The `storage:` section of the spec (`spec/storage.py`) and its rules (`spec/storage_rules.py`, which also check
  `access:` and the existing-network fields) stay with the spec, which holds every section and every rule the one
  checking pipeline runs.

Nothing is imported here: `gpufleet.storage.catalog` is read by the spec's rules, which must not load Pulumi (that
`boot.py` imports) when `gpufleet select` or the spec's checks run alone.
"""
