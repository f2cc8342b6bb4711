"""gpufleet's CrossGuard pack: `pulumi preview --policy-pack policy/` (see policies.py; rules in gpufleet.policy)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # policies.py beside this file, however the host runs it

from policies import PACK_NAME, policies  # noqa: E402
from pulumi_policy import PolicyPack  # noqa: E402

PolicyPack(name=PACK_NAME, policies=policies())
