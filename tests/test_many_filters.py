"""A broker's many users' filters in one job: a filter table of 150 rows (past the count where the
hot path leaves whole-stage code generation), through a real broker and Spark, every filter's
output equal to fastavro + plain Python over the very bytes produced (simulated and real alerts)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import yaml
from crafted import real_messages
from kafka_helpers import consume_all, consume_topics, fields_record, send

from alertsieve.alerts.schemas import LocalSchemaStore, unframe
from alertsieve.filtering.discovery import counts_by_source, discover
from alertsieve.filtering.model import FilterError
from alertsieve.kafka.topics import create_topic
from alertsieve.produce.producer import ProduceConfig, produce
from alertsieve.stream.config import JobConfig
from alertsieve.stream.job import run_job
from alertsieve.stream.sink_settings import WHOLE_STAGE_MAX_FILTERS

N = 150
SNR = (5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0)
RELIABILITY = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)


def fill(bootstrap: str, topic: str, schema_dir: str, alerts: int, seed: int) -> None:
    """A simulated visit of ``alerts`` (small cutouts, 2 partitions), then the real alerts."""
    assert produce(
        ProduceConfig(
            bootstrap=bootstrap,
            topic=topic,
            visits=1,
            alerts_per_visit=alerts,
            seed=seed,
            interval_s=0,
            stamp_size=16,
            partitions=2,
            progress=False,
            schema_dir=schema_dir,
        )
    ).ok
    send(bootstrap, topic, real_messages())


def users_table(folder, n: int = N) -> dict:
    """A filter table: one shape in ``defaults``, a row per user with their own cuts."""
    table = {
        "defaults": {
            "sql": "pmod(diaSource.diaSourceId, {modulus}) = {k} AND diaSource.snr > {snr}"
            " AND diaSource.reliability > {reliability}",
            "params": {"modulus": n, "k": 0, "snr": 5.0, "reliability": 0.0},
            "contact": "users@example.org",
        },
        "filters": [
            {
                "name": f"user_{k:03d}",
                "params": {"k": k, "snr": SNR[k % 7], "reliability": RELIABILITY[k % 9]},
            }
            for k in range(n)
        ],
    }
    (folder / "users.yaml").write_text(yaml.safe_dump(table))
    return table


def matches(alert: dict, k: int, n: int = N) -> bool:
    """Plain Python of the table's SQL (Python's % of a positive modulus is Spark's pmod)."""
    s = alert["diaSource"]
    snr, rel = s.get("snr"), s.get("reliability")
    return (
        s["diaSourceId"] % n == k
        and snr is not None
        and snr > SNR[k % 7]
        and rel is not None
        and rel > RELIABILITY[k % 9]
    )


def test_a_table_defines_many_filters(tmp_path):
    users_table(tmp_path)
    found = discover([tmp_path], builtin=False, entry_points=False)
    assert [f.name for f in found] == [f"user_{k:03d}" for k in range(N)]
    assert found[7].params == {"modulus": N, "k": 7, "snr": 5.0, "reliability": 0.7}
    assert found[7].contact == "users@example.org"
    assert found[7].origin == f"{tmp_path / 'users.yaml'} (filters[7])"
    assert counts_by_source(found) == [("any", "sql", str(tmp_path / "users.yaml"), N)]


def test_a_bad_row_is_named(tmp_path):
    (tmp_path / "t.yaml").write_text(
        yaml.safe_dump({"filters": [{"name": "a", "sql": "true"}, {"name": "b"}]})
    )
    with pytest.raises(FilterError, match=r"t.yaml \(filters\[1\]\).*sql"):
        discover([tmp_path], builtin=False, entry_points=False)


def test_a_module_may_define_a_list_of_filters(tmp_path):
    (tmp_path / "many.py").write_text(
        "from alertsieve.filtering.model import AlertFilter\n"
        "FILTERS = [AlertFilter(name=f'snr_{s}', sql=f'diaSource.snr > {s}') for s in (5, 10, 20)]\n"
    )
    assert [f.name for f in discover([tmp_path], builtin=False, entry_points=False)] == [
        "snr_5",
        "snr_10",
        "snr_20",
    ]


