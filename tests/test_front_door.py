"""What a new user meets first: `make demo`'s command leaves nothing running and prints no Spark
log noise; the venv's spark-submit runs the job without the venv activated and finds the
connectors; Spark's own real warnings still reach the console."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from job_helpers import assert_reads_as_success

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
SPARK_LOG_LINE = re.compile(r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d (INFO|WARN) ", re.M)


def _processes_with(marker: str) -> list[str]:
    """Command lines of the processes whose environment carries ``marker``: everything a command
    started inherits it (Spark's JVM, the broker, producers, multiprocessing's helpers)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if marker.encode() in (proc / "environ").read_bytes():
                found.append((proc / "cmdline").read_bytes().replace(b"\0", b" ").decode())
        except OSError:  # gone, or not ours to read
            continue
    return found


def _clean_env(**extra: str) -> dict[str, str]:
    """A shell where the venv was never activated: system PATH, no VIRTUAL_ENV."""
    keep = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    return {**keep, "PATH": "/usr/local/bin:/usr/bin:/bin", **extra}


@pytest.mark.slow
@pytest.mark.integration
def test_demo_leaves_nothing_running_and_no_spark_log_lines():
    """`make demo` as a new user runs it, with --keep as a subscriber trying it would: the broker
    stays with the matches, `listen --verify` proves a topic complete on it, and the command the
    demo printed stops it, leaving nothing running (without --keep the same cleanup runs at once)."""
    marker = f"ALERTSIEVE_TEST_MARK={uuid.uuid4().hex}"
    name, value = marker.split("=")
    env = _clean_env(**{name: value})
    command = [str(BIN / "alertsieve"), "demo", "--visits", "1", "--alerts-per-visit", "300"]
    done = subprocess.run(
        [*command, "--keep"], capture_output=True, text=True, timeout=600, cwd=ROOT, env=env
    )
    said = done.stdout + done.stderr
    assert done.returncode == 0, said[-3000:]
    assert (
        "Verdict  : 504 read = 500 alerts + 4 malformed; 4 quarantined; nothing lost" in said
    )  # with the warm-up
    assert SPARK_LOG_LINE.findall(said) == [], said
    assert_reads_as_success(said)
    # Two cores here: Real-Time Mode, and the latency of the warm-up apart from the visits'.
    assert "Real-Time Mode, the archive after the stream" in said, said
    assert re.search(r"Latency  : cold start, the warm-up's \d+ matches: p50 \d+ ms", said), said
    assert re.search(r"Latency  : steady, the visits' \d+ matches: p50 \d+ ms, p99 \d+ ms", said), (
        said
    )
    kept = re.search(r"Kept     : the broker at (\S+),", said)
    assert kept, said
    matched = re.search(r"Filter   : (\S+) +(\d+) matches -> topic (\S+)", said)
    assert matched and int(matched[2]) > 0, said
    listen = [str(BIN / "alertsieve"), "listen", "--bootstrap", kept[1], "--topic", matched[3]]
    listen += ["--from-beginning", "--until-end", "--verify", "--quiet"]
    heard = subprocess.run(listen, capture_output=True, text=True, timeout=180, env=env)
    assert heard.returncode == 0, heard.stdout + heard.stderr
    assert f"verified: complete, {matched[2]} of {matched[2]}" in heard.stdout, heard.stdout
    assert [p for p in _processes_with(marker) if "kafka" in p] != []  # the broker, kept
    (stop,) = re.findall(r"^ +(alertsieve kafka stop .*)$", said, re.M)
    stopped = subprocess.run(
        [str(BIN / "alertsieve"), *stop.split()[1:]], capture_output=True, text=True, env=env
    )
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    assert _processes_with(marker) == []


@pytest.mark.integration
def test_venv_spark_submit_runs_the_job_without_the_venv_activated():
    done = subprocess.run(
        [str(BIN / "spark-submit"), "jobs/filter_stream.py", "--help"],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT,
        env=_clean_env(),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "--max-offsets-per-trigger" in done.stdout and "--sql NAME=EXPRESSION" in done.stdout


@pytest.fixture(scope="module")
def submitted(tmp_path_factory) -> subprocess.CompletedProcess:
    """A script run by the venv's plain spark-submit without the venv activated, as a user runs
    one: it starts a session, says what it got, and logs a real warning and a line of noise. One
    JVM for the two tests below."""
    script = tmp_path_factory.mktemp("submitted") / "job.py"
    script.write_text(
        "from alertsieve.spark.session import get_session\n"
        "s = get_session(conf={'spark.ui.enabled': 'false'})\n"
        "print('MASTER', s.sparkContext.master)\n"
        "print('FAST AVRO', s.sparkContext._jvm.org.apache.avro.generic.GenericData.get().isFastReaderEnabled())\n"
        "jvm = s.sparkContext._jvm\n"
        "jvm.org.apache.logging.log4j.LogManager.getLogger('org.apache.spark.scheduler.TaskSetManager')"
        ".warn('a real warning')\n"
        "jvm.org.apache.logging.log4j.LogManager.getLogger('org.apache.hadoop.util.NativeCodeLoader')"
        ".warn('noise')\n"
        "s.stop()\n"
    )
    done = subprocess.run(
        [str(BIN / "spark-submit"), "--master", "local[1]", str(script)],
        capture_output=True,
        text=True,
        timeout=180,
        env=_clean_env(),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done


@pytest.mark.integration
def test_spark_submit_finds_the_connectors(submitted):
    """`make setup` wrote spark-defaults.conf, so plain spark-submit loads Kafka/Avro/Delta (the
    session starts: it checks them), keeps the submitted master and Avro's plain reader. (Was in
    test_spark_session, with the venv on PATH; here without it.)"""
    assert "MASTER local[1]" in submitted.stdout, submitted.stdout
    assert "FAST AVRO False" in submitted.stdout, submitted.stdout


@pytest.mark.integration
def test_spark_noise_is_silenced_but_real_warnings_show(submitted):
    lines = SPARK_LOG_LINE.findall(submitted.stderr)
    assert re.search(r"WARN TaskSetManager: a real warning", submitted.stderr), submitted.stderr
    assert "noise" not in submitted.stderr and lines == ["WARN"]
