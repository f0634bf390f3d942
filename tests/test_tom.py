"""A real TOM fed by filter jobs through ``alertsieve.tom``, in the TOM's own environment
(.venv-tom: this checkout's wheel with the ``tom`` extra, no Spark, the TOM Toolkit's numpy and
astropy): the TOM Toolkit's apps and database (tests/tom_settings.py, migrations run),
``ALERT_STREAMS`` as a TOM configures it, the stream read up to the topics' ends
(tests/tom_side.py, which writes what the TOM kept as JSON). Two jobs of this environment, on
the session's broker and Spark, publish the real LSSTCam v10.0 alerts (8, two with 16 and 22
earlier detections) and the 130 real ZTF 3.3 alerts (106 with histories, 1,146 non-detections
among them), each through an alert-payload and a fields-payload filter. The same environment,
a subscriber's install, verifies the jobs' topics with ``alertsieve listen --verify``. The
oracle: the alert files as fastavro reads them, the cuts in plain Python, astropy for nJy -> AB
magnitudes and TAI -> UTC."""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import subprocess
import uuid
from pathlib import Path

import astropy.units as u
import fastavro
import numpy as np
import pytest
from astropy.time import Time
from confluent_kafka import Producer
from crafted import REAL
from wheels import TOM_ENV, fresh_install, install_wheel

from alertsieve.cli import NEEDS_STREAM
from alertsieve.filtering.model import AlertFilter
from alertsieve.kafka.topics import create_topic
from alertsieve.produce.producer import ProduceConfig, produce
from alertsieve.publish.versions import filter_version
from alertsieve.stream.config import JobConfig
from alertsieve.stream.job import run_job

ROOT = Path(__file__).resolve().parents[1]
RUBIN_FILES = [REAL / "rubin-lsstcam-v10_0.avro", REAL / "rubin-lsstcam-v10_0-b.avro"]
ZTF_FILES = sorted((REAL / "ztf-3.3-histories").glob("*.avro")) + sorted(
    (REAL / "ztf-3.3").glob("*.avro")
)

# Each cut splits its alerts; the same cut in plain Python is the oracle's.
RUBIN_FILTERS = [
    (
        AlertFilter(name="reliable", sql="diaSource.reliability > 0.6"),
        lambda a: a["diaSource"]["reliability"] > 0.6,
    ),
    (
        AlertFilter(
            name="bright_fields",
            sql="diaSource.snr > 5.2",
            payload="fields",
            fields={"diaObjectId": "diaSource.diaObjectId", "snr": "diaSource.snr"},
        ),
        lambda a: a["diaSource"]["snr"] > 5.2,
    ),
]
ZTF_FILTERS = [
    (
        AlertFilter(name="ztf_bright", sql="candidate.magpsf < 17.6", survey="ztf"),
        lambda a: a["candidate"]["magpsf"] < 17.6,
    ),
    (
        AlertFilter(
            name="ztf_real",
            sql="candidate.rb > 0.9",
            payload="fields",
            fields={"objectId": "objectId", "magpsf": "candidate.magpsf"},
            format="json",
            survey="ztf",
        ),
        lambda a: a["candidate"]["rb"] > 0.9,
    ),
]
RUBIN_ALERTS = [a for f in RUBIN_FILES for a in fastavro.reader(f.open("rb"))]
ZTF_ALERTS = [a for f in ZTF_FILES for a in fastavro.reader(f.open("rb"))]


def _job(bootstrap: str, spark, home: Path, name: str, prefix: str, filters, survey: str) -> None:
    files = RUBIN_FILES if survey == "rubin" else ZTF_FILES
    assert produce(
        ProduceConfig(
            bootstrap=bootstrap,
            topic=name,
            replay=[str(f) for f in files],
            interval_s=0,
            partitions=1,
            progress=False,
            schema_dir=str(home / "schemas"),
        )
    ).ok
    run_job(
        JobConfig(
            bootstrap=bootstrap,
            topic=name,
            available_now=True,
            output_prefix=prefix,
            output_partitions=1,
            discover_filters=False,
            code_filters=[f for f, _ in filters],
            sinks=["kafka"],
            checkpoint=str(home / f"ckpt-{survey}"),
            metrics_path=None,
            schema_dir=str(home / "schemas"),
            survey=survey,
        ),
        spark=spark,
    )


