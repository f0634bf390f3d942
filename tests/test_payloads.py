"""What subscribers get, through a real broker and Spark: a filter's matches as the original alert,
as a compact Avro record (Confluent-framed, schema registered in the job's store) or as JSON; the
filter's version in every header; the counts topic. The oracle is fastavro over the very bytes
produced (real LSSTCam v10.0 and Operations Rehearsal v7.4 alerts, simulated v11 ones) and plain
Python over the decoded alerts."""

from __future__ import annotations

import io
import json
import math
import uuid

import fastavro
import numpy as np
import pytest
from crafted import real_messages
from kafka_helpers import consume_all, fields_record

from alertsieve.alerts.schemas import LocalSchemaStore, unframe
from alertsieve.filtering.model import AlertFilter, FilterError
from alertsieve.produce.producer import ProduceConfig, produce
from alertsieve.publish.contract import ENVELOPE
from alertsieve.publish.payloads import check_payload
from alertsieve.publish.versions import filter_version
from alertsieve.stream.config import JobConfig
from alertsieve.stream.job import run_job

CUT = "diaSource.reliability > 0.85"
DOUBTFUL = (
    "diaSource.reliability < 0.2"  # passed by fields filters only: archived without the alert
)
FIELDS = {
    "snr": "diaSource.snr",
    "band": "diaSource.band",
    "flux": "diaSource.psfFlux",
    "n_history": "coalesce(size(prvDiaSources), 0)",
    "history_flux": "transform(prvDiaSources, s -> s.psfFlux)",
    "position": "named_struct('ra', diaSource.ra, 'dec', diaSource.dec)",
    "moving": "ssSource IS NOT NULL",
}


def chosen(alert: dict) -> dict:
    """FIELDS, in plain Python."""
    s, history = alert["diaSource"], alert.get("prvDiaSources")
    return {
        "snr": s["snr"],
        "band": s["band"],
        "flux": s["psfFlux"],
        "n_history": len(history or []),
        "history_flux": None if history is None else [p["psfFlux"] for p in history],
        "position": {"ra": s["ra"], "dec": s["dec"]},
        "moving": alert.get("ssSource") is not None,
    }


def same(a, b, text: bool = False) -> bool:
    """Equal, NaN equal to NaN, at any depth. ``text``: ``a`` was read from JSON, where a
    single-precision value is written with the digits that tell it from its neighbours (12.3),
    so it is equal when it rounds to ``b`` in single precision (``b`` being one)."""
    if isinstance(a, float) and isinstance(b, float):
        if text and float(np.float32(b)) == b:
            return float(np.float32(a)) == b or (math.isnan(a) and math.isnan(b))
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k], text) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y, text) for x, y in zip(a, b, strict=True))
    return a == b


def test_a_fields_payload_is_checked_before_it_runs():
    base = AlertFilter(name="f", sql="true", origin="here.yaml")
    with pytest.raises(
        FilterError, match=r"filter 'f' \(here.yaml\): payload 'fields' needs fields"
    ):
        check_payload(AlertFilter(name="f", sql="true", origin="here.yaml", payload="fields"))
    with pytest.raises(FilterError, match=r"'ra' is an envelope field"):
        check_payload(
            AlertFilter(name="f", sql="true", payload="fields", fields={"ra": "diaSource.ra"})
        )
    with pytest.raises(FilterError, match=r"fields \['snr'\] are given but payload is 'alert'"):
        check_payload(AlertFilter(name="f", sql="true", fields={"snr": "diaSource.snr"}))
    with pytest.raises(FilterError, match=r"fields\['x'\] is refused: it contains SELECT"):
        check_payload(
            AlertFilter(name="f", sql="true", payload="fields", fields={"x": "(select 1)"})
        )
    check_payload(base)


def _inputs(
    bootstrap: str, topic: str, schema_dir: str, partitions: int = 2
) -> dict[str, tuple[dict, object]]:
    """Simulated and real alerts produced to ``topic``: {alert id: (alert as fastavro decodes
    it, the Kafka message)}."""
    assert produce(
        ProduceConfig(
            bootstrap=bootstrap,
            topic=topic,
            visits=1,
            alerts_per_visit=200,
            seed=5,
            interval_s=0,
            stamp_size=16,
            partitions=partitions,
            progress=False,
            schema_dir=schema_dir,
        )
    ).ok
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap})
    for key, value in real_messages():
        p.produce(topic, value=value, key=key)
    assert p.flush(30) == 0
    store = LocalSchemaStore(schema_dir)
    inputs = {}
    for m in consume_all(bootstrap, topic):
        schema_id, body = unframe(m.value())
        alert = store.get(schema_id).decode(body)
        inputs[str(alert["diaSource"]["diaSourceId"])] = (alert, m)
    return inputs


