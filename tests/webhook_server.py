"""A webhook receiver for tests: a local HTTP server (the standard library's) that refuses every
``refuse_every``-th request with a 503, can go down for a while and come back on the same port,
and logs the JSON bodies it acknowledged."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 (the standard library's name)
        body = self.rfile.read(int(self.headers["Content-Length"]))
        hook = self.server.hook
        with hook.lock:
            hook.requests += 1
            refused = hook.refuse_every and hook.requests % hook.refuse_every == 0
            if not refused:
                hook.log.append(json.loads(body))
        self.send_response(503 if refused else 200)
        self.end_headers()
        if not refused:
            self.wfile.write(b"ok")
        if not refused and hook.down_after == len(hook.log):
            threading.Thread(target=hook.outage, daemon=True).start()

    def log_message(self, *args):
        pass


class FlakyWebhook:
    """``url``; ``log`` (bodies acknowledged, in order); ``requests`` (all answered); down for
    ``down_for`` seconds after the ``down_after``-th acknowledged post (0: never)."""

    def __init__(self, refuse_every: int = 5, down_after: int = 0, down_for: float = 10.0):
        self.refuse_every, self.down_after, self.down_for = refuse_every, down_after, down_for
        self.requests, self.log, self.lock = 0, [], threading.Lock()
        self.outages = 0
        self._server = self._serve(0)
        self.port = self._server.server_port
        self.url = f"http://127.0.0.1:{self.port}/hook"
        self._back = threading.Event()

    def _serve(self, port: int) -> ThreadingHTTPServer:
        server = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
        server.hook = self
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server

    def outage(self) -> None:
        """Down (the port closed: connections refused), then back on the same port."""
        self._server.shutdown()
        self._server.server_close()
        self.outages += 1
        stopped = threading.Event()
        stopped.wait(self.down_for)  # the outage itself, not a wait for a condition
        self._server = self._serve(self.port)
        self._back.set()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
