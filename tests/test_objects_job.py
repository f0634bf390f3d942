"""Objects through a real job, a real broker and Spark: the real ZTF histories replayed in the
order ZTF sent them, then annotations from outside, then the job again from its checkpoint.
Expected outputs are plain Python over the same alerts as fastavro reads them (``test_objects``'s
oracle); the alerts' bytes are those the test sent."""

from __future__ import annotations

import io
import json
import uuid
from collections import Counter
from pathlib import Path

import fastavro
import pytest
from confluent_kafka import Producer
from kafka_helpers import consume_all
from test_objects import RUBIN, assert_summary_equal, oracle, rubin_alerts, ztf_alerts

from alertsieve.cli import main
from alertsieve.filtering.model import AlertFilter, FilterError
from alertsieve.produce.producer import ProduceConfig, produce
from alertsieve.stream.config import JobConfig
from alertsieve.stream.job import run_job
from alertsieve.subscribe.annotator import Annotator

REAL = Path(__file__).parent / "data" / "real"

#: A fields record of every object's state at every alert: its last record is the final state.
STATE = AlertFilter(
    name="state",
    sql="object.alerts > 0",
    payload="fields",
    format="json",
    fields={
        "object": "object.id",
        "alerts": "object.alerts",
        "first_mjd": "object.first_mjd",
        "last_mjd": "object.last_mjd",
        "bands": "to_json(object.bands)",
    },
)
FILTERS = [
    STATE,
    AlertFilter(name="repeat", sql="object.alerts >= 2"),  # every alert of an object but its first
    AlertFilter(  # what a TNS-like annotator calls a type Ia supernova, on its alerts or its word
        name="tns_ia", sql="annotations.tns.class = 'SN Ia'", triggers=("alert", "annotation")
    ),
    AlertFilter(name="other", sql="annotations.other.score > 0", triggers=("annotation",)),
    AlertFilter(name="bright", sql="candidate.magpsf < 18"),  # stateless: the hot path's
]

#: 25 malformed annotations on the tns topic (five of each kind), by the reason each gets.
MALFORMED = {
    "annotation: not a JSON object": [b"not json", b"[1, 2]", b"", b"{", b'"tns"'],
    "annotation: names annotator other on another annotator's topic": [
        json.dumps(
            {"version": 1, "survey": "ztf", "object": f"ZTF{i}", "annotator": "other", "class": "x"}
        ).encode()
        for i in range(5)
    ],  # fmt: skip
    "annotation: no class": [
        json.dumps(
            {"version": 1, "survey": "ztf", "object": f"ZTF{i}", "annotator": "tns"}
        ).encode()
        for i in range(5)
    ],
    "annotation: survey is not ztf (this job's)": [
        json.dumps(
            {"version": 1, "survey": "rubin", "object": f"ZTF{i}", "annotator": "tns", "class": "x"}
        ).encode()
        for i in range(5)
    ],  # fmt: skip
    "annotation: score is not a number": [
        json.dumps(
            {
                "version": 1,
                "survey": "ztf",
                "object": f"ZTF{i}",
                "annotator": "tns",
                "class": "x",
                "score": "high",
            }
        ).encode()
        for i in range(5)
    ],  # fmt: skip
}


def _sent_in_order(bootstrap: str, topic: str) -> dict[str, bytes]:
    """The ZTF histories produced in the order of their detections: candid -> the bytes sent."""
    files = sorted(
        (REAL / "ztf-3.3-histories").glob("*.avro"),
        key=lambda p: next(fastavro.reader(p.open("rb")))["candidate"]["jd"],
    )
    config = ProduceConfig(
        bootstrap=bootstrap, topic=topic, replay=[str(p) for p in files], interval_s=0,
        partitions=2, progress=False,
    )  # fmt: skip
    assert produce(config).ok
    sent = {}
    for m in consume_all(bootstrap, topic):
        (alert,) = fastavro.reader(io.BytesIO(m.value()))
        sent[str(alert["candid"])] = m.value()
    return sent


def _states(bootstrap: str, topic: str) -> dict[str, dict]:
    """Each object's last state record (the most alerts), and every record's count."""
    out: dict[str, dict] = {}
    for m in consume_all(bootstrap, topic):
        r = json.loads(m.value())
        if r["object"] not in out or r["alerts"] > out[r["object"]]["alerts"]:
            out[r["object"]] = {**r, "bands": json.loads(r["bands"])}
    return out


