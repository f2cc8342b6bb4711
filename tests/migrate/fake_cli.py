"""Stands in for `aws`, `gcloud`, `az` and `pulumi` (`fake_cli.py NAME ARGS...`, installed by `install_fake_clis`):
appends `{"args": [NAME, *ARGS], "cwd": ...}` as one JSON line to FAKE_CLI_LOG and answers from FAKE_CLI_REPLIES, a JSON mapping of
command prefixes ("aws ec2 describe-instances") to {"file": recorded reply in cli_replies/, "rc": exit code,
"stderr": message}. The longest matching prefix answers; a command no prefix matches exits 2, as an unknown
command does in the real CLIs."""

import json
import os
import sys
from pathlib import Path

command = sys.argv[1:]
with open(os.environ["FAKE_CLI_LOG"], "a") as log:
    log.write(json.dumps({"args": command, "cwd": os.getcwd()}) + "\n")
replies = json.loads(os.environ.get("FAKE_CLI_REPLIES") or "{}")
line = " ".join(command)
matches = [prefix for prefix in replies if line == prefix or line.startswith(prefix + " ")]
if not matches:
    sys.exit(f"fake {command[0]}: unexpected command {command}")
reply = replies[max(matches, key=len)]
if reply.get("file"):
    sys.stdout.write((Path(__file__).with_name("cli_replies") / reply["file"]).read_text())
sys.stderr.write(reply.get("stderr", ""))
sys.exit(reply.get("rc", 0))