def _envelope(inputs: dict, topic: str, name: str, version: str, key: str) -> dict:
    """A fields record's envelope in plain Python (all but processed_at_ms)."""
    alert, m = inputs[key]
    s = alert["diaSource"]
    return {
        "alert_id": key,
        "survey": "rubin",
        "filter": name,
        "filter_version": version,
        "source_topic": topic,
        "source_partition": m.partition(),
        "source_offset": m.offset(),
        "kafka_timestamp_ms": m.timestamp()[1],
        "mjd": s["midpointMjdTai"],
        "ra": s["ra"],
        "dec": s["dec"],
    }


@pytest.mark.slow
def test_real_time_mode_publishes_fields_records(kafka, spark, tmp_path, topic_name):
    import threading
    import time

    bootstrap, schema_dir = kafka.bootstrap_servers, str(tmp_path / "schemas")
    inputs = _inputs(bootstrap, topic_name, schema_dir)
    passing = {k for k, (a, _) in inputs.items() if a["diaSource"]["reliability"] > 0.85}
    filters = [
        AlertFilter(name="small", sql=CUT, payload="fields", fields=FIELDS),
        AlertFilter(name="small_json", sql=CUT, payload="fields", fields=FIELDS, format="json"),
    ]
    prefix = f"{topic_name}-"
    cfg = JobConfig(
        bootstrap=bootstrap,
        topic=topic_name,
        trigger="realtime=5s",
        timeout_s=300,
        output_prefix=prefix,
        output_partitions=1,
        discover_filters=False,
        code_filters=filters,
        sinks=["kafka"],
        checkpoint=str(tmp_path / "ckpt"),
        metrics_path=None,
        schema_dir=schema_dir,
        survey="rubin",
    )
    job = threading.Thread(target=run_job, args=(cfg,), kwargs={"spark": spark})
    job.start()
    topics = [f"{prefix}{f.name}" for f in filters]
    deadline = time.monotonic() + 240
    while sum(sum(_ends(bootstrap, t).values()) for t in topics if _exists(bootstrap, t)) < 2 * len(
        passing
    ):
        assert job.is_alive() and time.monotonic() < deadline, (
            "the Real-Time Mode job stopped or did not publish"
        )
        time.sleep(0.5)

    def counted() -> (
        int
    ):  # alerts the counts topic accounts for, one record per checkpoint interval
        if not _exists(bootstrap, f"{prefix}counts"):
            return 0
        return sum(
            json.loads(m.value())["alerts_read"] for m in consume_all(bootstrap, f"{prefix}counts")
        )

    while counted() < len(inputs):
        assert job.is_alive() and time.monotonic() < deadline, (
            "no counts for the interval that read the alerts"
        )
        time.sleep(0.5)
    for q in spark.streams.active:  # the query runs until stopped: stop it, the job then returns
        q.stop()
    job.join(60)
    store = LocalSchemaStore(schema_dir)
    for f in filters:
        got = {
            m.key().decode(): fields_record(m, store)
            for m in consume_all(bootstrap, f"{prefix}{f.name}")
        }
        assert set(got) == passing
        for key, record in got.items():
            record.pop("processed_at_ms")
            want = {
                **_envelope(inputs, topic_name, f.name, filter_version(f), key),
                **chosen(inputs[key][0]),
            }
            assert same(record, want, text=f.format == "json"), (f.name, key, record)
    # counted per checkpoint interval, and checked against what a subscriber received
    listen = _listen(
        bootstrap,
        "--topic",
        ",".join(topics),
        "--from-beginning",
        "--until-end",
        "--verify",
        "--counts-topic",
        f"{prefix}counts",
        "--schema-dir",
        schema_dir,
    )
    assert listen.returncode == 0, listen.stdout[-2000:] + listen.stderr[-2000:]
    verdict = listen.stdout.splitlines()[-1]
    assert verdict.startswith(
        f"verified: complete, {2 * len(passing)} of {2 * len(passing)} counted"
    ), verdict


