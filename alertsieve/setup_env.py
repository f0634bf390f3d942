"""`alertsieve setup`: everything a fresh machine needs besides the Python packages.

Idempotent and cheap the second time: jar sets are cached by a manifest, and the spark-submit
defaults file is rewritten only with the jar list.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass

from alertsieve.spark.jars import JarSet, kafka_broker_jars, spark_connector_jars
from alertsieve.spark.own_jar import own_jar
from alertsieve.spark.submit import install_spark_defaults, use_this_interpreter_for_spark_home


@dataclass
class SetupReport:
    steps: list[str]
    seconds: float


def _describe(what: str, jars: JarSet) -> str:
    verb = "downloaded" if jars.downloaded else "cached"
    size = sum(j.stat().st_size for j in jars.jars) / 1e6
    return f"{what}: {len(jars.jars)} jars, {size:.0f} MB ({verb}, {jars.seconds:.1f}s)"


def run_setup() -> SetupReport:
    start = time.monotonic()
    steps = [
        _describe("Kafka broker", kafka_broker_jars()),
        _describe("Spark connectors (Kafka, Avro, Delta)", spark_connector_jars()),
        f"alertsieve's Java code: {own_jar()}",
        f"spark-submit defaults: {install_spark_defaults()}",
    ]
    script = use_this_interpreter_for_spark_home()
    if script:
        steps.append(f"spark-submit finds Spark with {sys.executable} ({script})")
    return SetupReport(steps, time.monotonic() - start)
