"""``--watch`` with ``--on-bad-filter skip``: a filter added to a running job publishes to its
topic from the next batch on; one user's broken change and another's valid one, made together,
deploy the valid one (publishing under its new version) while the broken one's running version
goes on and a new broken module is left out, each refusal said on the console and on the counts
topic; no alert is lost or read twice across the redeployments (Kafka and the Delta archive
against plain Python). And a job of 1,000 users' filters of one shape takes rows added, changed
and removed in its table without a restart."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
from collections import Counter

import pytest
import yaml
from confluent_kafka.admin import AdminClient
from job_helpers import (
    JOB_FILTERS,
    drain_archive,
    expected_matches,
    job_command,
    simulated_visit,
    wait_for,
)
from kafka_helpers import consume_all, consume_topics

from alertsieve.alerts.schemas import LocalSchemaStore, unframe
from alertsieve.filtering.model import AlertFilter
from alertsieve.kafka.topics import end_offsets
from alertsieve.publish.versions import filter_version
from alertsieve.stream.config import JobConfig
from alertsieve.stream.metrics import read_lines

#: The same cut as JOB_FILTERS["bright"], written the other way round: another version.
REWRITTEN_BRIGHT = "diaSource.reliability > 0.9 AND diaSource.snr > 50"


def _filter_file(path, name: str, sql: str) -> None:
    path.write_text(
        f'from alertsieve.filtering.model import AlertFilter\n\nFILTER = AlertFilter(name="{name}", sql={sql!r})\n'
    )


def _keys(bootstrap: str, topic: str) -> list[str]:
    return [m.key().decode() for m in consume_all(bootstrap, topic)]


@pytest.mark.slow
def test_watch_deploys_a_new_filter_refuses_a_broken_one_and_loses_nothing(
    kafka, spark, topic_name, tmp_path, processes
):
    bootstrap, schema_dir = kafka.bootstrap_servers, str(tmp_path / "schemas")
    folder, out = tmp_path / "filters", tmp_path / "job.out"
    folder.mkdir()
    _filter_file(folder / "bright.py", "bright", JOB_FILTERS["bright"][0])
    assert simulated_visit(bootstrap, topic_name, 41, schema_dir, 120).ok
    _, first = expected_matches(bootstrap, topic_name, schema_dir, ("bright", "first_seen"))
    with open(out, "w") as log:
        job = processes(
            job_command(
                bootstrap,
                topic_name,
                tmp_path,
                "--timeout",
                "400",
                "--watch",
                "--on-bad-filter",
                "skip",
                "--filter-path",
                str(folder),
                names=(),
            ),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    said = out.read_text
    try:
        wait_for(
            lambda: set(_keys(bootstrap, f"{topic_name}-bright")) >= first["bright"],
            "the first visit's matches",
            240,
            job,
        )

        _filter_file(folder / "first_seen.py", "first_seen", JOB_FILTERS["first_seen"][0])
        wait_for(
            lambda: "watch: deployed +first_seen" in said(), "the new filter deployed", 120, job
        )
        assert simulated_visit(bootstrap, topic_name, 42, schema_dir, 120).ok

        # Together: first_seen's file broken, a new module that does not import, and bright
        # written another way (the same alerts pass, under a new version).
        third = end_offsets(bootstrap, topic_name)
        _filter_file(folder / "first_seen.py", "first_seen", "diaSource.no_such_field > 1")
        (folder / "broken.py").write_text("FILTER = (\n")
        _filter_file(folder / "bright.py", "bright", REWRITTEN_BRIGHT)
        wait_for(
            lambda: "watch: deployed ~bright" in said(), "bright's new version deployed", 120, job
        )
        wait_for(
            lambda: "refused first_seen" in said() and "broken.py: the filter module" in said(),
            "the broken changes refused",
            120,
            job,
        )
        assert simulated_visit(bootstrap, topic_name, 43, schema_dir, 120).ok

        total, expected = expected_matches(
            bootstrap, topic_name, schema_dir, ("bright", "first_seen")
        )
        expected["first_seen"] -= first["first_seen"]  # deployed after the first visit was read
        wait_for(
            lambda: all(
                set(_keys(bootstrap, f"{topic_name}-{n}")) >= expected[n] for n in expected
            ),
            "every match of the three visits",
            240,
            job,
        )
    finally:
        os.killpg(job.pid, signal.SIGTERM)
        job.wait(90)
    lines = said().splitlines()
    first_seen_line = next(line for line in lines if "refused first_seen" in line)
    assert "no_such_field" in first_seen_line, first_seen_line
    assert first_seen_line.endswith("its running version goes on"), first_seen_line
    broken_line = next(line for line in lines if "broken.py: the filter module" in line)
    assert "SyntaxError" in broken_line and broken_line.endswith("left out"), broken_line
    assert not any("watch: change refused" in line for line in lines)  # nothing refused whole
    assert total == 360 and expected["first_seen"] and expected["bright"] - first["bright"]
    for name, want in expected.items():
        got = _keys(bootstrap, f"{topic_name}-{name}")
        assert set(got) == want and max(Counter(got).values()) == 1, name  # all, nothing twice
    assert (
        f"{topic_name}-broken"
        not in AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics
    )

    versions = {
        filter_version(AlertFilter(name="bright", sql=sql)): sql
        for sql in (JOB_FILTERS["bright"][0], REWRITTEN_BRIGHT)
    }
    assert len(versions) == 2
    # first_seen published under its running version throughout, and the counts topic said so.
    running = filter_version(AlertFilter(name="first_seen", sql=JOB_FILTERS["first_seen"][0]))
    assert {
        dict(m.headers())["filter_version"].decode()
        for m in consume_all(bootstrap, f"{topic_name}-first_seen")
    } == {running}
    refused = [
        json.loads(m.value())["filters"]
        for m in consume_all(bootstrap, f"{topic_name}-counts")
        if json.loads(m.value())["kind"] == "refused"
    ]
    assert any(
        r.get("first_seen", {}).get("running_versions") == {"first_seen": running} for r in refused
    ), refused
    assert any(
        r.get(str(folder / "broken.py"), {}).get("running_versions") == {} for r in refused
    ), refused
    new = filter_version(AlertFilter(name="bright", sql=REWRITTEN_BRIGHT))
    for m in consume_all(bootstrap, f"{topic_name}-bright"):
        h = {k: v.decode() for k, v in m.headers()}
        in_third = int(h["source_offset"]) >= third[int(h["source_partition"])]
        assert h["filter_version"] in versions and (h["filter_version"] == new) == in_third, h
    # The drain is a fresh archive process planning from the folder: the users' fixes first.
    _filter_file(folder / "first_seen.py", "first_seen", JOB_FILTERS["first_seen"][0])
    (folder / "broken.py").unlink()
    drain_archive(spark, bootstrap, topic_name, tmp_path, "--filter-path", str(folder), names=())
    rows = (
        spark.read.format("delta")
        .load(str(tmp_path / "delta" / "matches"))
        .select("filters", "alert_id")
        .collect()
    )
    assert max(Counter(r["alert_id"] for r in rows).values()) == 1  # exactly once
    assert {n: {r["alert_id"] for r in rows if n in r["filters"]} for n in expected} == expected


def _users_table(path, rows: dict[str, tuple[float, float]]) -> None:
    """A table of users' filters of one shape, each publishing a JSON record of two fields."""
    table = {
        "defaults": {
            "sql": USERS_SHAPE,
            "payload": "fields",
            "format": "json",
            "fields": {"snr": "diaSource.snr", "reliability": "diaSource.reliability"},
        },
        "filters": [
            {"name": name, "params": {"min_snr": snr, "min_reliability": rel}}
            for name, (snr, rel) in rows.items()
        ],
    }
    path.write_text(yaml.safe_dump(table, sort_keys=False))