def _lines(path: Path, kind: str) -> list[dict]:
    return [x for x in map(json.loads, path.read_text().splitlines()) if x["kind"] == kind]


def test_real_ztf_objects_their_annotations_and_the_filters_they_trigger(
    kafka, spark, tmp_path, capsys
):
    bootstrap, topic = kafka.bootstrap_servers, f"objects-{uuid.uuid4().hex[:8]}"
    prefix = f"{topic}-"
    sent = _sent_in_order(bootstrap, topic)
    alerts = ztf_alerts()
    want = oracle(alerts)
    cfg = JobConfig(
        bootstrap=bootstrap, topic=topic, available_now=True, output_prefix=prefix,
        output_partitions=1, discover_filters=False, code_filters=FILTERS,
        checkpoint=str(tmp_path / "ckpt"), metrics_path=str(tmp_path / "metrics.jsonl"),
        object_ttl_days=30, sinks=["kafka"],
    )  # fmt: skip
    run_job(cfg, spark=spark)

    states = _states(bootstrap, f"{prefix}state")
    assert set(states) == set(want)
    for name, state in states.items():
        assert_summary_equal(state, want[name])
    assert len(consume_all(bootstrap, f"{prefix}state")) == len(alerts)  # a record per alert
    repeats = consume_all(bootstrap, f"{prefix}repeat")
    assert len(repeats) == sum(w["alerts"] - 1 for w in want.values()) > 0
    assert {dict(m.headers())["trigger"] for m in repeats} == {b"alert"}
    assert all(m.value() == sent[m.key().decode()] for m in repeats)  # the alert's own bytes
    bright = {m.key().decode() for m in consume_all(bootstrap, f"{prefix}bright")}
    assert bright == {a["id"] for a in alerts if a["mag"] < 18}  # the stateless query, as ever
    assert consume_all(bootstrap, f"{prefix}tns_ia") == []

    # After their last alerts: what TNS says of two objects, of one no alert named, and of 25
    # that are malformed; one annotation by the command line, the others by the Python client.
    seen = Counter(a["object"] for a in alerts)
    ia, ii = sorted(seen, key=lambda o: (-seen[o], o))[:2]
    args = ["annotate", "--bootstrap", bootstrap, "--prefix", prefix, "--survey", "ztf"]
    args += ["--object", ia, "--annotator", "tns", "--class", "SN Ia", "--score", "0.93"]
    assert main([*args, "--attribute", "name=2019xyz"]) == 0
    assert f"annotated ztf object {ia} as 'SN Ia'" in capsys.readouterr().out
    with Annotator(bootstrap, "tns", "ztf", prefix) as tns:
        tns.annotate(ii, "SN II", score=0.8)
        tns.annotate("ZTF99notseen", "SN Ia")
    producer = Producer({"bootstrap.servers": bootstrap})
    for value in [v for values in MALFORMED.values() for v in values]:
        producer.produce(f"{prefix}annotations-tns", value)
    assert producer.flush(30) == 0
    run_job(cfg, spark=spark)  # from its checkpoints: the objects as the first run left them

    (record,) = consume_all(bootstrap, f"{prefix}tns_ia")  # once, on the annotation alone
    headers = dict(record.headers())
    assert headers["trigger"] == b"annotation:tns"
    assert headers["source_topic"] == f"{prefix}annotations-tns".encode()
    latest = max((a for a in alerts if a["object"] == ia), key=lambda a: a["mjd"])
    assert record.key().decode() == latest["id"] and record.value() == sent[latest["id"]]
    assert consume_all(bootstrap, f"{prefix}other") == []  # it reads another annotator's
    assert len(consume_all(bootstrap, f"{prefix}state")) == len(alerts)  # run by alerts only
    quarantine = consume_all(bootstrap, f"{prefix}quarantine")
    reasons = [dict(m.headers())["reason"].decode() for m in quarantine]
    quarantined = Counter(r.removesuffix(f" {prefix}annotations-tns") for r in reasons)
    assert quarantined == {reason: 5 for reason in MALFORMED}
    values = sorted(m.value() for m in quarantine)
    assert values == sorted(v for vs in MALFORMED.values() for v in vs)  # each as it was sent
    objects = _lines(tmp_path / "metrics.jsonl", "objects")
    counted = Counter()
    for line in objects:
        counted.update(line["objects"])
    assert counted == {
        "alerts": len(alerts),
        "annotations": 2,
        "pending_annotations": 1,
        "evicted": 0,
    }
    listen = ["listen", "--bootstrap", bootstrap, "--topic", f"{prefix}tns_ia", "--from-beginning"]
    assert main([*listen, "--until-end", "--verify"]) == 0
    assert "verified: complete, 1 of 1" in capsys.readouterr().out

    typo = AlertFilter(name="typo", sql="object.alertz > 1")
    with pytest.raises(FilterError, match="no field object.alertz; did you mean object.alerts?"):
        run_job(
            cfg.model_copy(update={"code_filters": [typo], "checkpoint": str(tmp_path / "t")}),
            spark=spark,
        )


