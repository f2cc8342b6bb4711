"""The scaling engine of elastic node groups: Slurm's ResumeProgram, SuspendProgram and ResumeFailProgram, and a
minute timer (`sync`), run on the Slurm controller by its distribution's python3.

This package is shipped to the controller as it is (`gpufleet_power` under /usr/local/lib/gpufleet, without
docstrings), so it imports nothing but the standard library and, on AWS only, boto3 (Ubuntu's python3-boto3). Its
`config` module is also what the controller's cloud-config renders the config file with
(`cloud_init.slurm_controller`): one definition of the file for both ends.

Slurm facts the programs depend on, read in slurm.conf(5) of Debian 12's slurm-client 22.05.8 (`man slurm.conf`) and
in SchedMD/slurm at tags slurm-22-05-8-1 and slurm-23-11-4-1 (the controller and nodes run Ubuntu 24.04's 23.11.4):
- ResumeProgram runs "when a node in power save mode is assigned work"; it "may execute more than once for a node
  when the slurmctld daemon crashes and is restarted"; a node that "doesn't register within ResumeTimeout" is marked
  DOWN and its jobs requeued. ResumeFailProgram gets "the names of the failed nodes (using Slurm's hostlist
  expression format)". SuspendProgram runs for nodes that "remain idle or down" for SuspendTime. All run as
  SlurmUser; 23.11 kills them after the largest ResumeTimeout or SuspendTimeout.
- State=CLOUD nodes start "powered down" and are available once "the slurmd daemon starts on the compute node".
- `SuspendExcNodes=nid[10-20]:4` keeps 4 usable nodes of the set from being powered down (22.05 and 23.11).
- 22.05 needs `SlurmctldParameters=cloud_reg_addrs` to take a registering cloud node's address, and
  `PrivateData=cloud` for powered-down cloud nodes to appear in sinfo even to root; 23.11 does both by default
  (RELEASE_NOTES 23.11: "Remove cloud_reg_addrs and make it default behavior"; NEWS 23.02.0rc1: "Change cloud nodes
  to show by default. PrivateData=cloud is no longer needed") and logs an error for `cloud_reg_addrs` ("defunct,
  please remove it", read_config.c). gpufleet.scheduler.power renders each per release.
- `idle_on_node_suspend` is not used: it would make a node this engine set DOWN for capacity idle again at once, and
  drop the reason users read in `sinfo -R`; `sync` returns such nodes after `capacity_retry_s` instead.
"""
