"""Real alerts end to end through a real broker and Spark, as their surveys send them.

Rubin: the real LSSTCam v10.0 and Operations Rehearsal v7.4 alerts of tests/data/real (replayed in
Rubin's wire format: ids 1000 and 704, their own record bytes) in one topic with simulated v11.1
alerts, filtered by one set of SQL filters through the filter view. ZTF: the real ZTF 3.3 alerts,
one Avro container file per message, the survey detected from the topic. Expected outputs are
plain Python over the same bytes as fastavro decodes them, with SQL's null semantics written out:
a field a version lacks, or a null, never passes a comparison. Beside the ZTF filters run users'
mistakes (a division by zero, a cast that fails, an injected parameter): the job goes on, they
match nothing, their errors are counted, and ``listen --verify`` finds every topic complete.
"""

from __future__ import annotations

import io
import uuid
from pathlib import Path

import fastavro
import pytest
from job_helpers import counted_batches, run_sql_job
from kafka_helpers import consume_all

from alertsieve.alerts.schemas import LocalSchemaStore, unframe
from alertsieve.cli import main
from alertsieve.filtering.model import AlertFilter
from alertsieve.produce.producer import ProduceConfig, produce
from alertsieve.stream.config import JobConfig

REAL = Path(__file__).parent / "data" / "real"


def _gt(value, threshold) -> bool:
    return value is not None and value == value and value > threshold  # NaN and null fail


def _at(alert: dict, path: str):
    node = alert
    for step in path.split("."):
        node = node.get(step) if isinstance(node, dict) else None
    return node


RUBIN_FILTERS = {
    "reliable": (
        "diaSource.reliability > 0.8",
        lambda a: _gt(_at(a, "diaSource.reliability"), 0.8),
    ),
    "snr_above_6": ("diaSource.snr > 6", lambda a: _gt(_at(a, "diaSource.snr"), 6)),
    "with_history": ("size(prvDiaSources) >= 2", lambda a: len(a.get("prvDiaSources") or []) >= 2),
    "negative_flux": (
        "diaSource.psfFlux < 0",
        lambda a: _gt(-(_at(a, "diaSource.psfFlux") or 0.0), 0),
    ),
    # exposureTime is new in v11: null for the v7.4 and v10.0 alerts, so they never pass.
    "long_exposure": (
        "diaSource.exposureTime > 20",
        lambda a: _gt(_at(a, "diaSource.exposureTime"), 20),
    ),
}
ZTF_FILTERS = {
    "bright": ("candidate.magpsf < 15.5", lambda a: _gt(-a["candidate"]["magpsf"], -15.5)),
    "real_drb": ("candidate.drb > 0.5", lambda a: _gt(a["candidate"]["drb"], 0.5)),
    "near_star": (
        "candidate.sgscore1 > 0.5 AND candidate.distpsnr1 < 3",
        lambda a: _gt(a["candidate"]["sgscore1"], 0.5) and _gt(-a["candidate"]["distpsnr1"], -3),
    ),
}


def _check_outputs(kafka, cfg: JobConfig, batches: list, filters: dict, alerts: dict, sent: dict):
    assert sum(b["input_rows"] for b in batches) == len(alerts)
    assert sum(b["quarantined_rows"] for b in batches) == 0  # zero real alerts quarantined
    assert consume_all(kafka.bootstrap_servers, cfg.quarantine_topic) == []
    for name, (_, oracle) in filters.items():
        want = {k for k, a in alerts.items() if oracle(a)}
        out = consume_all(kafka.bootstrap_servers, f"{cfg.output_prefix}{name}")
        assert sorted(m.key().decode() for m in out) == sorted(want), name
        assert all(m.value() == sent[m.key().decode()] for m in out)  # forwarded unchanged
    return {
        name: {k for k, a in alerts.items() if oracle(a)} for name, (_, oracle) in filters.items()
    }


def test_a_topic_mixing_real_v7_4_and_v10_0_with_simulated_v11_1(kafka, spark, tmp_path):
    topic = f"real-rubin-{uuid.uuid4().hex[:8]}"
    schema_dir = str(tmp_path / "schemas")
    common = dict(
        bootstrap=kafka.bootstrap_servers,
        topic=topic,
        interval_s=0,
        partitions=2,
        progress=False,
        schema_dir=schema_dir,
    )
    files = [str(REAL / "rubin-lsstcam-v10_0.avro"), str(REAL / "rubin-opsrehearsal-v7_4.avro")]
    assert produce(ProduceConfig(replay=files, alerts_per_visit=100, **common)).ok
    assert produce(
        ProduceConfig(
            visits=1, alerts_per_visit=150, seed=31, stamp_size=8, schema_version="11.1", **common
        )
    ).ok
    store, alerts, sent, ids, real = LocalSchemaStore(schema_dir), {}, {}, set(), set()
    for m in consume_all(kafka.bootstrap_servers, topic):
        schema_id, body = unframe(m.value())
        alert = store.get(schema_id).decode(body)
        key = str(alert["diaSource"]["diaSourceId"])
        alerts[key], sent[key] = alert, m.value()
        ids.add(schema_id)
        if schema_id != 1101:
            real.add(key)
    assert ids == {704, 1000, 1101} and len(alerts) == 6 + 6 + 150

    cfg, batches = run_sql_job(kafka, spark, tmp_path, topic, RUBIN_FILTERS, schema_dir=schema_dir)
    expected = _check_outputs(kafka, cfg, batches, RUBIN_FILTERS, alerts, sent)
    # Each filter is decided on real alerts too: some pass and some do not (but long_exposure,
    # which they cannot pass: their versions lack the field).
    for name in ("reliable", "snr_above_6", "with_history", "negative_flux"):
        assert 0 < len(expected[name] & real) < len(real), name


