"""qemu guestfwd helper: relays one guest connection (stdin/stdout) to the fake metadata server on 127.0.0.1."""

import os
import selectors
import socket
import sys


def main() -> None:
    sock = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    selector = selectors.DefaultSelector()
    selector.register(sys.stdin.buffer, selectors.EVENT_READ)
    selector.register(sock, selectors.EVENT_READ)
    while True:
        for key, _ in selector.select():
            if key.fileobj is sock:
                data = sock.recv(65536)
                if not data:
                    return
                os.write(1, data)
            else:
                data = os.read(0, 65536)
                if not data:
                    sock.shutdown(socket.SHUT_WR)
                    selector.unregister(sys.stdin.buffer)
                    continue
                sock.sendall(data)


if __name__ == "__main__":
    main()