def _exists(bootstrap: str, topic: str) -> bool:
    from confluent_kafka.admin import AdminClient

    return topic in AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics


def test_matches_publish_alerts_avro_records_and_json_as_plain_python_says(
    kafka, spark, tmp_path, topic_name
):
    bootstrap, schema_dir = kafka.bootstrap_servers, str(tmp_path / "schemas")
    inputs = _inputs(bootstrap, topic_name, schema_dir)
    store = LocalSchemaStore(schema_dir)
    passing = {k for k, (a, _) in inputs.items() if a["diaSource"]["reliability"] > 0.85}
    assert (
        len(passing) > 10 and {str(k) for k, _ in real_messages()} & passing
    )  # real alerts among them

    prefix = f"sub_{uuid.uuid4().hex[:8]}_"  # no '-': only the records' headers name the counts
    filters = [
        AlertFilter(name="whole", sql=CUT),
        AlertFilter(name="small", sql=CUT, payload="fields", fields=FIELDS),
        AlertFilter(name="small_json", sql=CUT, payload="fields", fields=FIELDS, format="json"),
        AlertFilter(
            name="doubtful",
            sql=DOUBTFUL,
            payload="fields",
            fields={"snr": "diaSource.snr"},
            format="json",
        ),
    ]
    cfg = JobConfig(
        bootstrap=bootstrap,
        topic=topic_name,
        available_now=True,
        max_offsets_per_trigger=150,
        output_prefix=prefix,
        output_partitions=1,
        discover_filters=False,
        code_filters=filters,
        sinks=["kafka", "delta"],
        checkpoint=str(tmp_path / "ckpt"),
        delta_path=str(tmp_path / "delta"),
        metrics_path=str(tmp_path / "m.jsonl"),
        schema_dir=schema_dir,
        survey="rubin",
    )
    run_job(cfg, spark=spark)
    versions = {f.name: filter_version(f) for f in filters}

    def expected_record(name: str, key: str) -> dict:
        alert = inputs[key][0]
        chosen_here = {"snr": alert["diaSource"]["snr"]} if name == "doubtful" else chosen(alert)
        return {**_envelope(inputs, topic_name, name, versions[name], key), **chosen_here}

    for name in ("whole", "small", "small_json"):
        got = consume_all(bootstrap, f"{prefix}{name}")
        assert sorted(m.key().decode() for m in got) == sorted(passing), name
        for m in got:
            key, headers = m.key().decode(), {k: v.decode() for k, v in m.headers()}
            _, source = inputs[key]
            assert headers["filter"] == name and headers["filter_version"] == versions[name]
            assert (headers["source_partition"], headers["source_offset"]) == (
                str(source.partition()),
                str(source.offset()),
            )
            if name == "whole":
                assert headers["payload"] == "alert" and "format" not in headers
                assert m.value() == source.value()
                continue
            assert headers["payload"] == "fields" and headers["format"] == (
                "json" if name == "small_json" else "avro"
            )
            record = fields_record(
                m, store
            )  # Avro: with the schema the job registered in its store
            assert list(record)[: len(ENVELOPE)] == list(ENVELOPE)
            assert record.pop("processed_at_ms") >= source.timestamp()[1]
            assert same(record, expected_record(name, key), text=name == "small_json"), (
                name,
                key,
                record,
            )
        sizes = [len(m.value()) for m in got]
        if name != "whole":  # a few hundred bytes instead of the alert's
            assert max(sizes) < 1000 < min(len(inputs[m.key().decode()][1].value()) for m in got)

    doubtful = {k for k, (a, _) in inputs.items() if a["diaSource"]["reliability"] < 0.2}
    assert doubtful and not doubtful & passing
    counts = [json.loads(m.value()) for m in consume_all(bootstrap, f"{prefix}counts")]
    assert sum(c["alerts_read"] for c in counts) == len(inputs)
    for name in versions:
        assert {c["filters"][name]["version"] for c in counts} == {versions[name]}
        assert sum(c["filters"][name]["published"] for c in counts) == len(
            doubtful if name == "doubtful" else passing
        )
    ends = {str(p): o for p, o in _ends(bootstrap, topic_name).items()}
    ranges = sorted((p, r) for c in counts for p, r in c["input"][topic_name].items())
    for partition, end in ends.items():  # the batches' ranges tile each partition from 0 to its end
        spans = [r for p, r in ranges if p == partition]
        assert spans[0][0] == 0 and spans[-1][1] == end
        assert all(a[1] == b[0] for a, b in zip(spans, spans[1:], strict=False))

    archived = {
        r["alert_id"]: r
        for r in spark.read.format("delta").load(str(tmp_path / "delta" / "matches")).collect()
    }
    assert set(archived) == passing | doubtful
    for key, row in archived.items():
        names = ["doubtful"] if key in doubtful else ["small", "small_json", "whole"]
        assert row["filters"] == names
        assert [(v["name"], v["version"]) for v in row["filter_versions"]] == [
            (n, versions[n]) for n in names
        ]
        assert sorted(row["fields"]) == [n for n in names if n != "whole"]
        for name, text in row["fields"].items():
            record = json.loads(text)
            record.pop("processed_at_ms")
            want = expected_record(name, key)
            assert same(record, want, text=True), (name, key, record)
        alert = inputs[key][0]
        if key in doubtful:  # only fields were published: the archive has no alert to decode
            assert row["message"] is None and row["diaSource"] is None
        else:
            assert row["message"] == inputs[key][1].value()
            assert row["diaSource"]["diaSourceId"] == alert["diaSource"]["diaSourceId"]

    # A subscriber reads all three kinds back with the client, and checks them against the counts.
    topics = ",".join(f"{prefix}{n}" for n in ("whole", "small", "small_json"))
    out = tmp_path / "out.parquet"
    stamps = tmp_path / "stamps"
    listen = _listen(
        bootstrap,
        "--topic",
        topics,
        "--from-beginning",
        "--until-end",
        "--verify",
        "--to",
        str(out),
        "--cutouts",
        str(stamps),
        "--schema-dir",
        schema_dir,
    )
    assert listen.returncode == 0, listen.stdout[-3000:] + listen.stderr[-3000:]
    verdict = listen.stdout.splitlines()[-1]
    assert verdict.startswith(
        f"verified: complete, {3 * len(passing)} of {3 * len(passing)} counted records received"
    )
    assert "duplicates" not in verdict and "not counted" not in verdict
    import pyarrow.parquet as pq

    rows = pq.read_table(out).to_pylist()
    assert sorted(
        (
            r["_filter"],
            str(r["alert_id"] if r["_payload"] == "fields" else r["diaSource"]["diaSourceId"]),
        )
        for r in rows
    ) == sorted((n, k) for n in ("whole", "small", "small_json") for k in passing)
    for r in rows:
        key = (
            str(r["alert_id"]) if r["_payload"] == "fields" else str(r["diaSource"]["diaSourceId"])
        )
        assert r["_filter_version"] == versions[r["_filter"]]
        assert (r["_source_partition"], r["_source_offset"]) == (
            inputs[key][1].partition(),
            inputs[key][1].offset(),
        )
        if r["_payload"] == "fields":
            want = expected_record(r["_filter"], key)
            got = {k: r[k] for k in want}
            assert same(got, want, text=r["_filter"] == "small_json"), (r["_filter"], key, got)
        else:
            alert = inputs[key][0]
            assert r["diaSource"]["ra"] == alert["diaSource"]["ra"]
            # one file holds every version: a field of another version is there, null
            mine = {
                k: v
                for k, v in (r["diaObject"] or {}).items()
                if alert["diaObject"] and k in alert["diaObject"]
            }
            assert same(mine or None, alert["diaObject"])

    from astropy.io import fits

    real_passing = passing & {k for k, _ in real_messages()}
    for key in real_passing:  # the real alerts' stamps, as FITS files equal to the bytes sent
        for name in ("cutoutDifference", "cutoutScience", "cutoutTemplate"):
            with fits.open(stamps / f"{key}_{name}.fits") as saved:
                assert saved[0].data is not None or len(saved) > 1
            assert (stamps / f"{key}_{name}.fits").read_bytes() == inputs[key][0][name]

    # A topic that lost records (retention, an unclean leader election): made again here with
    # every record it held but three, and read again: the three are reported missing.
    import time

    from confluent_kafka import Producer as Republisher

    from alertsieve.kafka.topics import delete_topics

    lost = f"{prefix}small_json"
    kept = consume_all(bootstrap, lost)[3:]
    delete_topics(bootstrap, [lost])
    deadline = time.monotonic() + 60
    while not _created(bootstrap, lost):  # the deletion completes in the background
        assert time.monotonic() < deadline, f"{lost} could not be made again"
        time.sleep(0.2)
    again = Republisher({"bootstrap.servers": bootstrap})
    for m in kept:
        again.produce(lost, value=m.value(), key=m.key(), headers=m.headers())
    assert again.flush(30) == 0
    gone = _listen(
        bootstrap,
        "--topic",
        topics,
        "--from-beginning",
        "--until-end",
        "--verify",
        "--counts-topic",
        f"{prefix}counts",
        "--schema-dir",
        schema_dir,
    )
    assert gone.returncode == 1, gone.stdout[-2000:] + gone.stderr[-2000:]
    assert (
        f"verified: INCOMPLETE, 3 of {3 * len(passing)} counted records missing (small_json@"
        in gone.stdout
    )

    # One line and a non-zero exit for a wrong topic, an unknown schema id, bad credentials.
    wrong = _listen(bootstrap, "--topic", f"{prefix}nope", "--from-beginning", "--until-end")
    assert (
        wrong.returncode == 2
        and f"{prefix}nope" in wrong.stderr
        and len(wrong.stderr.strip().splitlines()) == 1
    )
    unknown = _listen(
        bootstrap,
        "--topic",
        f"{prefix}small",
        "--from-beginning",
        "--until-end",
        "--schema-dir",
        str(tmp_path / "another-store"),
    )
    assert unknown.returncode == 2 and "schema id" in unknown.stderr, unknown.stderr
    assert len(unknown.stderr.strip().splitlines()) == 1
    denied = _listen(
        bootstrap,
        "--topic",
        f"{prefix}whole",
        "--until-end",
        "--kafka-conf",
        "security.protocol=SASL_PLAINTEXT",
        "sasl.mechanism=PLAIN",
        "sasl.username=nobody",
        "sasl.password=wrong",
    )
    assert denied.returncode == 2 and len(denied.stderr.strip().splitlines()) == 1, denied.stderr