#: Users' mistakes beside the good filters (``alertsieve.filtering.untrusted``): ANSI Spark raises
#: on every one of these alerts (x / 0 with x not null; 'ZTF20...' is no int). Each is that
#: filter's no-match, counted, and the job goes on: the good filters' records are the oracle's.
#: ``injected``: a parameter that tries to widen its condition is a string literal.
ZTF_MISTAKES = {
    "zero_fid": "candidate.magpsf / (candidate.fid - candidate.fid) > 1",
    "int_id": "cast(objectId AS int) > 0",
    "injected": "candidate.isdiffpos = '{sign}'",
}
INJECTION = {"sign": "t' OR candidate.magpsf > 0 OR 'a' = 'b"}


def test_ztf_containers_are_filtered_exactly(kafka, spark, tmp_path, capsys):
    topic = f"real-ztf-{uuid.uuid4().hex[:8]}"
    files = sorted(str(p) for p in (REAL / "ztf-3.3").glob("*.avro"))
    assert produce(
        ProduceConfig(
            bootstrap=kafka.bootstrap_servers,
            topic=topic,
            replay=files,
            interval_s=0,
            partitions=1,
            progress=False,
        )
    ).ok
    alerts, sent = {}, {}
    for m in consume_all(kafka.bootstrap_servers, topic):
        assert m.value().startswith(b"Obj\x01")  # as ZTF sends them: a container per message
        (alert,) = list(fastavro.reader(io.BytesIO(m.value())))
        alerts[str(alert["candid"])], sent[str(alert["candid"])] = alert, m.value()
    assert len(alerts) == len(files)

    mistakes = [
        AlertFilter(name=n, sql=sql, params=INJECTION if n == "injected" else {})
        for n, sql in ZTF_MISTAKES.items()
    ]
    cfg, batches = run_sql_job(  # survey: detected
        kafka, spark, tmp_path, topic, ZTF_FILTERS, extra_filters=mistakes
    )
    expected = _check_outputs(kafka, cfg, batches, ZTF_FILTERS, alerts, sent)
    for name, keys in expected.items():
        assert 0 < len(keys) < len(alerts), name
    for name in ZTF_MISTAKES:
        assert consume_all(kafka.bootstrap_servers, f"{cfg.output_prefix}{name}") == [], name
    failed = {n: sum(b["filter_error_alerts"].get(n, 0) for b in batches) for n in ZTF_MISTAKES}
    assert failed == {"zero_fid": len(alerts), "int_id": len(alerts), "injected": 0}
    counted = counted_batches(kafka.bootstrap_servers, cfg.counts_topic)
    assert sum(c["filters"]["int_id"].get("failed_alerts", 0) for c in counted) == len(alerts)
    assert "its SQL raised an error on" in counted[0]["filters"]["zero_fid"]["error"]
    for name in ("bright", "zero_fid"):  # complete: every counted record received, 0 of 0 too
        listen = ["listen", "--bootstrap", kafka.bootstrap_servers, "--from-beginning"]
        listen += ["--counts-topic", cfg.counts_topic]  # an empty topic has no header naming it
        topic_out = f"{cfg.output_prefix}{name}"
        assert main([*listen, "--topic", topic_out, "--until-end", "--verify"]) == 0
        n = len(expected.get(name, ()))
        assert f"verified: complete, {n} of {n}" in capsys.readouterr().out


def test_rubin_filters_are_not_run_on_ztf_alerts():
    from alertsieve.filtering.model import FilterError
    from alertsieve.stream.plan import select_filters

    cfg = JobConfig(topic="z", survey="ztf", filters=["bright_high_snr"])
    with pytest.raises(FilterError, match="a filter for rubin alerts; this job reads ztf alerts"):
        select_filters(cfg, "ztf")
    names = {f.name for f in select_filters(JobConfig(topic="z", survey="ztf"), "ztf")}
    assert "bright_high_snr" not in names
