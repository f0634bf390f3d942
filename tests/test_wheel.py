"""A wheel built from this checkout carries what the job needs at run time: installed (not
editable) into a fresh virtual environment and run from another folder, it finds the contributed
filters (through their entry point), ZTF's schemas and the demo's settings, checks the filters,
and runs a short job on real ZTF alerts. The new environment borrows the dependencies of this
one (a path line in a .pth file: their own .pth files, this checkout's editable install among
them, are not read), so only alertsieve comes from the wheel. A job that finds no filter at all
refuses to start, saying where it looked."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
from confluent_kafka import Producer
from crafted import ztf_history_files
from job_helpers import assert_reads_as_success
from wheels import install_wheel

from alertsieve.filtering.discovery import discover
from alertsieve.filtering.model import FilterError
from alertsieve.kafka.topics import create_topic
from alertsieve.stream.config import JobConfig
from alertsieve.stream.plan import select_filters

ROOT = Path(__file__).resolve().parents[1]
pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
]  # builds and installs a wheel, runs processes


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> tuple[Path, Path, Path]:
    """(the wheel, the environment's bin folder, a folder that is not this checkout)."""
    work = tmp_path_factory.mktemp("venv")
    venv = work / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120
    )
    site = next((venv / "lib").glob("python*/site-packages"))
    (site / "borrowed_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    install_wheel(wheel, venv / "bin" / "python")
    elsewhere = work / "elsewhere"
    elsewhere.mkdir()
    return wheel, venv / "bin", elsewhere


def _run(installed, *args: str) -> subprocess.CompletedProcess:
    _, bin_dir, elsewhere = installed
    return subprocess.run(
        [str(bin_dir / "alertsieve"), *args],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_wheel_holds_the_filters_the_schemas_and_the_settings(installed):
    names = set(zipfile.ZipFile(installed[0]).namelist())
    for module in sorted((ROOT / "filters").glob("[!_]*.py")):
        assert f"alertsieve_filters/{module.name}" in names
    for schema in sorted((ROOT / "schemas" / "ztf").glob("*.avsc")):
        assert f"alertsieve_schemas/ztf/{schema.name}" in names
    for schema in sorted((ROOT / "schemas").glob("rubin/**/*.avsc")):
        assert f"alertsieve_schemas/{schema.relative_to(ROOT / 'schemas').as_posix()}" in names
    assert "alertsieve_schemas/rubin/latest.txt" in names
    assert (
        "alertsieve_conf/filter_stream.yaml" in names
        and "alertsieve/spark/log4j2.properties" in names
    )


def test_the_installed_job_finds_and_checks_every_contributed_filter(installed):
    listed = _run(installed, "filters", "list")
    assert listed.returncode == 0, listed.stderr[-2000:]
    site = next(installed[1].parent.glob("lib/python*/site-packages"))
    for module in sorted((ROOT / "filters").glob("[!_]*.py")):  # each from the wheel's copy
        assert str(site / "alertsieve_filters" / module.name) in listed.stdout, module.name
    assert {f.name for f in discover(entry_points=False)} <= set(listed.stdout.split())
    assert str(ROOT) not in listed.stdout
    checked = _run(installed, "filters", "check")
    assert checked.returncode == 0, checked.stdout[-2000:] + checked.stderr[-2000:]
    assert all(
        f"ok      {f.name}" in checked.stdout
        for f in discover(entry_points=False)
        if f.survey == "rubin"
    )


def test_the_installed_job_filters_real_ztf_alerts(installed, kafka, topic_name):
    """ZTF's schema comes from the wheel: these files' writer schema is the one it ships."""
    files = ztf_history_files()[:20]
    create_topic(kafka.bootstrap_servers, topic_name, 1)
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers})
    for path in files:
        producer.produce(topic_name, value=path.read_bytes())
    assert producer.flush(30) == 0
    job = _run(
        installed,
        "filter",
        "--bootstrap",
        kafka.bootstrap_servers,
        "--topic",
        topic_name,
        "--available-now",
        "--sink",
        "kafka",
        "--output-prefix",
        f"{topic_name}-",
        "--checkpoint",
        str(installed[2] / "ckpt"),
        "--master",
        "local[2]",
    )
    assert job.returncode == 0, job.stdout[-2000:] + job.stderr[-2000:]
    assert f"{len(files)} alerts, 0 quarantined" in job.stdout  # the done line
    assert (
        "survey ztf" in job.stderr and "ztf_known_asteroids=" in job.stderr
    )  # the plan, then the matches
    assert_reads_as_success(job.stdout + job.stderr)


def test_a_job_that_finds_no_filter_refuses_to_start_saying_where_it_looked(tmp_path):
    cfg = JobConfig(topic="t", discover_filters=False, filter_paths=[str(tmp_path)])
    with pytest.raises(
        FilterError,
        match=rf"no filter for ztf alerts to run: looked in {tmp_path}, and the settings",
    ):
        select_filters(cfg, "ztf")