def _created(bootstrap: str, topic: str) -> bool:
    from alertsieve.kafka.topics import create_topic

    try:
        return create_topic(bootstrap, topic, 1)
    except Exception:  # noqa: BLE001 - "marked for deletion" until the broker is done
        return False


def _listen(bootstrap: str, *args: str):
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-m", "alertsieve.cli", "listen", "--bootstrap", bootstrap, *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def _ends(bootstrap: str, topic: str) -> dict[int, int]:
    from alertsieve.kafka.topics import end_offsets

    return end_offsets(bootstrap, topic)


ZTF_FIELDS = {
    "magpsf": "candidate.magpsf",
    "sigmapsf": "candidate.sigmapsf",
    "fid": "candidate.fid",
    "rb": "candidate.rb",
    "n_prv": "coalesce(size(prv_candidates), 0)",
    "prv_mag": "transform(prv_candidates, c -> c.magpsf)",
}


def test_ztf_alerts_publish_fields_records_as_plain_python_says(kafka, spark, tmp_path, topic_name):
    from crafted import REAL

    bootstrap = kafka.bootstrap_servers
    files = sorted(str(p) for p in (REAL / "ztf-3.3").glob("*.avro"))
    assert produce(
        ProduceConfig(
            bootstrap=bootstrap,
            topic=topic_name,
            replay=files,
            interval_s=0,
            partitions=1,
            progress=False,
        )
    ).ok
    inputs = {}
    for m in consume_all(bootstrap, topic_name):
        (alert,) = list(
            fastavro.reader(io.BytesIO(m.value()))
        )  # a container per message, as ZTF sends
        inputs[str(alert["candid"])] = (alert, m)
    filters = [
        AlertFilter(
            name=f"ztf_{fmt}",
            sql="candidate.magpsf < 15.5",
            payload="fields",
            fields=ZTF_FIELDS,
            format=fmt,
            survey="ztf",
        )
        for fmt in ("avro", "json")
    ]
    passing = {k for k, (a, _) in inputs.items() if a["candidate"]["magpsf"] < 15.5}
    assert 0 < len(passing) < len(inputs)
    prefix = f"{topic_name}-"
    cfg = JobConfig(
        bootstrap=bootstrap,
        topic=topic_name,
        available_now=True,
        output_prefix=prefix,
        output_partitions=1,
        discover_filters=False,
        code_filters=filters,
        sinks=["kafka"],
        checkpoint=str(tmp_path / "ckpt"),
        metrics_path=None,
        schema_dir=str(tmp_path / "schemas"),
    )
    run_job(cfg, spark=spark)
    store = LocalSchemaStore(tmp_path / "schemas")
    for f in filters:
        got = {
            m.key().decode(): fields_record(m, store)
            for m in consume_all(bootstrap, f"{prefix}{f.name}")
        }
        assert set(got) == passing
        for key, record in got.items():
            alert, m = inputs[key]
            c, prv = alert["candidate"], alert["prv_candidates"]
            want = {
                "alert_id": key,
                "survey": "ztf",
                "filter": f.name,
                "filter_version": filter_version(f),
                "source_topic": topic_name,
                "source_partition": m.partition(),
                "source_offset": m.offset(),
                "kafka_timestamp_ms": m.timestamp()[1],
                "mjd": c["jd"] - 2400000.5,
                "ra": c["ra"],
                "dec": c["dec"],
                "magpsf": c["magpsf"],
                "sigmapsf": c["sigmapsf"],
                "fid": c["fid"],
                "rb": c["rb"],
                "n_prv": len(prv or []),
                "prv_mag": None if prv is None else [p["magpsf"] for p in prv],
            }
            record.pop("processed_at_ms")
            assert same(record, want, text=f.format == "json"), (f.name, key, record)


