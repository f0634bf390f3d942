"""The warm process: one SparkSession kept between commands; each request runs a task of
``alertsieve.backtest.author_tasks`` in it, its report and log sent back as they are written.

Run by ``client.start`` as ``python -m alertsieve.warm.server FINGERPRINT``. Requests are served
one at a time (a command owns the session while it runs); the process stops after
``ALERTSIEVE_WARM_IDLE`` minutes without one, when asked, or when a client runs other code.
"""

from __future__ import annotations

import io
import logging
import os
import socket
import sys
import time
import traceback
from contextlib import redirect_stderr, redirect_stdout

from alertsieve.errors import AlertsieveError
from alertsieve.warm import protocol

log = logging.getLogger(__name__)


class _Forward(io.TextIOBase):
    """A text stream whose writes go to the client as ``{name: text}`` messages."""

    def __init__(self, conn: socket.socket, name: str) -> None:
        self.conn, self.name = conn, name

    def write(self, text: str) -> int:
        if text:
            protocol.send(self.conn, {self.name: text})
        return len(text)


def run_request(conn: socket.socket, request: dict) -> int:
    """The task ``request`` names, run here in its working directory at its log's verbosity; its
    exit code. An error the author can mend goes back as ``{"error": text}`` for the command to
    print as a cold one would."""
    from alertsieve import logs
    from alertsieve.backtest.author_tasks import TASKS

    os.chdir(request["cwd"])
    task = TASKS[request["task"]]
    out = _Forward(conn, "out")
    with redirect_stdout(out), redirect_stderr(_Forward(conn, "err")):
        logs.configure(request["verbosity"])
        try:
            return task(lambda line: out.write(line + "\n"), **request["arguments"])
        except AlertsieveError as e:
            protocol.send(conn, {"error": str(e)})
            return 2
        except Exception:  # a bug: its traceback, as a cold command would print it
            traceback.print_exc()
            return 1


def serve(fingerprint: str) -> None:
    """Start Spark, then answer requests until idle, stopped or stale."""
    from alertsieve.spark.session import get_session, stop_session

    started, served = time.time(), 0
    home = protocol.home()
    home.mkdir(parents=True, exist_ok=True)
    spark = get_session("alertsieve-warm", conf={"spark.ui.enabled": "false"})
    path = home / "socket"
    path.unlink(missing_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(8)
    listener.settimeout(protocol.idle_seconds())
    (home / "pid").write_text(str(os.getpid()))
    log.info("warm session ready (pid %d, %s)", os.getpid(), path)
    try:
        while True:
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                log.info("idle for %.0f minutes: stopping", protocol.idle_seconds() / 60)
                return
            with conn:
                conn.settimeout(None)
                request = next(protocol.messages(conn), {})
                if request.get("stop"):
                    protocol.send(conn, {"exit": 0})
                    return
                if request.get("status"):
                    status = {"pid": os.getpid(), "served": served, "since": started}
                    protocol.send(conn, {"status": status})
                    continue
                if request.get("fingerprint") != fingerprint:
                    protocol.send(conn, {"stale": True})
                    log.info("the library changed since this process started: stopping")
                    return
                try:
                    protocol.send(conn, {"exit": run_request(conn, request)})
                except OSError:  # the client went away (Ctrl-C): nothing to answer
                    log.info("a client left before its command finished")
                served += 1
    finally:
        # Gone from the socket first: a successor may bind it while this JVM stops.
        listener.close()
        path.unlink(missing_ok=True)
        stop_session(spark)
        pid = home / "pid"
        if pid.exists() and pid.read_text() == str(os.getpid()):  # not a successor's
            pid.unlink()


if __name__ == "__main__":
    from alertsieve import logs

    logs.configure()
    serve(sys.argv[1])
