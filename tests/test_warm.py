"""The warm session a filter author's commands share (alertsieve.warm): the first `alertsieve
backtest` starts it, the next is answered by it, a filter edited in between is read afresh, and
`warm stop` ends its JVM. Over `tests/data/real` (Rubin and ZTF files) a Rubin filter reads the
Rubin alerts and leaves the ZTF ones aside, none called undecodable; counts from fastavro."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import fastavro
import pytest

pytestmark = pytest.mark.integration  # starts the warm process's JVM

REAL = Path(__file__).parent / "data" / "real"
FILTER = (
    "from alertsieve.filtering.model import AlertFilter\n\n"
    'FILTER = AlertFilter(name="significant", survey="rubin", sql="diaSource.snr > {snr}")\n'
)


def _alerts_by_survey() -> dict[str, list[dict]]:
    """Every alert of tests/data/real by survey, told by its writer schema's name."""
    found: dict[str, list[dict]] = {"rubin": [], "ztf": []}
    for path in sorted(REAL.rglob("*.avro")):
        with open(path, "rb") as f:
            reader = fastavro.reader(f)
            survey = "ztf" if reader.writer_schema["name"] == "ztf.alert" else "rubin"
            found[survey] += list(reader)
    return found


def _alertsieve(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "alertsieve.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _gone(pid: int) -> bool:
    """No such process, or only its exit status left (a zombie no init has reaped yet)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] == "Z"
    except FileNotFoundError:
        return True


def test_backtests_share_a_warm_session_read_edits_and_leave_other_surveys_aside(tmp_path):
    alerts = _alerts_by_survey()
    snr = [a["diaSource"]["snr"] for a in alerts["rubin"]]
    assert alerts["ztf"] and 0 < sum(s > 7 for s in snr) < sum(s > 5.5 for s in snr) < len(snr)
    env = {**os.environ, "ALERTSIEVE_WARM": "on", "ALERTSIEVE_CACHE": str(tmp_path / "cache")}
    folder = tmp_path / "filters"
    folder.mkdir()
    command = ["backtest", "--input", str(REAL), "--filter-path", str(folder)]
    command += ["--filter", "significant", "--max-rate", "1"]
    try:
        for served, cut in enumerate((5.5, 7.0), start=1):
            (folder / "significant.py").write_text(FILTER.format(snr=cut))
            done = _alertsieve(env, *command)
            assert done.returncode == 0, done.stderr
            row = done.stdout.splitlines()[1].split()
            expected = sum(s > cut for s in snr)
            assert row[:3] == ["significant", str(expected), str(len(alerts["rubin"]))]
            assert row[-2:] == ["rubin", str(len(alerts["ztf"]))]  # left aside, not undecodable
            assert "could not be decoded" not in done.stderr
            assert ("starting a warm Spark session" in done.stderr) == (served == 1)
            status = _alertsieve(env, "warm", "status").stdout
            assert f"{served} command(s) served" in status
        pid = int(status.split("pid ")[1].split(",")[0])
        # A night crosses to the warm process as a date, and an error the author can mend reads
        # as a cold command's (exit 2, no traceback): none of these alerts is before 2000.
        early = _alertsieve(env, *command, "--until", "2000-01-01")
        assert early.returncode == 2 and "Traceback" not in early.stderr
        assert early.stderr.splitlines()[-1] == (
            "alertsieve backtest: error: no alert of the input decodes in the nights ... to 2000-01-01"
        )
    finally:
        stopped = _alertsieve(env, "warm", "stop")
    assert stopped.stdout.strip() == "the warm session stopped"
    deadline = time.monotonic() + 30  # its interpreter's last steps after the pid file goes
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _gone(pid)
    assert _alertsieve(env, "warm", "status").stdout.strip() == "no warm session is running"