@pytest.fixture(scope="module")
def published(kafka, spark, tmp_path_factory) -> tuple[Path, dict[str, list[str]]]:
    """The jobs' topics: (their folder, with the schema store; {output prefix: its topics})."""
    home = tmp_path_factory.mktemp("tom")
    run = uuid.uuid4().hex[:8]
    rubin, ztf = f"tom_rubin_{run}_", f"tom_ztf_{run}_"
    _job(kafka.bootstrap_servers, spark, home, f"tom-rubin-{run}", rubin, RUBIN_FILTERS, "rubin")
    _job(kafka.bootstrap_servers, spark, home, f"tom-ztf-{run}", ztf, ZTF_FILTERS, "ztf")
    return home, {
        rubin: [rubin + f.name for f, _ in RUBIN_FILTERS],
        ztf: [ztf + f.name for f, _ in ZTF_FILTERS],
    }


@pytest.fixture(scope="module")
def tom_bin(wheel) -> Path:
    """The TOM's environment with the wheel of the code under test in it."""
    python = TOM_ENV / "bin" / "python"
    assert python.exists(), (
        f"{TOM_ENV} is missing: `make tom` (or `make test`) makes the TOM's environment"
    )
    install_wheel(wheel, python)
    return TOM_ENV / "bin"


@pytest.fixture(scope="module")
def subscriber_bin(wheel, tmp_path_factory) -> Path:
    """A fresh environment with the wheel and nothing else: ``pip install alertsieve``."""
    return fresh_install(wheel, tmp_path_factory.mktemp("subscriber") / "venv")


def _run(*args, env: dict | None = None) -> subprocess.CompletedProcess:
    """A command of the TOM's environment (its python or alertsieve), from this checkout."""
    return subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, timeout=600, env=env, cwd=ROOT
    )


@pytest.fixture(scope="module")
def tom(kafka, published, tom_bin) -> tuple[dict, str]:
    """What the TOM kept after two passes over the jobs' topics and one more topic holding a
    malformed message: (tests/tom_side.py's JSON, that topic)."""
    home, by_prefix = published
    topics = [t for ts in by_prefix.values() for t in ts]
    # A message the stream cannot decode: framed for schema 1000 (v10.0), not an alert.
    bad = f"{topics[0]}_bad"
    create_topic(kafka.bootstrap_servers, bad, 1)
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers})
    producer.produce(
        bad,
        value=b"\x00\x00\x00\x03\xe8not an alert",
        headers=[("filter", b"reliable"), ("payload", b"alert")],
    )
    assert producer.flush(30) == 0
    env = {
        **os.environ,
        "ALERTSIEVE_TOM_HOME": str(home),
        "ALERTSIEVE_TOM_KAFKA": kafka.bootstrap_servers,
        "ALERTSIEVE_TOM_TOPICS": ",".join([*topics, bad]),
        "DJANGO_SETTINGS_MODULE": "tom_settings",
        "PYTHONPATH": str(ROOT / "tests"),
    }
    longest = max(RUBIN_ALERTS, key=lambda a: len(a["prvDiaSources"] or []))
    out = home / "kept.json"
    done = _run(tom_bin / "python", ROOT / "tests" / "tom_side.py", out, _object(longest), env=env)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    return json.loads(out.read_text()), bad


def _passing() -> dict[str, list[dict]]:
    """{filter: the alerts it passes}, by the plain-Python cuts."""
    out = {}
    for filters, alerts in ((RUBIN_FILTERS, RUBIN_ALERTS), (ZTF_FILTERS, ZTF_ALERTS)):
        for f, cut in filters:
            out[f.name] = [a for a in alerts if cut(a)]
            assert 0 < len(out[f.name]) < len(alerts), f.name  # each cut splits its alerts
    return out


def _object(alert: dict) -> str:
    return alert["objectId"] if "objectId" in alert else str(alert["diaSource"]["diaObjectId"])


def _detection(alert: dict) -> dict:
    return alert["candidate"] if "candidate" in alert else alert["diaSource"]


def _mjd(alert: dict) -> float:
    d = _detection(alert)
    return d["jd"] - 2400000.5 if "jd" in d else d["midpointMjdTai"]


def _finite(x):
    return None if x is None or not math.isfinite(x) else x


