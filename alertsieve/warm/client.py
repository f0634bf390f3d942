"""The command side of the warm process: hand it a command line, print what it answers, and
start it when none is running (or the one running has older code)."""

from __future__ import annotations

import fcntl
import logging
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from alertsieve.errors import AlertsieveError
from alertsieve.warm import protocol

log = logging.getLogger(__name__)

#: Seconds a warm process may take to start its JVM and session before the command gives up.
START_TIMEOUT = 180.0


class WarmError(AlertsieveError, RuntimeError):
    """The warm process could not be started or reached."""


def connect(home: Path) -> socket.socket | None:
    """A connection to the warm process of ``home``, or None when none answers."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(home / "socket"))
    except OSError:
        sock.close()
        return None
    return sock


def wait_for_exit(home: Path, timeout: float = 60.0) -> None:
    """Until the process named in ``home``'s pid file is gone (a stale one stopping)."""
    deadline = time.monotonic() + timeout
    while (home / "pid").exists() and time.monotonic() < deadline:
        time.sleep(0.2)


def start(home: Path, fingerprint: str) -> socket.socket:
    """Start a warm process (once, however many commands ask at the same moment) and return a
    connection to it when its session is ready."""
    home.mkdir(parents=True, exist_ok=True)
    with open(home / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        sock = connect(home)
        if sock is not None:
            return sock
        log.info(
            "starting a warm Spark session for this and later commands (it stops after %.0f"
            " idle minutes, or with: alertsieve warm stop)",
            protocol.idle_seconds() / 60,
        )
        with open(home / "log", "ab") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "alertsieve.warm.server", fingerprint],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                start_new_session=True,  # outlives this command, and its Ctrl-C
            )
        deadline = time.monotonic() + START_TIMEOUT
        while (sock := connect(home)) is None:
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = (home / "log").read_text(errors="replace").splitlines()[-15:]
                raise WarmError(
                    "the warm Spark session did not start; its log ends:\n"
                    + "\n".join(tail)
                    + "\n(ALERTSIEVE_WARM=off runs the command without it)"
                )
            time.sleep(0.2)
        return sock


class TaskError(AlertsieveError):
    """An error the warm session's task raised, its text as the task said it."""


def run(task: str, arguments: dict, verbosity: int) -> int:
    """The task of ``alertsieve.backtest.author_tasks`` named ``task`` run by the warm process
    (started if need be) with ``arguments``; what it says printed here as it comes; its exit code.
    Its error, raised here as a ``TaskError``."""
    home, fingerprint = protocol.home(), protocol.fingerprint()
    request = {"task": task, "arguments": arguments, "verbosity": verbosity, "cwd": os.getcwd()}
    for _ in range(2):  # a stale process answers once, then a fresh one runs the task
        sock = connect(home) or start(home, fingerprint)
        error = None
        with sock:
            protocol.send(sock, {**request, "fingerprint": fingerprint})
            for message in protocol.messages(sock):
                if "out" in message:
                    sys.stdout.write(message["out"])
                    sys.stdout.flush()
                elif "err" in message:
                    sys.stderr.write(message["err"])
                    sys.stderr.flush()
                elif "error" in message:
                    error = TaskError(message["error"])
                elif "exit" in message:
                    if error is not None:
                        raise error
                    return int(message["exit"])
                elif message.get("stale"):
                    break
        wait_for_exit(home)
    raise WarmError(f"the warm process at {home} did not answer; its log: {home / 'log'}")


def ask(message: dict) -> dict | None:
    """One message to the running warm process (status, stop) and its answer; None when none runs."""
    sock = connect(protocol.home())
    if sock is None:
        return None
    with sock:
        protocol.send(sock, message)
        return next(protocol.messages(sock), None)