#: The users' shape, and the same cut over a fastavro-decoded alert (the oracle).
USERS_SHAPE = "diaSource.snr > {min_snr} AND diaSource.reliability > {min_reliability}"


def _passes(alert: dict, snr: float, rel: float) -> bool:
    s = alert["diaSource"]
    return (
        s["snr"] is not None
        and s["reliability"] is not None
        and s["snr"] > snr
        and s["reliability"] > rel
    )


@pytest.mark.slow
def test_rows_of_a_known_shape_deploy_to_a_running_job_of_1000_without_a_restart(
    kafka, spark, topic_name, tmp_path, caplog
):
    """A job of 1,000 users' filters of one shape, under ``--watch``: one user added, one
    changed and one removed in the table, saved while it runs, take effect from the batch after
    the save (the same query: one id and run id, batch ids consecutive); every filter publishes
    exactly what plain Python selects from the fastavro-decoded alerts, with the constants in
    force when each alert was read."""
    import threading

    from alertsieve.stream.job import FilterStream

    bootstrap, schema_dir = kafka.bootstrap_servers, str(tmp_path / "schemas")
    assert simulated_visit(bootstrap, topic_name, 51, schema_dir, 150).ok
    store = LocalSchemaStore(schema_dir)

    def alerts() -> dict[str, dict]:
        out = {}
        for m in consume_all(bootstrap, topic_name):
            schema_id, body = unframe(m.value())
            out[m.key().decode()] = store.get(schema_id).decode(body)
        return out

    first = alerts()
    snrs = sorted(a["diaSource"]["snr"] for a in first.values() if a["diaSource"]["snr"])
    # 1,000 users each passing 0-3% of a visit, and two passing about half of it
    rows = {f"u{k:04d}": (snrs[-1 - k % 5], -1.0 + k / 1000) for k in range(1000)}
    median = snrs[len(snrs) // 2]
    rows["u0001"] = rows["u0002"] = (median, -1.0)
    folder = tmp_path / "filters"
    folder.mkdir()
    _users_table(folder / "users.yaml", rows)
    prefix = f"{topic_name}-"
    cfg = JobConfig(
        bootstrap=bootstrap,
        topic=topic_name,
        output_prefix=prefix,
        output_partitions=1,
        discover_filters=False,
        filter_paths=[str(folder)],
        watch=True,
        sinks=["kafka"],
        checkpoint=str(tmp_path / "ckpt"),
        metrics_path=str(tmp_path / "m.jsonl"),
        schema_dir=schema_dir,
        survey="rubin",
        timeout_s=600,
    )
    caplog.set_level(logging.INFO, logger="alertsieve")
    job = FilterStream(spark, cfg)
    assert "filters: 1000 as rows of 1 shape(s), 0 compiled one by one" in caplog.messages
    runner = threading.Thread(target=job.run)
    runner.start()
    read = lambda: sum(b["input_rows"] for b in read_lines(tmp_path / "m.jsonl"))  # noqa: E731
    try:
        wait_for(lambda: (tmp_path / "m.jsonl").exists() and read() == 150, "visit 1", 300)
        after = dict(rows)
        after["newcomer"] = (median, -1.0)
        after["u0002"] = (snrs[len(snrs) // 4], -1.0)  # changed: a lower cut
        del after["u0001"]
        _users_table(folder / "users.yaml", after)
        wait_for(lambda: "as rows of the running query" in caplog.text, "the deployment", 180)
        assert simulated_visit(bootstrap, topic_name, 52, schema_dir, 150).ok
        wait_for(lambda: read() == 300, "visit 2", 180)
    finally:
        job.stop()
        runner.join(120)
    assert not runner.is_alive()
    line = next(r.getMessage() for r in caplog.records if "as rows of the" in r.getMessage())
    assert line.startswith("watch: deployed +newcomer -u0001 ~u0002 as rows"), line

    lines = read_lines(tmp_path / "m.jsonl")
    assert len({(b["spark"]["id"], b["spark"]["runId"]) for b in lines}) == 1  # no restart
    assert [b["batch_id"] for b in lines] == list(range(lines[0]["batch_id"], len(lines)))
    second = {k: a for k, a in alerts().items() if k not in first}
    expected = {
        name: {k for k, a in first.items() if _passes(a, *rows[name])} if name in rows else set()
        for name in {*rows, *after}
    }
    for name, constants in after.items():
        expected[name] |= {k for k, a in second.items() if _passes(a, *constants)}
    assert expected["newcomer"] and expected["u0002"] - expected["u0001"]
    got: dict[str, list[str]] = {name: [] for name in expected}
    versions = {}
    for m in consume_topics(bootstrap, [f"{prefix}{name}" for name in expected]):
        name, key = m.topic().removeprefix(prefix), m.key().decode()
        got[name].append(key)
        record = json.loads(m.value())
        alert = {**first, **second}[key]["diaSource"]
        assert (record["snr"], record["reliability"]) == pytest.approx(
            (alert["snr"], alert["reliability"])
        )
        versions.setdefault(name, set()).add(dict(m.headers())["filter_version"])
    assert {n: sorted(k) for n, k in got.items()} == {n: sorted(k) for n, k in expected.items()}
    assert len(versions["u0002"]) == 2 and len(versions["u0003"]) == 1  # changed: a new version
    batch_of_second = [b for b in lines if b["matches"].get("newcomer")]
    assert sum(b["matches"]["newcomer"] for b in batch_of_second) == len(expected["newcomer"])