def test_many_filters_publish_exactly_what_plain_python_selects(kafka, spark, tmp_path, topic_name):
    bootstrap, schema_dir = kafka.bootstrap_servers, str(tmp_path / "schemas")
    users_table(tmp_path)
    fill(bootstrap, topic_name, schema_dir, alerts=400, seed=31)

    store = LocalSchemaStore(schema_dir)
    alerts, raw = {}, {}
    for m in consume_all(bootstrap, topic_name):
        schema_id, body = unframe(m.value())
        alert = store.get(schema_id).decode(body)  # each by its own writer schema (7.4, 10.0, 11.1)
        key = str(alert["diaSource"]["diaSourceId"])
        alerts[key], raw[key] = alert, m.value()
    expected = {f"user_{k:03d}": {i for i, a in alerts.items() if matches(a, k)} for k in range(N)}
    assert (
        sum(bool(v) for v in expected.values()) > N // 2
    )  # most filters have something to publish

    prefix = f"{topic_name}-"
    cfg = JobConfig(
        bootstrap=bootstrap,
        topic=topic_name,
        available_now=True,
        max_offsets_per_trigger=200,
        output_prefix=prefix,
        output_partitions=1,
        discover_filters=False,
        filter_paths=[str(tmp_path)],
        sinks=["kafka"],
        checkpoint=str(tmp_path / "ckpt"),
        metrics_path=str(tmp_path / "m.jsonl"),
        schema_dir=schema_dir,
        survey="rubin",
    )
    assert N > WHOLE_STAGE_MAX_FILTERS
    before = spark.conf.get("spark.sql.codegen.wholeStage")
    run_job(cfg, spark=spark)
    assert spark.conf.get("spark.sql.codegen.wholeStage") == before  # the session is left as found

    got: dict[str, list[str]] = {name: [] for name in expected}
    for m in consume_topics(bootstrap, [f"{prefix}{name}" for name in expected]):
        name = m.topic().removeprefix(prefix)
        headers = dict(m.headers())
        assert headers["filter"] == name.encode()
        assert m.value() == raw[m.key().decode()]
        got[name].append(m.key().decode())
    assert {k: sorted(v) for k, v in got.items()} == {k: sorted(v) for k, v in expected.items()}
    lines = [json.loads(x) for x in (tmp_path / "m.jsonl").read_text().splitlines()]
    assert sum(b["input_rows"] for b in lines) == len(alerts)
    assert {n: sum(b["matches"][n] for b in lines) for n in expected} == {
        n: len(v) for n, v in expected.items()
    }


def test_output_topics_are_created_in_requests_the_controller_takes(kafka, topic_name, monkeypatch):
    """Few requests (one each took minutes at a thousand filters), each under the controller's
    limits (ten thousand filters' topics in one were refused): here a limit of 9 records, so
    the 39 missing topics of 2 partitions go three to a request."""
    from confluent_kafka.admin import AdminClient

    from alertsieve.kafka import topics as kafka_topics
    from alertsieve.kafka.topics import create_topics

    monkeypatch.setattr(kafka_topics, "RECORDS_PER_REQUEST", 9)
    create_topic(kafka.bootstrap_servers, f"{topic_name}-0", 1)
    names = [f"{topic_name}-{i}" for i in range(40)]
    assert create_topics(kafka.bootstrap_servers, names, 2) == names[1:]  # the first existed
    topics = (
        AdminClient({"bootstrap.servers": kafka.bootstrap_servers}).list_topics(timeout=30).topics
    )
    assert [len(topics[n].partitions) for n in names] == [1] + [2] * 39


def test_a_deployment_of_many_filters_is_one_readable_line():
    from alertsieve.stream.redeploy import SHOWN_CHANGES, describe_change

    before = {f"user_{k}": "a" for k in range(1000)}
    after = {**{f"user_{k}": "b" for k in range(500)}, **{f"new_{k}": "c" for k in range(100)}}
    line = describe_change(before, after)
    assert len(line.split()) == SHOWN_CHANGES + 9  # the named ones, then "and N more (...)"
    assert line.endswith("and 1080 more (100 added, 500 removed, 500 changed)")


def test_filters_that_lack_the_same_fields_are_one_line_at_start_up():
    from alertsieve.filtering.lacking import lacking_lines

    old = ["7.0", "7.1"]
    lacking = {f"u{k:04d}": {"diaSource.scienceFlux": old} for k in range(1000)}
    lacking["mine"] = {"diaSource.isDipole": old, "diaSource.scienceFlux": ["7.0"]}
    assert lacking_lines(lacking) == [
        "filters u0000, u0001, u0002 and 997 more: null in version(s) 7.0, 7.1:"
        " diaSource.scienceFlux",
        "filter mine: null in version(s) 7.0, 7.1: diaSource.isDipole",
        "filter mine: null in version(s) 7.0: diaSource.scienceFlux",
    ]


