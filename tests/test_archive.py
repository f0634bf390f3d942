"""The archive on its own: the hot path's topics into Delta exactly once, even when the archive
is killed -9 mid-way and run again, and when the same match was published twice."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest
from job_helpers import (
    JOB_FILTERS,
    NAMES,
    archive_command,
    assert_outputs,
    drain_archive,
    expected_matches,
    wait_for,
)

from alertsieve.filtering.model import AlertFilter
from alertsieve.produce.producer import ProduceConfig, produce
from alertsieve.stream.config import JobConfig
from alertsieve.stream.job import run_job

ARCHIVE_PER_BATCH = 60


def _archive_command(bootstrap: str, topic: str, workdir: Path, *extra: str) -> list[str]:
    """Sixty records a batch, a batch a second: several batches (every match is published twice) to be killed among."""
    return [
        *archive_command(bootstrap, topic, workdir, *extra, per_batch=ARCHIVE_PER_BATCH),
        "--archive-trigger",
        "1",
    ]


def _committed(checkpoint: Path) -> int:
    commits = checkpoint / "commits"
    return sum(1 for p in commits.iterdir() if p.name.isdigit()) if commits.exists() else 0


@pytest.mark.slow
def test_the_archive_killed_mid_way_then_run_again_holds_every_match_once(
    kafka, spark, topic_name, tmp_path, processes
):
    bootstrap, schema_dir = kafka.bootstrap_servers, str(tmp_path / "schemas")
    assert produce(
        ProduceConfig(
            bootstrap=bootstrap,
            topic=topic_name,
            visits=1,
            alerts_per_visit=300,
            interval_s=0,
            stamp_size=0,
            seed=71,
            progress=False,
            schema_dir=schema_dir,
        )
    ).ok
    total, expected = expected_matches(bootstrap, topic_name, schema_dir)
    hot = JobConfig(
        bootstrap=bootstrap,
        topic=topic_name,
        output_prefix=f"{topic_name}-",
        sinks=["kafka"],
        available_now=True,
        max_offsets_per_trigger=100,
        discover_filters=False,
        metrics_path=None,
        checkpoint=str(tmp_path / "ckpt"),
        schema_dir=schema_dir,
        code_filters=[AlertFilter(name=n, sql=JOB_FILTERS[n][0]) for n in NAMES],
    )
    # The hot path twice from scratch (in this process): every match is on Kafka twice.
    for _ in range(2):
        run_job(hot, spark=spark)
        shutil.rmtree(tmp_path / "ckpt")
    published = sum(len(v) for v in expected.values()) * 2

    archive = processes(
        _archive_command(bootstrap, topic_name, tmp_path, "--timeout", "300"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_for(
        lambda: _committed(tmp_path / "ckpt-archive") >= 2, "two archive batches", 240, archive
    )
    os.killpg(archive.pid, signal.SIGKILL)
    archive.wait(30)
    assert _committed(tmp_path / "ckpt-archive") * ARCHIVE_PER_BATCH < published, "killed mid-way"

    drain_archive(spark, bootstrap, topic_name, tmp_path)  # run again: goes on from its checkpoint
    assert_outputs(spark, bootstrap, topic_name, tmp_path, expected)
