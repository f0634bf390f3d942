"""The session builder: settings precedence, connectors present, spark-submit configured."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

import pytest

from alertsieve.spark import session as spark_mod


def test_caller_settings_win_and_local_sessions_stay_on_loopback(monkeypatch):
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    monkeypatch.delenv("ALERTSIEVE_SPARK_MASTER", raising=False)
    conf = spark_mod.session_conf(conf={"spark.sql.shuffle.partitions": "7"})
    assert conf["spark.master"] == "local[*]"
    assert conf["spark.sql.shuffle.partitions"] == "7"
    assert conf["spark.driver.bindAddress"] == "127.0.0.1"
    kafka = f"spark-sql-kafka-0-10_2.13-{importlib.metadata.version('pyspark')}.jar"
    assert kafka in conf["spark.jars"]
    assert conf["spark.pyspark.python"] == sys.executable


def test_master_from_argument_then_environment(monkeypatch):
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    monkeypatch.setenv("ALERTSIEVE_SPARK_MASTER", "local[3]")
    assert spark_mod.session_conf()["spark.master"] == "local[3]"
    assert spark_mod.session_conf(master="spark://127.0.0.1:7077")["spark.master"] == (
        "spark://127.0.0.1:7077"
    )


def test_under_spark_submit_the_submitted_master_and_jars_are_kept(monkeypatch):
    monkeypatch.setenv("PYSPARK_GATEWAY_PORT", "1")
    conf = spark_mod.session_conf()
    assert "spark.master" not in conf and "spark.jars" not in conf
    assert "spark.driver.bindAddress" not in conf


def test_session_has_kafka_avro_and_delta(spark, tmp_path):
    utils = spark.sparkContext._jvm.org.apache.spark.util.Utils
    for cls in spark_mod.CONNECTOR_CLASSES.values():
        assert utils.classIsLoadable(cls), cls
    spark.range(5).write.format("delta").save(str(tmp_path / "t"))
    assert spark.read.format("delta").load(str(tmp_path / "t")).count() == 5
    # Avro's plain reader: the fast one's cache keeps every task's schemas for ever (AVRO-4253)
    assert (
        not spark.sparkContext._jvm.org.apache.avro.generic.GenericData.get().isFastReaderEnabled()
    )


def _spark_submit(script: Path, **env: str) -> subprocess.CompletedProcess:
    """Run pyspark's spark-submit as a user would, with this venv first on PATH."""
    bindir = Path(sys.executable).parent
    full_env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}", **env}
    return subprocess.run(
        [str(bindir / "spark-submit"), "--master", "local[1]", str(script)],
        capture_output=True,
        text=True,
        timeout=180,
        env=full_env,
    )


# That plain spark-submit finds the connectors `make setup` configured (Kafka, Avro, Delta, the
# submitted master kept, Avro's plain reader) is test_front_door's
# test_spark_submit_finds_the_connectors, in the JVM of its log checks, without the venv on PATH.


@pytest.mark.slow
def test_spark_submit_with_avros_fast_reader_says_how_to_turn_it_off(tmp_path):
    """A spark-defaults.conf from before the Avro option (the connectors, nothing else): the job
    runs, and warns that its heap will grow, naming the fix."""
    from alertsieve.spark.submit import submit_defaults

    script = tmp_path / "job.py"
    script.write_text(
        "from alertsieve.spark.session import get_session\n"
        "get_session(conf={'spark.ui.enabled': 'false'}).stop()\n"
    )
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "spark-defaults.conf").write_text(f"spark.jars {submit_defaults()['spark.jars']}\n")
    out = _spark_submit(script, SPARK_CONF_DIR=str(conf))
    assert out.returncode == 0, out.stderr[-2000:]
    said = " ".join((out.stdout + out.stderr).split())
    assert (
        "Avro's fast reader is on in this Spark: a streaming job's heap will grow with every batch"
        in said
    )
    assert (
        f"(it writes {conf / 'spark-defaults.conf'}), or add -Dorg.apache.avro.fastread=false"
        in said
    )


@pytest.mark.integration
def test_spark_submit_without_connectors_fails_with_the_fix(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(
        "from alertsieve.spark.session import get_session\nget_session(conf={'spark.ui.enabled': 'false'})\n"
    )
    empty_conf = tmp_path / "conf"
    empty_conf.mkdir()
    out = _spark_submit(script, SPARK_CONF_DIR=str(empty_conf))
    assert out.returncode != 0
    # spark-submit's PythonRunner forwards the Python process's stderr to its stdout.
    said = out.stdout + out.stderr
    assert "the Spark connectors for Kafka, Avro, Delta are not on spark-submit's classpath" in said
    assert f"run `make setup` (it writes {empty_conf / 'spark-defaults.conf'})" in said


def test_constants_written_as_sql_text_read_back_as_python_wrote_them(spark):
    """``constant_array`` (thousands of labels in one call to the JVM) keeps quotes,
    backslashes, nulls, bytes and integers as they were."""
    from alertsieve.spark.constants import constant_array

    texts = ["it's", "back\\slash", "'; DROP", None, "ünïcode", ""]
    numbers = [0, -3, 2**40, None]
    headers = [b"\x00\x00\x00\x03\xe8", b"", None]
    row = (
        spark.range(1)
        .select(
            constant_array(texts, "string").alias("t"),
            constant_array(numbers, "bigint").alias("n"),
            constant_array(headers, "binary").alias("h"),
            constant_array([], "int").alias("e"),
        )
        .first()
    )
    assert row["t"] == texts
    assert row["n"] == numbers
    assert [None if h is None else bytes(h) for h in row["h"]] == headers
    assert row["e"] == []
