"""The commands on their success paths where no other test runs them, each against an oracle of
its own: the installed packages' versions for the jars, the schema files for the view, astropy for
HEALPix orders, Kafka's own record-batch format on disk for what the producer sent, the admin API
for a cluster (test_faults' three brokers). Then: every subcommand (and action) is run by some test, named in RUN_BY."""

from __future__ import annotations

import ast
import csv
import importlib.metadata
import io
import json
import math
import struct
import subprocess
import sys
from pathlib import Path

import fastavro
import numpy as np
import pytest
from astropy import units as u
from kafka_helpers import consume_all

from alertsieve.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "alertsieve.cli"]


def cli(*args: str, timeout: float = 600) -> str:
    done = subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout


@pytest.mark.slow  # processes of their own
def test_setup_and_jars_name_the_connectors_of_the_installed_spark_and_delta():
    said = cli("setup")
    conf = Path(
        next(
            line.split(": ", 1)[1] for line in said.splitlines() if "spark-submit defaults:" in line
        )
    )
    settings = dict(line.split(" ", 1) for line in conf.read_text().splitlines() if line.strip())
    spark = cli("jars").strip().split(",")
    assert settings["spark.jars"].split(",") == spark  # what spark-submit runs with
    assert settings["spark.pyspark.python"] == sys.executable
    names = [Path(p).name for p in spark]
    assert all(Path(p).is_file() for p in spark)
    pyspark, delta = (
        importlib.metadata.version("pyspark"),
        importlib.metadata.version("delta-spark"),
    )
    assert f"spark-sql-kafka-0-10_2.13-{pyspark}.jar" in names
    assert any(n.startswith("delta-spark_") and n.endswith(f"-{delta}.jar") for n in names), names
    broker = [Path(p).name for p in cli("jars", "--kafka").strip().split(",")]
    server = next(n for n in broker if n.startswith("kafka-server-"))
    version = server.removeprefix("kafka-server-").removesuffix(".jar")
    assert f"kafka_2.13-{version}.jar" in broker and f"kafka-clients-{version}.jar" in broker


@pytest.mark.slow  # processes of their own
def test_schemas_view_of_two_versions_has_every_field_of_each():
    from lsst.alert.packet.schema import Schema, get_schema_path

    out = cli("schemas", "view", "--versions", "7.4,11.1")
    assert "(versions 7.4, 11.1)" in out
    for major, minor in ((7, 4), (11, 1)):
        path = Path(get_schema_path(major, minor)) / f"lsst.v{major}_{minor}.alert.avsc"
        definition = Schema.from_file(str(path)).definition
        for field in definition["fields"]:
            assert f"`{field['name']}" in out, (major, minor, field["name"])
    assert "is_negative" in out and "isNegative" in out  # 7.4's name and 11.1's, side by side


def _order_for(radius_arcsec: float) -> int:
    """Deepest order whose mean pixel (astropy: square root of 4 pi sr / 12 / 4**order) is at
    least four radii wide, as docs/catalogs.md states the rule."""
    size = lambda o: np.sqrt(4 * np.pi * u.sr / (12 * 4**o)).to(u.arcsec).value  # noqa: E731
    return max(o for o in range(18) if size(o) >= 4 * radius_arcsec)


def _write_csv(path: Path, rows: list[dict]) -> Path:
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


@pytest.mark.slow  # processes of their own
def test_catalogs_and_watch_maps_are_added_and_listed(tmp_path):
    folder = str(tmp_path / "catalogs")
    stars = _write_csv(
        tmp_path / "stars.csv",
        [
            {"name": n, "ra": ra, "dec": dec, "mag": m}
            for n, ra, dec, m in (
                ("a", 10.0, -5.0, 9.1),
                ("b", 10.01, -5.0, 11.0),
                ("c", 200.0, 60.0, 7.5),
            )
        ],
    )
    added = cli("catalog", "add", "stars", str(stars), "--radius", "5", "--catalog-dir", folder)
    line = f"xmatch.stars: catalog of 3 rows from {stars}, radius 5 arcsec; HEALPix order {_order_for(5)}"
    assert added.splitlines()[0].startswith(line)
    assert added.splitlines()[1] == f"filters read it as xmatch.stars (catalog folder {folder})"

    # A pixel list at order 13 (deeper than maps are kept): its four children of one order-12 pixel
    # become that pixel, and a lone order-13 pixel its parent.
    parent, lone = 1_000_000, 123_456_789
    pixels = _write_csv(
        tmp_path / "field.csv", [{"ipix": p} for p in (*range(4 * parent, 4 * parent + 4), lone)]
    )
    mapped = cli(
        "watch", "add", "field", str(pixels), "--map", "--order", "13", "--catalog-dir", folder
    )
    assert mapped.splitlines()[0].startswith(
        f"watch.field: watchmap of 2 pixels from {pixels}; HEALPix order 12"
    )
    targets = _write_csv(
        tmp_path / "targets.csv",
        [{"ra": 150.0, "dec": 2.2, "r": 3.0}, {"ra": 151.0, "dec": 2.0, "r": 8.0}],
    )
    listed = cli(
        "watch", "add", "targets", str(targets), "--radius-column", "r", "--catalog-dir", folder
    )
    assert listed.splitlines()[0].startswith(
        f"watch.targets: watchlist of 2 rows from {targets}, largest radius 8 arcsec;"
        f" HEALPix order {_order_for(8)}"
    )

    assert [
        x.split(":")[0] for x in cli("catalog", "list", "--catalog-dir", folder).splitlines()
    ] == ["xmatch.stars"]
    assert [
        x.split(":")[0] for x in cli("watch", "list", "--catalog-dir", folder).splitlines()
    ] == ["watch.field", "watch.targets"]


