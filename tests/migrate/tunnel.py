"""Plays the cloud tunnel's role as an ssh ProxyCommand: `tunnel.py PORT LOG HOST` joins stdin/stdout to
127.0.0.1:PORT (the test sshd) and appends HOST to LOG, so a test can see which node each connection was for.
`aws ssm start-session ... AWS-StartSSHSession` and `gcloud compute start-iap-tunnel --listen-on-stdin` do the
same with a private path instead of loopback."""

import os
import signal
import socket
import sys
import threading

signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C ends it quietly, as it ends the real tunnel

port, log, host = int(sys.argv[1]), sys.argv[2], sys.argv[3]
with open(log, "a") as handle:
    handle.write(host + "\n")
conn = socket.create_connection(("127.0.0.1", port))


def upstream():
    while True:
        data = os.read(0, 65536)
        if not data:
            conn.shutdown(socket.SHUT_WR)
            return
        conn.sendall(data)


threading.Thread(target=upstream, daemon=True).start()
while True:
    data = conn.recv(65536)
    if not data:
        break
    while data:
        data = data[os.write(1, data):]
