"""Stands in for `az network bastion tunnel --target-resource-id ID --resource-port P --port LOCAL ...`: listens on
127.0.0.1:LOCAL and joins each connection to the test sshd (FAKE_BASTION_SSHD_PORT), as Bastion joins it to the VM's
port P. Appends the target resource id to FAKE_BASTION_LOG. Runs until killed, as the real tunnel does."""

import os
import signal
import socket
import sys
import threading

signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C ends it quietly, as it ends the real tunnel

args = sys.argv[1:]
if args[:3] != ["network", "bastion", "tunnel"]:
    sys.exit(f"fake az: unexpected command {args}")
options = dict(zip(args[3::2], args[4::2], strict=False))
with open(os.environ["FAKE_BASTION_LOG"], "a") as log:
    log.write(f"{options['--name']} {options['--resource-group']} {options['--target-resource-id']} "
              f"{options['--resource-port']}\n")
listener = socket.create_server(("127.0.0.1", int(options["--port"])))


def pipe(source, target):
    while True:
        data = source.recv(65536)
        if not data:
            try:
                target.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            return
        target.sendall(data)


while True:
    client, _ = listener.accept()
    server = socket.create_connection(("127.0.0.1", int(os.environ["FAKE_BASTION_SSHD_PORT"])))
    threading.Thread(target=pipe, args=(client, server), daemon=True).start()
    threading.Thread(target=pipe, args=(server, client), daemon=True).start()
