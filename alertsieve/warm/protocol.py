"""What the warm client and server say to each other: one JSON line a message over a Unix
socket. The client sends a request (a task of ``alertsieve.backtest.author_tasks`` by name, its
arguments, the log's verbosity, the working directory, the library's fingerprint); the server
answers with output chunks, then the exit code or the error the command prints."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import sys
from datetime import date
from pathlib import Path

from alertsieve.paths import cache_dir

#: Minutes a warm process waits for its next command before it stops (``ALERTSIEVE_WARM_IDLE``).
DEFAULT_IDLE_MINUTES = 30.0


def enabled() -> bool:
    """Whether commands go through the warm process (``ALERTSIEVE_WARM=off`` runs them cold)."""
    return os.environ.get("ALERTSIEVE_WARM", "on").lower() not in ("0", "off", "no", "false")


def idle_seconds() -> float:
    return 60 * float(os.environ.get("ALERTSIEVE_WARM_IDLE", DEFAULT_IDLE_MINUTES))


def _library_files() -> list[Path]:
    import alertsieve

    root = Path(alertsieve.__file__).parent
    return sorted(root.rglob("*.py"))


def home() -> Path:
    """This interpreter's warm process's folder (socket, log, pid): one per environment and
    checkout, so two checkouts never answer for each other."""
    import alertsieve

    key = hashlib.sha1(f"{sys.executable}|{Path(alertsieve.__file__).parent}".encode()).hexdigest()
    return cache_dir() / "warm" / key[:12]


def fingerprint() -> str:
    """The library's code as this process sees it (paths, sizes and times): a warm process
    started from other code answers "stale" and is replaced, so an edit never runs old code."""
    digest = hashlib.sha1()
    for path in _library_files():
        stat = path.stat()
        digest.update(f"{path}|{stat.st_size}|{stat.st_mtime_ns}".encode())
    return digest.hexdigest()


def _encoded(value: object) -> dict:
    """A value JSON has no type for, as an object naming its type (a night: ``--since``)."""
    if isinstance(value, date):
        return {"date": value.isoformat()}
    raise TypeError(f"a warm request cannot carry {type(value).__name__} {value!r}")


def _decoded(obj: dict) -> object:
    return date.fromisoformat(obj["date"]) if obj.keys() == {"date"} else obj


def send(sock: socket.socket, message: dict) -> None:
    sock.sendall(json.dumps(message, default=_encoded).encode() + b"\n")


def messages(sock: socket.socket):
    """The JSON messages arriving on ``sock``, until it closes."""
    with sock.makefile("rb") as stream:
        for line in stream:
            yield json.loads(line, object_hook=_decoded)