def _expected_points() -> tuple[dict, list]:
    """Over the alert-payload filters' matches: ({(target, band, mjd, flux or magnitude as the
    alert gives it): (utc, magnitude, error, {source ids})}, sorted [(target, band, mjd, limit)]).

    Each measurement once, whatever the alerts repeating it, with its values as the alert that
    detected it gives them (real ZTF histories repeat them rounded); a few real ZTF measurements
    come twice under two candids of one exposure: either id may be kept."""
    by_id, limits = {}, set()
    passing = _passing()
    for alert in passing["reliable"]:
        for n, s in enumerate([alert["diaSource"], *(alert["prvDiaSources"] or [])]):
            flux = s["psfFlux"] * u.nJy
            mag = flux.to(u.ABmag).value if s["psfFlux"] > 0 else None
            err = 2.5 / math.log(10) * s["psfFluxErr"] / s["psfFlux"] if mag is not None else None
            utc = Time(s["midpointMjdTai"], format="mjd", scale="tai").utc.to_datetime(dt.UTC)
            key = (_object(alert), s["band"], s["midpointMjdTai"], s["psfFlux"])
            if n == 0 or str(s["diaSourceId"]) not in by_id:
                by_id[str(s["diaSourceId"])] = (key, (utc, _finite(mag), _finite(err)), n == 0)
    for alert in passing["ztf_bright"]:
        for n, c in enumerate([alert["candidate"], *(alert["prv_candidates"] or [])]):
            mjd, band = c["jd"] - 2400000.5, {1: "g", 2: "r", 3: "i"}[c["fid"]]
            if c["magpsf"] is None:
                limits.add((alert["objectId"], band, mjd, c["diffmaglim"]))
                continue
            utc = Time(mjd, format="mjd", scale="utc").to_datetime(dt.UTC)
            key = (alert["objectId"], band, mjd, c["magpsf"])
            if n == 0 or not by_id.get(str(c["candid"]), (0, 0, False))[2]:
                by_id[str(c["candid"])] = (key, (utc, c["magpsf"], c["sigmapsf"]), n == 0)
    detections = {}
    for source_id, (key, values, _) in by_id.items():
        detections[key] = (*values, detections.get(key, (0, 0, 0, set()))[3] | {source_id})
    return detections, sorted(limits)


def _saved_points(kept: dict) -> tuple[dict, list, int]:
    """The TOM's points as :func:`_expected_points` gives them (one source id each), and how
    many rows."""
    detections, limits = {}, []
    for p in kept["points"]:
        if p["limit"] is not None:
            limits.append((p["target"], p["bandpass"], p["value"]["mjd"], p["limit"]))
            continue
        given = p["value"]["flux"] if p["value"]["survey"] == "rubin" else p["brightness"]
        key = (p["target"], p["bandpass"], p["value"]["mjd"], given)
        detections[key] = (
            dt.datetime.fromisoformat(p["timestamp"]),
            p["brightness"],
            p["brightness_error"],
            p["value"]["source_id"],
        )
    return detections, sorted(limits), len(kept["points"])


def test_targets_lists_and_fields_equal_the_alerts(tom):
    kept = tom[0]["first"]
    passing = _passing()
    latest: dict[str, dict] = {}
    for alerts in passing.values():
        for a in alerts:
            if _object(a) not in latest or _mjd(a) >= _mjd(latest[_object(a)]):
                latest[_object(a)] = a
    targets = kept["targets"]
    assert set(targets) == set(latest)
    for name, a in latest.items():  # where the latest alert saw it
        assert (targets[name]["ra"], targets[name]["dec"]) == (
            _detection(a)["ra"],
            _detection(a)["dec"],
        )
        assert targets[name]["tags"]["survey"] == ("ztf" if "candidate" in a else "rubin")

    lists = {name: set(members) for name, members in kept["lists"].items()}
    assert lists == {f: {_object(a) for a in alerts} for f, alerts in passing.items()}
    for f, _ in [*RUBIN_FILTERS, *ZTF_FILTERS]:
        for name in lists[f.name]:
            assert targets[name]["tags"][f"{f.name} version"] == filter_version(f)
    # A fields record keeps its fields on the target: the latest record's.
    for f, fields in (("bright_fields", ("snr",)), ("ztf_real", ("magpsf",))):
        newest = {}
        for a in passing[f]:
            if _object(a) not in newest or _mjd(a) >= _mjd(newest[_object(a)]):
                newest[_object(a)] = a
        for name, a in newest.items():
            for field in fields:
                # float fields (32 bits): JSON writes the shortest text of the 32-bit value
                kept_value = np.float32(targets[name]["tags"][f"{f} {field}"])
                assert kept_value == np.float32(_detection(a)[field])


def test_every_photometry_point_equals_the_alerts_once(tom):
    want_detections, want_limits = _expected_points()
    got_detections, got_limits, rows = _saved_points(tom[0]["first"])
    assert len(want_limits) > 100 and any(len(a["prvDiaSources"] or []) > 20 for a in RUBIN_ALERTS)
    assert rows == len(want_detections) + len(want_limits)  # no point twice
    assert set(got_detections) == set(want_detections)
    for key, (utc, mag, err, ids) in want_detections.items():
        time, got_mag, got_err, source_id = got_detections[key]
        assert source_id in ids, key
        assert abs(time - utc) < dt.timedelta(milliseconds=1), key
        for g, w in ((got_mag, mag), (got_err, err)):
            assert (g is None and w is None) or g == pytest.approx(w, rel=1e-9), key
    assert got_limits == want_limits


