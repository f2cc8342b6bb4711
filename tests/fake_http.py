"""The loopback HTTP server the fakes of cloud endpoints share: a free port, a serving thread, a quick shutdown."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class QuietHandler(BaseHTTPRequestHandler):
    """A request handler that logs nothing (tests read what the fake records instead)."""

    def log_message(self, *args):
        pass

    def _send(self, code: int, body: str):
        data = body.encode()
        self.send_response(code)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class LoopbackServer:
    """`handler` served on 127.0.0.1 at a free port once `start()` runs; `close()` returns within about 20 ms."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]):
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"

    def start(self) -> LoopbackServer:
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        return self

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


JsonResponder = Callable[[str, str, dict, Any], tuple[int, dict, Any]]
"""(method, path, request headers, JSON body or None) -> (status, extra response headers, JSON answer)."""


def json_api_server(respond: JsonResponder, methods: tuple[str, ...]) -> LoopbackServer:
    """A loopback JSON API (the Compute Engine and Azure Resource Manager fakes): each request in `methods` goes to
    `respond`, its answer written back as `application/json` with the headers it adds."""

    def answer(handler: QuietHandler, method: str) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        body = json.loads(handler.rfile.read(length)) if length else None
        code, headers, reply = respond(method, handler.path, dict(handler.headers), body)
        data = json.dumps(reply).encode()
        handler.send_response(code)
        for key, value in {"Content-Type": "application/json", **headers}.items():
            handler.send_header(key, value)
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    def handles(method: str) -> Callable[[QuietHandler], None]:
        return lambda handler: answer(handler, method)

    return LoopbackServer(type("JsonApiHandler", (QuietHandler,), {f"do_{m}": handles(m) for m in methods}))
