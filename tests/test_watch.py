"""``--watch`` with ``--on-bad-filter skip``: a filter added to a running job publishes to its
topic from the next batch on; one user's broken change and another's valid one, made together,
deploy the valid one (publishing under its new version) while the broken one's running version
goes on and a new broken module is left out, each refusal said on the console and on the counts
topic; no alert is lost or read twice across the redeployments (Kafka and the Delta archive
against plain Python)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections import Counter

import pytest
from confluent_kafka.admin import AdminClient
from job_helpers import (
    JOB_FILTERS,
    drain_archive,
    expected_matches,
    job_command,
    simulated_visit,
    wait_for,
)
from kafka_helpers import consume_all

from alertsieve.filtering.model import AlertFilter
from alertsieve.kafka.topics import end_offsets
from alertsieve.publish.versions import filter_version

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