def test_real_lsstcam_objects_are_plain_python(kafka, spark, tmp_path):
    bootstrap, topic = kafka.bootstrap_servers, f"objects-rubin-{uuid.uuid4().hex[:8]}"
    config = ProduceConfig(
        bootstrap=bootstrap, topic=topic, replay=[str(RUBIN / "rubin-lsstcam-v10_0.avro")],
        interval_s=0, partitions=1, progress=False,
    )  # fmt: skip
    assert produce(config).ok
    cfg = JobConfig(
        bootstrap=bootstrap, topic=topic, available_now=True, output_prefix=f"{topic}-",
        output_partitions=1, discover_filters=False, code_filters=[STATE],
        checkpoint=str(tmp_path / "ckpt"), sinks=["kafka"], object_ttl_days=1e-5,
    )  # fmt: skip
    run_job(cfg, spark=spark)
    want = oracle(rubin_alerts())
    states = _states(bootstrap, f"{topic}-state")
    assert set(states) == set(want)
    for name, state in states.items():
        assert_summary_equal(state, want[name])

    # Objects forgotten: object_ttl_days (here under a second) after its last alert, an object
    # leaves the state in the next batch that reads data: every object but the new alert's.
    with (RUBIN / "rubin-lsstcam-v10_0.avro").open("rb") as f:
        reader = fastavro.reader(f)
        first = next(reader)
        again = tmp_path / "again.avro"
        with again.open("wb") as out:
            fastavro.writer(out, reader.writer_schema, [first], codec="deflate")
    config = ProduceConfig(
        bootstrap=bootstrap,
        topic=topic,
        replay=[str(again)],
        interval_s=0,
        partitions=1,
        progress=False,
    )
    assert produce(config).ok
    forgetting = cfg.model_copy(
        update={"object_ttl_days": 1e-5, "metrics_path": str(tmp_path / "m.jsonl")}
    )
    run_job(forgetting, spark=spark)
    (line,) = _lines(tmp_path / "m.jsonl", "objects")
    assert line["objects"]["evicted"] == len(want) - 1 and line["objects"]["alerts"] == 1
    assert line["state"]["rows"] == 1  # the one object left


#: The filters of objects of the killed job, as a filter module (the command line's job).
KILLED_FILTERS = """
from alertsieve.filtering.model import AlertFilter

STATE = AlertFilter(name="state", sql="object.alerts > 0", payload="fields", format="json",
                    fields={"object": "object.id", "alerts": "object.alerts"})
REPEAT = AlertFilter(name="repeat", sql="object.alerts >= 2")
TNS_IA = AlertFilter(name="tns_ia", sql="annotations.tns.class = 'SN Ia'", triggers=("annotation",))
"""


