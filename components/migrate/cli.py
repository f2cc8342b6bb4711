"""`gpufleet migrate capture|match|sync|verify`. Exit codes: 0 done, 1 a difference found (verify) or a failed
copy (sync), 2 bad input with one message."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..spec.errors import MISSING, Problem, SpecError
from .manifest import ROOT

CLOUDS = ("aws", "azure", "gcp")
DIFFERENCE = 1
INTERRUPTED = 130  # 128 + SIGINT, as a shell reports Ctrl-C


def add_commands(commands) -> None:
    migrate = commands.add_parser("migrate", help="move a local workload onto a cluster: capture, match, sync, verify")
    steps = migrate.add_subparsers(dest="step", required=True)

    capture = steps.add_parser("capture", help="write a manifest of the local Python, frameworks, GPUs and data")
    capture.add_argument("--python", help="interpreter whose packages to record (default: the one running gpufleet)")
    capture.add_argument("--data", type=Path, action="append", default=[], metavar="DIR",
                         help="data folder to hash and later sync (repeatable)")
    capture.add_argument("--out", type=Path, required=True, metavar="MANIFEST", help="manifest file to write (JSON)")
    capture.set_defaults(handler=run_capture)

    match = steps.add_parser("match", help="write a stack file with the equivalent cloud GPUs in the nearest region")
    match.add_argument("manifest", type=Path)
    match.add_argument("--cloud", choices=CLOUDS, required=True)
    match.add_argument("--region", help="use this region (no latency measured)")
    match.add_argument("--zone", help="AWS/GCP zone (default: the first zone the catalog lists for the type there)")
    match.add_argument("--gpu", help="use this catalog GPU instead of the captured one")
    match.add_argument("--ssh-public-key", type=Path, metavar="FILE",
                       help="OpenSSH public key for the nodes' user, needed by sync and verify (default: "
                            "~/.ssh/id_ed25519.pub when it exists)")
    match.add_argument("--out", type=Path, required=True, metavar="STACK_FILE")
    match.set_defaults(handler=run_match)

    sync = steps.add_parser("sync", help="rsync data and source to the cluster through the cloud's private path")
    _node_arguments(sync)
    sync.add_argument("--data", type=Path, action="append", default=[], metavar="DIR",
                      help="data folder to copy (repeatable; default: the manifest's data folders)")
    sync.add_argument("--bwlimit", type=int, metavar="KBPS", help="rsync bandwidth limit in KiB/s")
    sync.add_argument("--retries", type=int, default=3, metavar="N",
                      help="tries again when ssh cannot connect (the SSM agent restarts after boot); default 3")
    sync.set_defaults(handler=run_sync)

    verify = steps.add_parser("verify", help="check data, packages and your tests on the node; exit 1 on a difference")
    _node_arguments(verify)
    verify.add_argument("--python", default="python3", help="the node's interpreter (default: python3)")
    verify.add_argument("--test", metavar="COMMAND", help="command run on a node in the synced folder, e.g. "
                        "'pytest -q tests/'")
    verify.set_defaults(handler=run_verify)


def _node_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("stack", help="stack file written by `match` (or a stack name)")
    parser.add_argument("--host", action="append", default=[], metavar="NODE",
                        help="node to reach (repeatable): AWS instance id, GCP instance name, Azure VM resource id "
                             "(default: the stack's running nodes, listed with the cloud's CLI)")
    parser.add_argument("--to", metavar="PATH", help="folder on the node (default: <shared mount>/workload with a "
                        "shared filesystem, else ~/workload)")
    parser.add_argument("--manifest", type=Path, help="manifest (default: the one the stack file records)")
    parser.add_argument("--user", help="ssh user (default: ubuntu on AWS, azureuser on Azure, your name on GCP)")
    parser.add_argument("--identity", metavar="KEY", help="ssh private key")
    parser.add_argument("--zone", help="GCP: the instances' zone (default: the stack's zone)")
    parser.add_argument("--bastion", help="Azure: Bastion host name")
    parser.add_argument("--bastion-resource-group", help="Azure: the Bastion host's resource group")
    parser.add_argument("--proxy-command", help="ssh ProxyCommand to use instead of the cloud's (%%h host, %%p port)")
    parser.add_argument("--ssh-config", metavar="FILE", help="ssh config file (ssh -F)")
    parser.add_argument("--ssh-option", action="append", default=[], metavar="KEY=VALUE",
                        help="extra ssh -o option (repeatable)")


def run_capture(args: argparse.Namespace) -> int:
    from .capture import capture
    from .manifest import write_manifest

    manifest = capture(args.python, args.data)
    write_manifest(manifest, args.out)
    frameworks = manifest.frameworks
    gpus = ", ".join(f"{g.name} ({g.memory_mib} MiB)" for g in manifest.gpus) or "none"
    print(f"captured Python {manifest.python.version}, {len(manifest.python.packages)} packages, GPUs: {gpus}")
    if frameworks.cuda:
        print(f"CUDA {frameworks.cuda} (from {frameworks.cuda_source})" +
              (f", cuDNN {frameworks.cudnn} (from {frameworks.cudnn_source})" if frameworks.cudnn else ""))
    for package in manifest.python.packages:
        if package.note:
            print(f"  {package.name}: {package.note}")
    for folder in manifest.data:
        print(f"data {folder.name}: {folder.files} files, {folder.bytes:,} bytes")
    for note in manifest.notes:
        print(f"note: {note}")
    print(f"wrote {args.out}")
    return 0


def run_match(args: argparse.Namespace) -> int:
    from .manifest import read_manifest
    from .match import match, stack_text

    manifest = read_manifest(args.manifest)
    key = _public_key(args.ssh_public_key)
    result = match(manifest, args.cloud, region=args.region, gpu=args.gpu, zone=args.zone,
                   ssh_public_key=key)
    args.out.write_text(stack_text(result, args.manifest))
    cost = f"${result.hourly_usd:,.2f}/h on demand" if result.hourly_usd is not None else "no catalog price"
    print(f"{result.gpus_per_node} x {result.gpu.model} ({result.instance_type}) in {result.region}: {cost}")
    for latency in result.latencies:
        shown = f"{latency.median_ms:.0f} ms" if latency.median_ms is not None else "unreachable"
        print(f"  {latency.region:<24} {shown:>12}  {latency.endpoint}")
    for note in result.notes:
        print(f"note: {note}")
    if key is None:
        print("note: no SSH public key given: sync and verify need one on the nodes (--ssh-public-key)")
    print(f"wrote {args.out}; check it with `gpufleet plan {args.out}`")
    return 0


def run_sync(args: argparse.Namespace) -> int:
    from .stack import read_migration_stack
    from .sync import sync

    stack = read_migration_stack(args.stack, args.manifest)
    data = args.data or [Path(folder.path) for folder in stack.manifest.data]
    for folder in data:
        if not folder.is_dir():
            raise SpecError([Problem("--data", str(folder), "expected an existing folder")], root=ROOT)
    if not data and not stack.manifest.sources:
        raise SpecError([Problem("--data", MISSING, "nothing to copy: the manifest lists no data folders or sources; "
                                 "name a folder with --data")], root=ROOT)
    nodes = _nodes(args, stack)
    try:
        failed = sync(stack.manifest, nodes, data, stack.destination(args.to), stack.shared_mount is not None,
                      args.bwlimit, max(args.retries, 0))
    except KeyboardInterrupt:
        print("sync: interrupted; rsync kept the partial files: run the same command again to resume", flush=True)
        return INTERRUPTED
    return DIFFERENCE if failed else 0


def run_verify(args: argparse.Namespace) -> int:
    from .stack import read_migration_stack
    from .verify import verify

    stack = read_migration_stack(args.stack, args.manifest)
    report = verify(stack.manifest, _nodes(args, stack), stack.destination(args.to), stack.shared_mount is not None,
                    args.python, args.test)
    print(report.render())
    return DIFFERENCE if report.differences else 0


def _nodes(args: argparse.Namespace, stack):
    from .remote import Nodes, cloud_proxy_command, default_user, require_tools

    require_tools("ssh", "rsync")
    spec = stack.spec
    hosts, zone = tuple(args.host), args.zone or spec.zone
    if not hosts:
        from .discover import find_nodes

        found = find_nodes(args.stack, spec, args.zone)
        hosts, zone = found.hosts, zone or found.zone
        print(f"found {len(hosts)} running node(s) with `{found.how}`: {', '.join(hosts)}", flush=True)
    proxy = args.proxy_command or cloud_proxy_command(spec.cloud, spec.region, zone, args.bastion,
                                                      args.bastion_resource_group)
    return Nodes(hosts=hosts, user=args.user or default_user(spec.cloud), proxy_command=proxy,
                 identity=args.identity, ssh_config=args.ssh_config, options=tuple(args.ssh_option))


def _public_key(path: Path | None) -> str | None:
    default = Path.home() / ".ssh" / "id_ed25519.pub"
    chosen = path or (default if default.is_file() else None)
    if chosen is None:
        return None
    try:
        return chosen.read_text().strip()
    except OSError as err:
        raise SpecError([Problem("--ssh-public-key", str(chosen), f"cannot be read ({err.strerror})")],
                        root=ROOT) from None