def _batches(segment: Path):
    """(attributes, record count) of every record batch of a Kafka log segment, read with Kafka's
    documented v2 batch layout: baseOffset 8, batchLength 4, ..., attributes at 21, count at 57."""
    data, at = segment.read_bytes(), 0
    while at + 61 <= len(data):
        (length,) = struct.unpack(">i", data[at + 8 : at + 12])
        attributes = struct.unpack(">h", data[at + 21 : at + 23])[0]
        count = struct.unpack(">i", data[at + 57 : at + 61])[0]
        yield attributes, count
        at += 12 + length


@pytest.mark.integration
def test_produce_with_its_options_sends_what_they_say(kafka, topic_name, tmp_path):
    from registry_server import FIRST_ID, serve

    journal = tmp_path / "acks"
    with serve() as (url, registry):
        said = cli(
            "produce",
            "--bootstrap",
            kafka.bootstrap_servers,
            "--topic",
            topic_name,
            "--alerts-per-visit",
            "120",
            "--interval",
            "0",
            "--partitions",
            "1",
            "--no-stamps",
            "--compression",
            "zstd",
            "--ack-journal",
            str(journal),
            "--schema-registry",
            url,
            "--kafka-conf",
            "batch.num.messages=7",
            "--seed",
            "3",
        )
        writer = fastavro.parse_schema(json.loads(registry.schemas[0]))
    messages = consume_all(kafka.bootstrap_servers, topic_name)
    assert len(messages) == 120 and "120" in said
    for m in messages:
        assert struct.unpack(">bI", m.value()[:5]) == (0, FIRST_ID)  # the registry's id
        alert = fastavro.schemaless_reader(io.BytesIO(m.value()[5:]), writer, None)
        assert alert["cutoutDifference"] is None and alert["cutoutScience"] is None  # --no-stamps
    acked = {line for f in journal.iterdir() for line in f.read_text().split()}
    assert acked == {m.key().decode() for m in messages}  # --ack-journal: every acknowledged id
    batches = [
        b
        for seg in (kafka.node_dir(kafka.nodes[0]) / "data" / f"{topic_name}-0").glob("*.log")
        for b in _batches(seg)
    ]
    assert sum(count for _, count in batches) == 120
    assert all(attributes & 0x7 == 4 for attributes, _ in batches)  # zstd, Kafka's codec 4
    assert max(count for _, count in batches) <= 7 and len(batches) >= math.ceil(
        120 / 7
    )  # --kafka-conf


@pytest.mark.integration
def test_bench_produce_sends_the_alerts_each_run_reports(kafka):
    from alertsieve.kafka.topics import end_offsets, topics_with_prefix

    before = set(topics_with_prefix(kafka.bootstrap_servers, "bench-produce-"))
    result = json.loads(
        cli(
            "bench",
            "produce",
            "--bootstrap",
            kafka.bootstrap_servers,
            "--alerts",
            "200",
            "--seeds-alerts",
            "20",
            "-q",
        )
    )
    assert [r["alerts"] for r in result["ours"]] == [200] * 8 and [
        r["alerts"] for r in result["seeds_way"]
    ] == [20] * 4
    sent = [
        t for t in topics_with_prefix(kafka.bootstrap_servers, "bench-produce-") if t not in before
    ]
    assert (
        sorted(
            sum(end_offsets(kafka.bootstrap_servers, t).values())
            for t in sent
            if sum(end_offsets(kafka.bootstrap_servers, t).values())
        )
        == [200] * 4
    )  # the four runs that send


def commands() -> set[str]:
    """Every subcommand of the parser, and with its actions where it has a choice of them."""
    out = set()
    top = build_parser()._subparsers._group_actions[0].choices
    for name, parser in top.items():
        actions = next(
            (a.choices for a in parser._actions if a.dest in ("action", "what") and a.choices), None
        )
        out |= {f"{name} {a}" for a in actions} if actions else {name}
    return out