def test_a_jobs_settings_choose_a_filters_payload():
    from alertsieve.stream.config import load_config
    from alertsieve.stream.plan import select_filters

    cfg = load_config(
        None,
        {
            "topic": "t",
            "survey": "rubin",
            "filter_outputs": {
                "bright_high_snr": {
                    "payload": "fields",
                    "fields": {"snr": "diaSource.snr"},
                    "format": "json",
                }
            },
        },
    )
    chosen_filters = {f.name: f for f in select_filters(cfg, "rubin")}
    bright = chosen_filters["bright_high_snr"]
    assert (bright.payload, dict(bright.fields), bright.format) == (
        "fields",
        {"snr": "diaSource.snr"},
        "json",
    )
    assert chosen_filters["new_sources"].payload == "alert"
    with pytest.raises(FilterError, match=r"filter_outputs names unknown filter\(s\) \['nope'\]"):
        select_filters(
            load_config(None, {"topic": "t", "filter_outputs": {"nope": {"payload": "alert"}}}),
            "rubin",
        )


def test_fields_may_read_catalogs_and_features_no_condition_names(spark, field_catalog):
    """A fields payload reading ``xmatch.*`` joins that catalog although the condition does not
    name it, and ``features.*`` compile into the record's type."""
    from alertsieve.catalogs.context import load_context
    from alertsieve.filtering.prepare import catalog_uses, sample_alerts
    from alertsieve.view.decode_settings import DecodeSettings
    from alertsieve.view.surveys import rubin_decoder

    f = AlertFilter(
        name="near",
        sql="diaSource.snr > 5",
        payload="fields",
        fields={"field_distance": "xmatch.field.distance_arcsec", "r_rate": "features.r.rate"},
    )
    decoder = rubin_decoder(DecodeSettings(topic="t", survey="rubin"))
    context = load_context(field_catalog, catalog_uses([f]), decoder.detection)
    assert [m.name for m in context.catalogs] == ["field"]
    from alertsieve.publish.payloads import record_types

    record = record_types(
        [f], decoder, {"near": "v"}, sample_alerts(spark, decoder, context=context)
    )["near"]
    assert [x.name for x in record.fields] == [*ENVELOPE, "field_distance", "r_rate"]
    assert {x.name: x.dataType.simpleString() for x in record.fields}["field_distance"] == "double"


def test_a_field_that_does_not_compile_is_named_at_start_up(spark):
    from alertsieve.filtering.prepare import sample_alerts
    from alertsieve.publish.payloads import record_types
    from alertsieve.view.decode_settings import DecodeSettings
    from alertsieve.view.surveys import rubin_decoder

    f = AlertFilter(
        name="typo",
        sql="true",
        payload="fields",
        origin="mine.yaml",
        fields={"snr": "diaSource.snr", "flux": "diaSource.psfFlx"},
    )
    decoder = rubin_decoder(DecodeSettings(topic="t", survey="rubin"))
    with pytest.raises(
        FilterError, match=r"^filter 'typo' \(mine.yaml\): fields\['flux'\]: .*psfFlx"
    ):
        record_types([f], decoder, {"typo": "v"}, sample_alerts(spark, decoder))
