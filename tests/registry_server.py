"""A Confluent Schema Registry as far as alertsieve uses one, over real HTTP on 127.0.0.1: no
Confluent server is installable here, and the point is to test confluent-kafka's own client (and
our store on it) against the registry's REST API, not a stand-in for the client.

What it answers, as the registry's API reference gives it: POST /subjects/{subject}/versions
(register: the same schema text keeps its id under any subject), GET /schemas/ids/{id},
GET /subjects/{subject}/versions and GET /subjects/{subject}/versions/{version}; anything else,
or an unknown id or subject, is the registry's 404 with its error code.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

#: Ids start far from Rubin's official ones (704, 1101...), so a test can tell whose id a message carries.
FIRST_ID = 100_001


class Registry:
    def __init__(self) -> None:
        self.schemas: list[str] = []  # id FIRST_ID + i
        self.subjects: dict[str, list[int]] = {}  # subject -> ids, version = index + 1
        self.lock = threading.Lock()

    def register(self, subject: str, text: str) -> int:
        with self.lock:
            if text not in self.schemas:
                self.schemas.append(text)
            schema_id = FIRST_ID + self.schemas.index(text)
            versions = self.subjects.setdefault(subject, [])
            if schema_id not in versions:
                versions.append(schema_id)
            return schema_id


def _handler(registry: Registry) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _reply(self, status: int, body) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _parts(self) -> list[str]:
            return [unquote(p) for p in urlsplit(self.path).path.strip("/").split("/")]

        def _not_found(self, code: int, message: str) -> None:
            self._reply(404, {"error_code": code, "message": message})

        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            parts = self._parts()
            if len(parts) != 3 or parts[0] != "subjects" or parts[2] != "versions":
                return self._not_found(404, f"no such endpoint {self.path}")
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            self._reply(200, {"id": registry.register(parts[1], body["schema"])})

        def do_GET(self) -> None:  # noqa: N802
            parts = self._parts()
            if len(parts) == 3 and parts[:2] == ["schemas", "ids"]:
                index = int(parts[2]) - FIRST_ID
                if not 0 <= index < len(registry.schemas):
                    return self._not_found(40403, f"Schema {parts[2]} not found")
                return self._reply(200, {"schema": registry.schemas[index]})
            if len(parts) >= 3 and parts[0] == "subjects" and parts[2] == "versions":
                ids = registry.subjects.get(parts[1])
                if ids is None:
                    return self._not_found(40401, f"Subject '{parts[1]}' not found.")
                if len(parts) == 3:
                    return self._reply(200, list(range(1, len(ids) + 1)))
                version = len(ids) if parts[3] == "latest" else int(parts[3])
                if not 1 <= version <= len(ids):
                    return self._not_found(40402, f"Version {parts[3]} not found.")
                schema_id = ids[version - 1]
                return self._reply(
                    200,
                    {
                        "subject": parts[1],
                        "version": version,
                        "id": schema_id,
                        "schema": registry.schemas[schema_id - FIRST_ID],
                    },
                )
            self._not_found(404, f"no such endpoint {self.path}")

        def log_message(self, *args) -> None:  # the test's output stays the test's
            pass

    return Handler


@contextmanager
def serve() -> Iterator[tuple[str, Registry]]:
    """A registry on a free port of 127.0.0.1: (its URL, its contents), stopped on exit."""
    registry = Registry()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(registry))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", registry
    finally:
        server.shutdown()
        server.server_close()