@pytest.mark.slow
def test_objects_killed_three_times_with_annotations_arriving(kafka, spark, tmp_path, processes):
    """kill -9 three times mid-replay, an annotation sent after each kill (of an object whose
    alerts were all read): the state counts each alert once (every object's records number
    1..n, never beyond), each annotation runs its filter once, and Delta holds each match once."""
    import os
    import signal
    import subprocess
    import sys

    from job_helpers import wait_for

    bootstrap, topic = kafka.bootstrap_servers, f"objects-kill-{uuid.uuid4().hex[:8]}"
    prefix = f"{topic}-"
    sent = _sent_in_order(bootstrap, topic)
    alerts = ztf_alerts()
    order = sorted(alerts, key=lambda a: a["mjd"])
    (tmp_path / "filters").mkdir()
    (tmp_path / "filters" / "objects_filters.py").write_text(KILLED_FILTERS)
    metrics = tmp_path / "metrics.jsonl"
    command = [
        sys.executable, "-m", "alertsieve.cli", "filter", "--bootstrap", bootstrap, "--topic",
        topic, "--output-prefix", prefix, "--checkpoint", str(tmp_path / "ckpt"), "--delta-path",
        str(tmp_path / "delta"), "--metrics", str(metrics), "--max-offsets-per-trigger", "10",
        "--master", "local[2]", "--no-discover", "--filter-path", str(tmp_path / "filters"),
        "--sink", "kafka,delta", "--object-ttl-days", "30",
    ]  # fmt: skip

    def read() -> int:
        return sum(x["input_rows"] for x in _lines(metrics, "objects")) if metrics.exists() else 0

    annotated = []
    for kill_after in (30, 60, 90):
        log = (tmp_path / "job.log").open("w")
        job = processes(command, stdout=log, stderr=subprocess.STDOUT)
        wait_for(
            lambda n=kill_after: read() >= n,
            f"{kill_after} alerts read",
            300,
            job,
            tmp_path / "job.log",
        )
        os.killpg(job.pid, signal.SIGKILL)
        job.wait(30)
        done = {a["object"] for a in order[: kill_after - 20]}  # read: the first alerts
        later = {a["object"] for a in order[kill_after - 20 :]}
        name = sorted(done - later - set(annotated))[0]  # every alert of it read already
        with Annotator(bootstrap, "tns", "ztf", prefix) as tns:
            tns.annotate(name, "SN Ia")
        annotated.append(name)
    final = subprocess.run(
        [*command, "--available-now"], capture_output=True, text=True, timeout=600
    )
    assert final.returncode == 0, final.stdout[-2000:] + final.stderr[-2000:]

    want = oracle(alerts)
    seen: dict[str, set[int]] = {}
    counted: dict[str, set[int]] = {}  # alert -> the counts its records say (one, if replayed)
    for m in consume_all(bootstrap, f"{prefix}state"):
        r = json.loads(m.value())
        seen.setdefault(r["object"], set()).add(r["alerts"])
        counted.setdefault(m.key().decode(), set()).add(r["alerts"])
    assert seen == {name: set(range(1, w["alerts"] + 1)) for name, w in want.items()}
    assert {k: v for k, v in counted.items() if len(v) > 1} == {}  # a batch run again: the same
    repeats = {m.key().decode() for m in consume_all(bootstrap, f"{prefix}repeat")}
    assert repeats == {k for k, v in counted.items() if min(v) >= 2}
    tns = consume_all(bootstrap, f"{prefix}tns_ia")
    latest = {
        o: max((a for a in alerts if a["object"] == o), key=lambda a: a["mjd"])["id"]
        for o in annotated
    }
    assert {m.key().decode() for m in tns} == set(latest.values())
    assert all(m.value() == sent[m.key().decode()] for m in tns)
    table = spark.read.format("delta").load(str(tmp_path / "delta" / "matches"))
    rows = table.select("topic", "partition", "offset", "filters").collect()
    assert max(Counter((r["topic"], r["partition"], r["offset"]) for r in rows).values()) == 1
    by_filter = Counter(f for r in rows for f in r["filters"])
    assert by_filter == {"state": len(alerts), "repeat": len(repeats), "tns_ia": len(annotated)}


@pytest.mark.integration  # the session broker's SASL listener and authorizer
def test_only_an_annotators_principal_writes_its_annotations(kafka):
    from test_security import _users

    from alertsieve.publish.annotations import AnnotationError
    from alertsieve.stream.job import create_outputs

    topic = f"annotators-{uuid.uuid4().hex[:8]}"
    users = _users(kafka.bootstrap_servers, topic)
    prefix = f"{topic}-"
    cfg = JobConfig(
        bootstrap=kafka.bootstrap_servers, topic=topic, output_prefix=prefix,
        annotators={"tns": "User:bob"},
    )  # fmt: skip
    create_outputs(cfg, [])  # as the job does at start-up (the plaintext listener: a super user)

    def as_user(name: str) -> dict:
        return {**kafka.client_conf(), "sasl.username": name, "sasl.password": users[name][1]}

    secure = kafka.secure_bootstrap_servers
    with Annotator(secure, "tns", "ztf", prefix, as_user("bob")) as tns:
        tns.annotate("ZTF18abwvktq", "SN Ia")
    with pytest.raises(
        AnnotationError,
        match=f"annotations to {prefix}annotations-tns not published: ZTF18abwvktq: .*TOPIC_AUTHORIZATION_FAILED",
    ):
        with Annotator(secure, "tns", "ztf", prefix, as_user("carol")) as impostor:
            impostor.annotate("ZTF18abwvktq", "SN II")
    written = consume_all(kafka.bootstrap_servers, f"{prefix}annotations-tns")
    assert [json.loads(m.value())["class"] for m in written] == ["SN Ia"]