#: Each command's success path and the test that runs it (file::test), or None with the reason.
RUN_BY: dict[str, str | None] = {
    "setup": "test_commands.py::test_setup_and_jars_name_the_connectors_of_the_installed_spark_and_delta",
    "jars": "test_commands.py::test_setup_and_jars_name_the_connectors_of_the_installed_spark_and_delta",
    "kafka start": "test_faults.py::cluster3",
    "kafka stop": "test_faults.py::cluster3",
    "kafka status": "test_faults.py::cluster3",
    "produce": "test_commands.py::test_produce_with_its_options_sends_what_they_say",
    "filter": "test_faults.py::test_the_driver_killed_again_and_again",
    "archive": "test_archive.py::test_the_archive_killed_mid_way_then_run_again_holds_every_match_once",
    "filters list": "test_wheel.py::test_the_installed_job_finds_and_checks_every_contributed_filter",
    "filters check": "test_wheel.py::test_the_installed_job_finds_and_checks_every_contributed_filter",
    "filters diff": "test_filters_diff.py::test_diff_on_the_command_line",
    "backtest": "test_backtest.py::test_the_backtest_command_counts_the_nights_it_is_given_and_exits_on_the_rate",
    "bench produce": "test_commands.py::test_bench_produce_sends_the_alerts_each_run_reports",
    "schemas view": "test_commands.py::test_schemas_view_of_two_versions_has_every_field_of_each",
    "catalog add": "test_commands.py::test_catalogs_and_watch_maps_are_added_and_listed",
    "catalog list": "test_commands.py::test_catalogs_and_watch_maps_are_added_and_listed",
    "watch add": "test_commands.py::test_catalogs_and_watch_maps_are_added_and_listed",
    "watch list": "test_commands.py::test_catalogs_and_watch_maps_are_added_and_listed",
    "listen": "test_faults.py::test_the_driver_killed_again_and_again",
    "annotate": "test_objects_job.py::test_real_ztf_objects_their_annotations_and_the_filters_they_trigger",
    "demo": "test_front_door.py::test_demo_leaves_nothing_running_and_no_spark_log_lines",
    "bench run": "conftest.py::quick_results",
    "bench soak": "test_soak.py::test_a_short_soak_with_a_kill_loses_nothing",
    "bench stream": "test_bench_quick.py::test_each_bench_command_quick_counts_what_plain_python_counts",
    "bench models": "test_bench_quick.py::test_each_bench_command_quick_counts_what_plain_python_counts",
    "bench filters": "test_bench_quick.py::test_each_bench_command_quick_counts_what_plain_python_counts",
    "bench payloads": "test_bench_quick.py::test_each_bench_command_quick_counts_what_plain_python_counts",
    "bench objects": "test_bench_quick.py::test_each_bench_command_quick_counts_what_plain_python_counts",
    "bench xmatch": "test_bench_quick.py::test_each_bench_command_quick_counts_what_plain_python_counts",
    "bench latency": "test_bench_quick.py::test_each_bench_command_quick_counts_what_plain_python_counts",
    "warm status": "test_warm.py::test_backtests_share_a_warm_session_read_edits_and_leave_other_surveys_aside",
    "warm stop": "test_warm.py::test_backtests_share_a_warm_session_read_edits_and_leave_other_surveys_aside",
}


def _test_source(where: str) -> str:
    """The test's text, its decorators (where a parametrized test's commands come from) included."""
    file, name = where.split("::")
    text = (ROOT / "tests" / file).read_text()
    function = next(
        (n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.FunctionDef) and n.name == name),
        None,
    )
    assert function is not None, f"{where}: no such test"
    first = min([function.lineno, *(d.lineno for d in function.decorator_list)])
    return "\n".join(text.splitlines()[first - 1 : function.end_lineno])


def test_every_command_is_run_by_a_test():
    assert set(RUN_BY) == commands()
    for command, where in RUN_BY.items():
        if where is None:
            continue
        source = _test_source(where)
        for word in command.split():  # the command's words are in the test (or the helper it calls)
            helpers = {
                "filter": "job_command",
                "archive": "_archive_command",
                "backtest": "_runnable",
            }
            assert f'"{word}"' in source or helpers.get(word, "\0") in source, (command, where)


def test_every_setting_is_set_by_a_test():
    """Every JobConfig field (but those only code sets) appears as a keyword of a JobConfig(...) in
    the tests, as a key of a settings file they write (YAML text, or a dict they dump), or through
    the flag that sets it."""
    from alertsieve.stream.config import JobConfig

    parser = build_parser()._subparsers._group_actions[0].choices["filter"]
    flag_dest = {s: a.dest for a in parser._actions for s in a.option_strings if s.startswith("--")}
    seen: set[str] = set()
    for path in (ROOT / "tests").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(
                node.func, "id", getattr(node.func, "attr", None)
            ) in ("JobConfig", "model_copy"):
                seen |= {k.arg for k in node.keywords if k.arg}
                for k in node.keywords:
                    if k.arg == "update" and isinstance(k.value, ast.Dict):
                        seen |= {key.value for key in k.value.keys if isinstance(key, ast.Constant)}
            elif isinstance(node, ast.Dict):
                seen |= {
                    key.value
                    for key in node.keys
                    if isinstance(key, ast.Constant) and isinstance(key.value, str)
                }
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                seen |= set(flag_dest.get(node.value, "").split()) | {
                    line.split(":")[0].strip() for line in node.value.splitlines() if ":" in line
                }
    code_only = {
        n for n, f in JobConfig.model_fields.items() if (f.json_schema_extra or {}).get("code_only")
    }
    assert sorted(set(JobConfig.model_fields) - code_only - seen) == []
