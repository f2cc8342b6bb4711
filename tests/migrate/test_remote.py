"""The private-path ProxyCommands and the rsync command line (fast)."""

from __future__ import annotations

import os
import shlex

import pytest

from gpufleet.migrate.remote import Nodes, bastion_proxy, cloud_proxy_command
from gpufleet.migrate.sync import rsync_command, sync_targets
from gpufleet.spec.errors import SpecError


def test_aws_goes_through_session_manager():
    command = cloud_proxy_command("aws", "us-east-2", None, None, None)
    assert command == ("sh -c \"aws ssm start-session --region us-east-2 --target %h --document-name "
                       "AWS-StartSSHSession --parameters 'portNumber=%p'\"")


def test_gcp_goes_through_iap_and_needs_the_zone():
    assert cloud_proxy_command("gcp", "us-central1", "us-central1-a", None, None) == (
        "gcloud compute start-iap-tunnel %h %p --listen-on-stdin --zone us-central1-a")
    with pytest.raises(SpecError, match="`--zone`: got nothing; required on gcp"):
        cloud_proxy_command("gcp", "us-central1", None, None, None)


def test_azure_goes_through_bastion_and_needs_its_name():
    command = cloud_proxy_command("azure", "eastus", None, "hub-bastion", "hub-rg")
    assert shlex.split(command) == [str(bastion_proxy()), "hub-bastion", "hub-rg", "%h", "%p"]
    assert bastion_proxy().parent.parent.joinpath("galaxy.yml").is_file() and os.access(bastion_proxy(), os.X_OK)
    with pytest.raises(SpecError, match="`--bastion`: got nothing; required on azure"):
        cloud_proxy_command("azure", "eastus", None, None, "hub-rg")


def test_rsync_resumes_honours_gitignore_and_shows_progress():
    nodes = Nodes(hosts=("i-1", "i-2"), user="ubuntu", proxy_command="nc 127.0.0.1 2222", identity="/k")
    command = rsync_command(nodes, "i-1", [], "/shared/workload", bwlimit=100)
    assert {"--partial", "--append-verify", "--info=progress2", "--filter=:- .gitignore", "--bwlimit=100"} <= set(command)
    shell = shlex.split(command[command.index("-e") + 1])
    assert shell[:3] == ["ssh", "-o", "BatchMode=yes"] and "ProxyCommand=nc 127.0.0.1 2222" in shell
    assert shell[-2:] == ["-l", "ubuntu"] and ["-i", "/k"] == shell[shell.index("-i"):shell.index("-i") + 2]
    assert command[-1] == "i-1:/shared/workload/"
    assert sync_targets(nodes, shared=True) == ("i-1",) and sync_targets(nodes, shared=False) == ("i-1", "i-2")