def test_a_realistic_population_runs_as_data_and_publishes_what_its_twins_select(
    kafka, spark, tmp_path, topic_name, capsys
):
    """Users' filters of 14 shapes and free SQL, tuned to pass 0.01-5% of simulated and real
    alerts, run over them: those that read as clauses matched predicate first, the shape that
    compares two fields as rows of a table, and every filter publishes exactly the alerts its
    numpy twin selects over fastavro-decoded bytes, each as the record or the alert it asks
    for."""
    from alertsieve.bench.user_population import columns, population
    from alertsieve.stream.job import FilterStream

    bootstrap, schema_dir = kafka.bootstrap_servers, str(tmp_path / "schemas")
    fill(bootstrap, topic_name, schema_dir, alerts=2000, seed=32)
    store = LocalSchemaStore(schema_dir)
    alerts, raw = [], {}
    for m in consume_all(bootstrap, topic_name):
        schema_id, body = unframe(m.value())
        alerts.append(store.get(schema_id).decode(body))
        raw[str(alerts[-1]["diaSource"]["diaSourceId"])] = m.value()
    keys = [str(a["diaSource"]["diaSourceId"]) for a in alerts]
    users = population(300, alerts, seed=3)  # tuned on these alerts: 0.01-5% of them each
    # two users of one shape who want the whole alert: a shape of its own, as data
    users += [
        replace(
            u, filter=replace(u.filter, name=f"{u.filter.name}_whole", payload="alert", fields={})
        )
        for u in [v for v in users if v.template == "snr"][:2]
    ]
    cols = columns(alerts)
    expected = {
        u.filter.name: sorted(k for k, hit in zip(keys, u.twin(cols), strict=True) if hit)
        for u in users
    }
    assert all(expected.values())  # each has something to publish

    prefix = f"{topic_name}-"
    cfg = JobConfig(
        bootstrap=bootstrap,
        topic=topic_name,
        available_now=True,
        max_offsets_per_trigger=1000,
        output_prefix=prefix,
        output_partitions=1,
        discover_filters=False,
        code_filters=[u.filter for u in users],
        sinks=["kafka"],
        checkpoint=str(tmp_path / "ckpt"),
        metrics_path=str(tmp_path / "m.jsonl"),
        schema_dir=schema_dir,
        survey="rubin",
        filters_as_data=True,
        free_sql_rows_from=2,
        predicates_from=100,  # the default: from 100 filters that read as clauses
    )
    job = FilterStream(spark, cfg)
    first = {job.plan.filters[i].name for i in job.plan.predicates.filters}
    shaped = {job.plan.filters[i].name for s in job.plan.shapes for i in s.members}
    # Every filter that reads as clauses is matched predicate first, free SQL included; the
    # shape that compares two fields (``x > k * y``) runs as rows of a table (one whose constant
    # is another kind, ``2`` for ``2.0``, is a shape of its own, or compiles when alone).
    compiled = {job.plan.filters[i].name for i in job.plan.compiled}
    assert {u.filter.name for u in users if u.template not in ("brightening",)} == first
    assert {u.filter.name for u in users if u.template == "brightening"} == shaped | compiled
    assert len(shaped) > len(compiled)
    # filters that publish the alert itself, and fields records, among the predicate-first ones
    assert {by.payload for by in job.plan.filters if by.name in first} == {"alert", "fields"}
    lines = job.run()

    by_name = {u.filter.name: u.filter for u in users}
    got: dict[str, list[str]] = {name: [] for name in expected}
    for m in consume_topics(bootstrap, [f"{prefix}{name}" for name in expected]):
        name, key, headers = m.topic().removeprefix(prefix), m.key().decode(), dict(m.headers())
        assert headers["filter"] == name.encode()
        if by_name[name].payload == "alert":
            assert m.value() == raw[key]
        else:
            record = fields_record(m, store)
            assert (record["alert_id"], record["filter"], record["band"]) == (
                key,
                name,
                alerts[keys.index(key)]["diaSource"]["band"],
            )
        got[name].append(key)
    assert {k: sorted(v) for k, v in got.items()} == expected
    assert {n: sum(b["matches"][n] for b in lines) for n in expected} == {
        n: len(v) for n, v in expected.items()
    }
    assert sum(b["quarantined_rows"] for b in lines) == 0
    # matched apart from the alerts' bytes: each batch says what it built, and into which records
    # it joined an alert's bytes (``alertsieve.stream.bytes_apart``)
    whole = sum(len(got[n]) for n in expected if by_name[n].payload == "alert")
    assert sum(b["stages"]["records"] for b in lines) == sum(len(v) for v in got.values())
    assert sum(b["stages"]["records_whole"] for b in lines) == whole > 0
    assert all(b["stages"]["matcher"] > 0 for b in lines)
    shared_delivery_publishes_each_alert_once(spark, cfg, users, expected, raw, tmp_path, capsys)
    # the noop sink (the cost of evaluation alone): every match counted, no record built
    noop = cfg.model_copy(update={"sinks": ["noop"], "checkpoint": str(tmp_path / "ckpt-noop")})
    lines = FilterStream(spark, noop).run()
    assert {n: sum(b["matches"][n] for b in lines) for n in expected} == {
        n: len(v) for n, v in expected.items()
    }


