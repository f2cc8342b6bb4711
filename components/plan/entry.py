"""The `gpufleet` command's entry point: runs `gpufleet.plan.cli` as a short-lived process should run.

Three process settings, each measured by benchmarks/plan_vs_floor.py on `gpufleet plan aws-train`:
- The cyclic garbage collector is off. A command lives for seconds and reference counting frees nearly all of its
  garbage (peak memory of each shipped stack's plan is the same within 1 MB with the collector off), while each full
  collection walks every object of the provider SDKs' large modules and of the spec's models: about 0.3 s of an AWS
  plan, up to 0.9 s of an Azure one. It is off before anything heavy is imported, which is why this module imports
  only the standard library.
- The process ends with `os._exit` once the output is flushed: tearing the interpreter down (a last full
  collection and freeing every module's objects one by one) took another 0.35 s. gpufleet registers no exit
  handlers, and every file it writes is closed before the command returns.
- Third-party pydantic plugins (the `pydantic` entry-point group, e.g. observability hooks) are not loaded:
  `PYDANTIC_DISABLE_PLUGINS=__all__` unless the environment already sets that variable (set it to an empty value to
  load them). Looking them up read every installed distribution's entry points when the first spec model was built,
  10 to 25 ms of a plan; gpufleet uses none.

`gpufleet.plan.cli.main` itself changes none of them, for callers that run it inside a longer process (tests).
"""

from __future__ import annotations

import gc
import os
import sys

PYDANTIC_PLUGINS = "PYDANTIC_DISABLE_PLUGINS"


def main(argv: list[str] | None = None) -> int:
    """The console script: runs the command and ends the process with its exit code."""
    gc.disable()
    os.environ.setdefault(PYDANTIC_PLUGINS, "__all__")
    try:
        from .cli import main as run_command

        code = run_command(argv)
    except SystemExit as stop:  # argparse's --help and usage errors: the ordinary exit path
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 2)
        if stop.code is not None and not isinstance(stop.code, int):
            print(stop.code, file=sys.stderr)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:  # the reader went away; what the command wrote so far is all it gets
        code = code or 1
    os._exit(code)


if __name__ == "__main__":
    main()
