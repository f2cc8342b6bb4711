"""`gpufleet diff BASE HEAD` and `gpufleet policy PLAN.json`: the review loop's offline commands.

Exit codes: diff 0 no change, 1 change; policy 0 clean (advisories allowed), 1 a mandatory violation; both 2 on bad
input, with one line on stderr and no traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

BAD_INPUT = 2
COMMENT_LIMIT = 65_000  # GitHub refuses comments over 65,536 characters


def add_commands(subparsers) -> None:
    diff = subparsers.add_parser("diff", help="what a change does to a stack, offline: resources, replacements, "
                                 "cost, user data, policy")
    diff.add_argument("base", help="a `gpufleet plan --json` file, or git:REF:STACK")
    diff.add_argument("head", help="a `gpufleet plan --json` file, or git:REF:STACK")
    view = diff.add_mutually_exclusive_group()
    view.add_argument("--markdown", action="store_true", help="a PR comment (summary table, details folded)")
    view.add_argument("--json", action="store_true", help="one JSON document")
    diff.add_argument("--title", default="", help="the markdown heading (default: the two stacks)")
    diff.add_argument("--max-chars", type=int, default=COMMENT_LIMIT, metavar="N",
                      help=f"longest markdown to print (default {COMMENT_LIMIT}, under GitHub's comment limit)")
    diff.set_defaults(handler=run_diff)
    policy = subparsers.add_parser("policy", help="check a plan against the policy pack's rules, offline")
    policy.add_argument("plan", type=Path, help="a `gpufleet plan --json` file")
    policy.set_defaults(handler=run_policy)


def run_diff(args: argparse.Namespace) -> int:
    from ..policy.engine import BadPlan
    from .diff import diff_plans
    from .diff_render import diff_json, diff_markdown, diff_text
    from .sources import BadSource, load_sides

    try:
        base, head = load_sides([args.base, args.head])
        result = diff_plans(base, head)
    except (BadSource, BadPlan) as err:
        return _bad(str(err))
    except (KeyError, TypeError, AttributeError) as err:  # a JSON file shaped almost like a plan
        return _bad(f"not a plan: {type(err).__name__} {err}")
    if args.json:
        print(diff_json(result))
    elif args.markdown:
        print(diff_markdown(result, args.title, max(2_000, args.max_chars)))
    else:
        print(diff_text(result))
    return 1 if result.has_changes else 0


def run_policy(args: argparse.Namespace) -> int:
    from ..policy.engine import BadPlan, check_plan, mandatory

    try:
        document = json.loads(args.plan.read_text())
        violations = check_plan(document)
    except FileNotFoundError:
        return _bad(f"{args.plan}: no such file")
    except (json.JSONDecodeError, UnicodeDecodeError):
        return _bad(f"{args.plan}: not a plan (invalid JSON)")
    except BadPlan as err:
        return _bad(f"{args.plan}: {err}")
    for violation in violations:
        print(violation.line())
    if not violations:
        print(f"{args.plan}: no policy violations")
    return 1 if mandatory(violations) else 0


def _bad(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return BAD_INPUT