def shared_delivery_publishes_each_alert_once(spark, cfg, users, expected, raw, tmp_path, capsys):
    """The same filters and alerts with ``delivery: shared``: each alert that passed any filter
    is one record of ``<prefix>matches`` naming exactly the filters whose twins select it, each
    with its version and, for a fields filter, its fields; a filter with its own topic keeps
    it; ``listen --filter NAME --verify`` on the shared topic finds a sample of filters complete
    with their twins' counts; the Delta archive lists each alert's filters as before."""
    from alertsieve.cli import main
    from alertsieve.stream.job import FilterStream

    prefix = cfg.output_prefix.replace("-", "-shared-")
    own = users[1].filter.name  # keeps a topic of its own
    filters = [
        replace(u.filter, topic=f"{prefix}own") if u.filter.name == own else u.filter for u in users
    ]
    shared_cfg = cfg.model_copy(
        update={
            "delivery": "shared",
            "output_prefix": prefix,
            "code_filters": filters,
            "checkpoint": str(tmp_path / "ckpt-shared"),
            "metrics_path": str(tmp_path / "m-shared.jsonl"),
            "sinks": ["kafka", "delta"],
            "delta_path": str(tmp_path / "delta"),
        }
    )
    job = FilterStream(spark, shared_cfg)
    assert not job.plan.shapes  # shared: an alert's filters in its one row (brightening compiled)
    lines = job.run()
    assert {n: sum(b["matches"][n] for b in lines) for n in expected} == {
        n: len(v) for n, v in expected.items()
    }
    by_alert: dict[str, set[str]] = {}
    for name, keys in expected.items():
        for key in keys:
            if name != own:
                by_alert.setdefault(key, set()).add(name)
    records = consume_all(cfg.bootstrap, f"{prefix}matches")
    assert sorted(m.key().decode() for m in records) == sorted(by_alert)  # each alert once
    by_name = {f.name: f for f in filters}
    for m in records:
        key, headers = m.key().decode(), dict(m.headers())
        entries = json.loads(headers["filters"])
        assert {e["filter"] for e in entries} == by_alert[key]
        alert_wanted = any(by_name[e["filter"]].payload == "alert" for e in entries)
        assert headers["payload"] == (b"alert" if alert_wanted else b"fields")
        if alert_wanted:
            assert m.value() == raw[key]
        else:
            assert json.loads(m.value())["alert_id"] == key
        for e in entries:
            f = by_name[e["filter"]]
            assert e["filter_version"] == job.plan.versions[f.name]
            assert set(e.get("fields") or {}) == set(f.fields)
    assert (
        sorted(m.key().decode() for m in consume_all(cfg.bootstrap, f"{prefix}own"))
        == (expected[own])
    )
    sample = [u.filter.name for u in users if u.filter.name != own][::60]
    for name in sample:
        capsys.readouterr()
        argv = ["listen", "--bootstrap", cfg.bootstrap, "--topic", f"{prefix}matches"]
        argv += ["--filter", name, "--from-beginning", "--until-end", "--verify"]
        assert main(argv) == 0
        said = capsys.readouterr().out
        assert f"{len(expected[name])} matches in" in said, said
        n = len(expected[name])
        last = said.splitlines()[-1]
        assert last.startswith(f"verified: complete, {n} of {n} counted records received"), said
        assert "1 filter versions" in last, said
    archived = spark.read.format("delta").load(f"{tmp_path}/delta/matches")
    rows = {r["alert_id"]: set(r["filters"]) for r in archived.collect()}
    assert {k: v for k, v in rows.items() if v - {own}} == {
        k: v | ({own} if k in expected[own] else set()) for k, v in by_alert.items()
    }
