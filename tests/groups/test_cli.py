"""The commands on a stack of node groups: the plan's cost table by group and catalog notes for every group's type,
bad group input as one message and exit 2, and `gpufleet bench` for one group's nodes."""

from __future__ import annotations

import pytest

from ..plan.test_cli import planned


def test_the_plan_prices_each_group_and_dates_every_groups_prices():
    # `fabric: auto`: aws-team asks every group for EFA, which g6e has not (a group without it is refused then).
    code, out, err = planned("plan", "aws-team", "--set", "fabric=auto", "--set", "node_groups.eval={nodes: 2, "
                             "accelerator: {instance_type: g6e.xlarge}, market: on-demand}")
    assert code == 0, err
    table = out[out.index("Cost (catalog prices, USD)"):]
    rows = [line.split()[0] for line in table.splitlines()[2:6]]
    assert rows == ["debug:", "eval:", "train:", "total"], table
    assert "catalog prices for aws (g6e.xlarge in " in out and "catalog prices for aws (p5.48xlarge in " in out


@pytest.mark.parametrize(("override", "message"), [
    ("node_groups.debug.market.type=sopt",
     "`node_groups.debug.market.type`: got 'sopt'; expected one of 'on-demand', 'spot' or 'mixed'"),
    ("node_groups.debug.slurm_partition=train",
     "`node_groups.train.slurm_partition`: got 'train'; node group 'debug' forms that partition already"),
    ("node_groups.Debug={}", "`node_groups.Debug`: got 'Debug'; expected a group name"),
])
def test_bad_group_input_is_one_message_and_exit_2(override, message):
    code, out, err = planned("plan", "aws-team", "--set", override)
    assert code == 2 and out == ""
    assert message in err and "Traceback" not in err, err


def test_bench_runs_on_the_named_groups_partition():
    code, out, err = planned("bench", "aws-team", "--hosts", "a,b", "--launcher", "slurm", "--group", "debug",
                             "--dry-run")
    assert code == 0, err
    assert out.startswith("srun --partition=debug --nodes=2 --nodelist=a,b --ntasks-per-node=8"), out
    code, out, err = planned("bench", "aws-team", "--hosts", "a,b", "--group", "nope", "--dry-run")
    assert code == 2 and "`--group`: got 'nope'; expected one of the stack's node groups: 'debug', 'train'" in err