def test_a_second_pass_adds_nothing_and_a_bad_message_is_skipped(tom):
    result, bad = tom
    passing = _passing()
    assert result["handled"] == sum(
        len(a) for a in passing.values()
    )  # every match, not the bad one
    assert any(
        f"{bad}[0] offset 0: skipped, it does not decode" in w for w in result["warnings"]
    ), result["warnings"]
    # Stamps: three FITS files per Rubin alert, the ZTF alerts' three gzipped ones unzipped.
    stamps = result["first"]["stamps"]
    alert_matches = passing["reliable"] + passing["ztf_bright"]
    assert len(stamps) == 3 * len(
        {_detection(a).get("candid") or _detection(a)["diaSourceId"] for a in alert_matches}
    )
    assert set(stamps.values()) == {"SIMPLE  ="}
    assert result["again"] == result["handled"]
    assert result["after_again"] == result["first"]  # nothing added, nothing changed


def test_the_target_page_shows_the_name_and_the_light_curve(tom):
    longest = max(RUBIN_ALERTS, key=lambda a: len(a["prvDiaSources"] or []))
    assert _object(longest) in tom[0]["page"]
    assert "plotly-graph-div" in tom[0]["page"]


def test_a_subscribers_install_verifies_the_jobs_topics_and_runs_no_job(
    kafka, published, subscriber_bin
):
    """A subscriber's install (the wheel alone): no pyspark, pyarrow or numpy. Its ``listen --verify``
    reads each job's alert and fields payloads against the job's counts and reports them
    complete, saving them as JSON lines; ``filters list --bootstrap`` reads what the job runs; a
    job's command, and Parquet, name the extra to install and exit 2."""
    home, by_prefix = published
    python = subscriber_bin / "python"
    probe = "import importlib.util as u; print(*(u.find_spec(m) for m in ('pyspark', 'pyarrow', 'numpy')))"
    assert _run(python, "-c", probe).stdout.split() == ["None", "None", "None"]
    passing = _passing()
    for prefix, topics in by_prefix.items():
        listened = _run(
            subscriber_bin / "alertsieve",
            "listen",
            "--bootstrap",
            kafka.bootstrap_servers,
            "--topic",
            ",".join(topics),
            "--from-beginning",
            "--until-end",
            "--verify",
            "--schema-dir",
            home / "schemas",
            "--to",
            home / f"{prefix}.jsonl",
        )
        assert listened.returncode == 0, listened.stdout[-2000:] + listened.stderr[-2000:]
        received = sum(len(passing[t.removeprefix(prefix)]) for t in topics)
        assert f"verified: complete, {received} of {received} counted records received" in (
            listened.stdout + listened.stderr
        )
        saved = [json.loads(line) for line in (home / f"{prefix}.jsonl").open()]
        assert sorted(r["_filter"] for r in saved) == sorted(
            t.removeprefix(prefix) for t in topics for _ in passing[t.removeprefix(prefix)]
        )
    parquet = _run(
        subscriber_bin / "alertsieve",
        "listen",
        "--bootstrap",
        kafka.bootstrap_servers,
        "--topic",
        topics[0],
        "--to",
        home / "matches.parquet",
    )
    assert (parquet.returncode, parquet.stderr.strip()) == (
        2,
        f"alertsieve listen: error: --to {home / 'matches.parquet'}: Parquet needs pyarrow, which"
        " this install has not: pip install 'alertsieve[tables]' (or save JSON lines: --to FILE.jsonl)",
    )
    rubin_prefix, reliable = next(iter(by_prefix)), RUBIN_FILTERS[0][0]
    filters = home / "subscriber_filters"
    filters.mkdir(exist_ok=True)
    (filters / "reliable.py").write_text(
        "from alertsieve.filtering.model import AlertFilter\n"
        f"reliable = AlertFilter(name='reliable', sql={reliable.sql!r})\n"
    )
    listed = _run(
        subscriber_bin / "alertsieve",
        "filters",
        "list",
        "reliable",
        "--filter-path",
        filters,
        "--bootstrap",
        kafka.bootstrap_servers,
        "--output-prefix",
        rubin_prefix,
    )
    assert listed.returncode == 0, listed.stderr[-2000:]
    assert f"in the job: running this version ({filter_version(reliable)})" in listed.stdout
    job = _run(subscriber_bin / "alertsieve", "filter", "--topic", "t")
    assert (job.returncode, job.stderr.strip()) == (2, f"alertsieve filter: {NEEDS_STREAM}")
