"""What a benchmark ran on: a number means little without the cores, memory and versions
behind it, so every benchmark and experiment result carries this record."""

from __future__ import annotations

import platform
import re
import shutil
import subprocess
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import psutil

from alertsieve.spark.jars import DELTA_VERSION, KAFKA_VERSION, SPARK_VERSION


def _package(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


@cache
def _java() -> str | None:
    java = shutil.which("java")
    if not java:
        return None
    out = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
    found = re.search(r'version "([^"]+)"', out)
    return found.group(1) if found else None


def _cpu_model() -> str | None:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or None
    found = re.search(r"^model name\s*:\s*(.+)$", text, re.M)
    return found.group(1).strip() if found else None


def describe(broker: str) -> dict:
    """Hardware and software of this run; ``broker`` says where Kafka ran."""
    return {
        "cores": psutil.cpu_count(),
        "cpu": _cpu_model(),
        "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "java": _java(),
        "alertsieve": _package("alertsieve"),
        "pyspark": _package("pyspark"),
        "spark_kafka_connector": SPARK_VERSION,
        "delta": DELTA_VERSION,
        "kafka_broker": KAFKA_VERSION,
        "confluent_kafka": _package("confluent-kafka"),
        "broker": broker,
    }
