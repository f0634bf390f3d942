"""Every benchmark's ``--quick`` run, as the command a user types (run in this process, on the
tests' session: a Spark JVM less per command), against the session's broker:
the counts in its JSON (alerts read, matches per filter, records published) are checked against
the test's own view: the topics' offsets, and the filters' conditions evaluated in plain Python
over the alerts fastavro decodes from those topics. Rates and times are measured, not asserted:
only that they are there and positive."""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable
from dataclasses import replace

import fastavro
import numpy as np
import pytest
from kafka_helpers import consume_all

from alertsieve.alerts.schemas import LocalSchemaStore, unframe
from alertsieve.bench.broker_filters import bench_filters
from alertsieve.bench.commands.filters import user_filters
from alertsieve.cli import main
from alertsieve.kafka.topics import end_offsets, topics_with_prefix
from alertsieve.publish.contract import SOURCE_OFFSET, SOURCE_PARTITION

pytestmark = pytest.mark.integration

# -- the filters' conditions in plain Python --------------------------------------------------------


def _field(alert: dict, path: str):
    value = alert
    for key in path.split("."):
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _term(text: str) -> Callable[[dict], bool]:
    """One term of the benchmarks' SQL, as SQL reads it: a comparison with a null is not true."""
    if m := re.fullmatch(r"size\(([\w.]+)\) = 0", text):
        return lambda a, p=m[1]: _field(a, p) is not None and len(_field(a, p)) == 0
    if m := re.fullmatch(r"([\w.]+) IS NOT NULL", text):
        return lambda a, p=m[1]: _field(a, p) is not None
    if m := re.fullmatch(r"pmod\(([\w.]+), (\d+)\) = (\d+)", text):
        p, modulus, k = m[1], int(m[2]), int(m[3])
        return lambda a: _field(a, p) is not None and _field(a, p) % modulus == k
    m = re.fullmatch(r"([\w.]+) ([<>]) ([-+.\w]+)", text)
    assert m, f"a term this test does not read: {text}"
    p, op, v = m[1], m[2], float(m[3])

    def compare(a: dict) -> bool:
        x = _field(a, p)
        return x is not None and not math.isnan(x) and (x > v if op == ">" else x < v)

    return compare


def condition(sql: str) -> Callable[[dict], bool]:
    """A conjunction of the benchmarks' filters (``a AND b AND ...``) in plain Python."""
    terms = [_term(t.strip()) for t in sql.split(" AND ")]
    return lambda a: all(t(a) for t in terms)


def matches(filters: list, alerts: list[dict]) -> dict[str, int]:
    """{filter name: how many of ``alerts`` its condition passes}."""
    return {f.name: sum(condition(f.sql)(a) for a in alerts) for f in filters}


# -- the test's view of the broker ------------------------------------------------------------------


def offsets(bootstrap: str, topic: str) -> int:
    return sum(end_offsets(bootstrap, topic).values())


def decode(store: LocalSchemaStore, message) -> dict:
    """A message's alert, unframed and decoded with fastavro (Rubin's schema ids)."""
    schema_id, body = unframe(message.value())
    return store.get(schema_id).decode(body)


def decoded(bootstrap: str, topic: str, store: LocalSchemaStore) -> list[dict]:
    """Every alert of ``topic``."""
    return [decode(store, m) for m in consume_all(bootstrap, topic)]


def quick_run(command: list[str], bootstrap: str | None, capsys) -> tuple[dict, list[str]]:
    """``alertsieve COMMAND --quick`` (against ``bootstrap`` if given), in this process on the
    tests' session (a benchmark's command uses the session running, as in a notebook): its JSON
    and the topics it made."""
    before = set(topics_with_prefix(bootstrap, "bench-")) if bootstrap else set()
    args = [*command, "--quick", "-q", *(["--bootstrap", bootstrap] if bootstrap else [])]
    code = main(args)
    out = capsys.readouterr()
    assert code == 0, out.err[-3000:]
    made = set(topics_with_prefix(bootstrap, "bench-")) - before if bootstrap else set()
    return json.loads(out.out), sorted(made)


def inputs(made: list[str], kind: str) -> list[str]:
    """The input topics a benchmark made (``bench-KIND-<8 hex>``), not its outputs."""
    return [t for t in made if re.fullmatch(rf"bench-{kind}-[0-9a-f]{{8}}", t)]


def positive(*rates) -> None:
    assert all(r is not None and r > 0 for r in rates), rates


def assert_published(bootstrap: str, prefix: str, filters: list, want: dict[str, int]) -> None:
    """Each filter's output topic ``PREFIX<name>`` holds exactly ``want[name]`` records."""
    got = {f.name: offsets(bootstrap, f"{prefix}{f.name}") for f in filters}
    assert got == want, (prefix, got, want)


def assert_latency_runs(bootstrap, made, store, runs, filters_of: Callable[[set], list]) -> None:
    """Latency runs (``bench.rate.at_rate``) cycle through a pool of distinct alerts, each phase a
    whole number of pools: each phase saw the matches it expected, and expected what plain Python
    finds in the pool times the pools sent; the input topics hold every alert sent; every record
    published is of an alert its filter's condition passes, once. (The job reads from the latest
    offset, so the warm-up's first alerts may come before it starts: they are not counted.)
    ``filters_of``: the measured filters, from a run's output names."""
    from kafka_helpers import consume_topics

    from alertsieve.bench.commands.latency import QUICK_LATENCY

    per_pool: dict[int, int] = {}  # filters measured -> matches in one pool
    latency_inputs = inputs(made, "latency")
    for topic in latency_inputs:
        messages = consume_all(bootstrap, topic)
        alerts = {(m.partition(), m.offset()): decode(store, m) for m in messages}
        pool = {a["diaSource"]["diaSourceId"]: a for a in alerts.values()}
        assert len(pool) == QUICK_LATENCY.pool
        filters = filters_of({t[len(topic) + 1 :] for t in made if t.startswith(f"{topic}-")})
        per_pool[len(filters)] = sum(matches(filters, list(pool.values())).values())
        by_topic = {f"{topic}-{f.name}": condition(f.sql) for f in filters}
        published = consume_topics(bootstrap, list(by_topic))
        sources = [(m.topic(), dict(m.headers())) for m in published]
        keys = [(t, int(h[SOURCE_PARTITION]), int(h[SOURCE_OFFSET])) for t, h in sources]
        assert len(set(keys)) == len(keys), "a match published twice"
        assert all(by_topic[t](alerts[(p, o)]) for t, p, o in keys), "a record its filter fails"
    assert sum(offsets(bootstrap, t) for t in latency_inputs) == sum(
        int(r["steady"]["alerts_per_s"] * r["warmup_s"])
        + r["steady"]["alerts"]
        + r["burst"]["alerts"]
        for r in runs
    )
    assert len(latency_inputs) == len(runs), latency_inputs
    for run in runs:
        for phase in (run["steady"], run["burst"]):
            pools, rest = divmod(phase["alerts"], QUICK_LATENCY.pool)
            assert rest == 0 and phase["matches_expected"] == pools * per_pool[run["filters"]], run
            assert phase["matches_seen"] == phase["matches_expected"], phase
            assert phase["latency_ms"]["n"] == phase["matches_seen"], phase
        positive(run["steady"]["alerts_per_s"])


# -- each benchmark's checks -------------------------------------------------------------------------


def check_stream(result: dict, made: list[str], bootstrap: str, store: LocalSchemaStore) -> None:
    from alertsieve.bench.commands.stream import QUICK

    (topic,) = inputs(made, "stream")
    alerts = decoded(bootstrap, topic, store)
    shape = result["topic"]
    assert len(alerts) == shape["alerts"] == shape["visits"] * shape["alerts_per_visit"] == 300
    assert result["ceiling_plain_consumer"]["alerts"] == len(alerts)
    assert result["seeds_way_fastavro_python_10_filters"]["alerts"] == QUICK["seeds_alerts"]
    positive(
        result["ceiling_plain_consumer"]["alerts_per_s"],
        result["seeds_way_fastavro_python_10_filters"]["alerts_per_s"],
    )
    assert [r["filters"] for r in result["ours"]] == list(QUICK["filter_counts"])
    for run, label in [(r, f"sql{r['filters']}") for r in result["ours"]] + [
        (r, f"py{r['filters']}") for r in result["ours_python_filters"]
    ]:
        sql = bench_filters(run["filters"])[0]
        want = matches(sql, alerts)
        assert run["alerts"] == len(alerts) and run["matches"] == sum(want.values()), run
        positive(run["steady_alerts_per_s"], run["mb_per_s"])
        # a Python filter is named py_<its SQL twin's name>
        prefix = f"{topic}-{label}-" + ("py_" if label.startswith("py") else "")
        assert_published(bootstrap, prefix, sql, want)
    live, (live_topic,) = result["live_at_survey_cadence"], inputs(made, "live")
    assert offsets(bootstrap, live_topic) == live["visits"] * live["alerts_per_visit"] == 600
    assert None not in live["visit_filtered_after_first_alert_s"], live
    ten = bench_filters(10)[0]
    assert_published(
        bootstrap, f"{live_topic}-", ten, matches(ten, decoded(bootstrap, live_topic, store))
    )
    runs = result["latency_input_append_to_output_append"]
    assert len(runs) == 2  # the triggers realtime and 0
    assert_latency_runs(bootstrap, made, store, runs, lambda _: bench_filters(10)[0])
    check_history_axis(result["history_axis"]["points"], made, bootstrap, store)
    check_model_axis(result["model_axis"], made, bootstrap, QUICK["model_rounds"])


def check_model_axis(axis: dict, made: list[str], bootstrap: str, rounds: int) -> None:
    """The topic holds the real alerts the rounds sent; the model ran once per alert in the runs
    that read its score (none in the one that does not), and each run's matches are what the
    plain cut and fink-science's own scores say."""
    from crafted import ztf_history_files
    from fink_oracle import fink_anomaly_scores

    from alertsieve.bench.commands.models import PLAIN, THRESHOLDS

    (topic,) = inputs(made, "models")
    alerts = [next(fastavro.reader(open(p, "rb"))) for p in ztf_history_files()]
    assert topic == axis["topic"] and offsets(bootstrap, topic) == axis["alerts"]
    assert axis["alerts"] == rounds * len(alerts)
    scores = fink_anomaly_scores(alerts)
    bright = sum(a["candidate"]["magpsf"] < float(PLAIN.split("<")[1]) for a in alerts)
    runs = {r["run"]: r for r in axis["runs"]}
    invoked = [r["model_invocations"]["ztf_anomaly"] for r in runs.values()]
    assert invoked == [0, axis["alerts"], axis["alerts"]]
    for name, thresholds in [("without", ()), ("read1", THRESHOLDS[:1]), ("read10", THRESHOLDS)]:
        anomalous = sum(s < t for t in thresholds for s in scores)
        assert runs[name]["matches"] == rounds * (bright + anomalous), name
        positive(runs[name]["steady_alerts_per_s"])


def check_models(result: dict, made: list[str], bootstrap: str, store) -> None:
    """``bench models``: the cost of each Rubin model by history; on the LSST-like topic and the
    real one, each model ran once per alert in the runs reading it and never in the others; on
    the real topic every run's matches are what plain Python and fink-science's own classifiers
    say (the ZTF axis is ``bench stream``'s, checked there)."""
    from fink_rubin_oracle import classified, prime

    from alertsieve.bench.commands.models import QUICK, RUBIN_PLAIN, SN_THRESHOLDS

    assert [p["earlier_detections"] for p in result["rubin_cost_by_history"]] == [0, 20, 400]
    positive(*[p["snn_sn_vs_other_seconds_per_1000"] for p in result["rubin_cost_by_history"]])
    uses = {
        "without": (),
        "snn_read1": ("snn_sn_vs_other",),
        "read1": ("snn_sn_vs_other", "cats"),
        "read10": ("snn_sn_vs_other", "cats"),
    }
    for axis, kind in (("rubin_lsst_like", "models-lsst-like"), ("rubin_real", "models-real")):
        runs = {r["run"]: r for r in result[axis]["runs"]}
        (topic,) = inputs(made, kind)
        assert offsets(bootstrap, topic) == result[axis]["alerts"]
        for name, models in uses.items():
            for m in ("snn_sn_vs_other", "cats"):
                want = result[axis]["alerts"] if m in models else 0
                assert runs[name]["model_invocations"][m] == want, (axis, name, m)
            positive(runs[name]["steady_alerts_per_s"])
    alerts = decoded(bootstrap, result["rubin_real"]["topic"], store)
    assert len(alerts) == QUICK["real_rounds"] * 47
    prime(alerts)
    minimum = float(RUBIN_PLAIN.split(">")[1])
    plain = sum((a["diaSource"]["snr"] or 0) > minimum for a in alerts)
    scores = [classified(a) for a in alerts]
    sn = [c["snn"] for c in scores if c["cats"]["class"] == 11]  # SN-like to CATS
    runs = {r["run"]: r for r in result["rubin_real"]["runs"]}
    expected = {
        "without": plain,
        "snn_read1": plain + sum(c["snn"] > SN_THRESHOLDS[0] for c in scores),
    }
    for name, thresholds in (("read1", SN_THRESHOLDS[:1]), ("read10", SN_THRESHOLDS)):
        expected[name] = plain + sum(s > t for t in thresholds for s in sn)
    assert {n: r["matches"] for n, r in runs.items()} == expected
    assert result["ztf"] is None and QUICK["ztf_rounds"] == 0


def check_history_axis(points: list[dict], made: list[str], bootstrap: str, store) -> None:
    """Each point's topic holds its alerts, and every one of them carries exactly that point's
    number of earlier detections (fastavro's count of ``prvDiaSources``)."""
    from alertsieve.bench.commands.stream import HISTORIES, QUICK

    assert [p["earlier_detections"] for p in points] == list(HISTORIES)
    for p in points:
        (topic,) = inputs(made, f"history{p['earlier_detections']}")
        lengths = [len(a["prvDiaSources"] or []) for a in decoded(bootstrap, topic, store)]
        assert topic == p["topic"] and p["alerts"] == QUICK["history_alerts"]
        assert lengths == [p["earlier_detections"]] * p["alerts"]
        positive(p["bytes_only_alerts_per_s"], p["filter_alerts_per_s"], p["mean_alert_kb"])


def check_filters(result: dict, made: list[str], bootstrap: str, store: LocalSchemaStore) -> None:
    (topic,) = inputs(made, "filters")
    alerts = decoded(bootstrap, topic, store)
    assert len(alerts) == result["topic"]["alerts"] == 300
    assert result["spark_bytes_only"]["alerts"] == len(alerts)
    positive(result["plain_read"]["alerts_per_s"], result["spark_bytes_only"]["alerts_per_s"])
    assert [r["filters"] for r in result["runs"]] == [10, 1, 10]
    for run in result["runs"]:
        broker_like = run["kind"] == "broker-like templates"
        label = "broker10" if broker_like else f"users{run['filters']}"
        filters = bench_filters(10)[0] if broker_like else user_filters(run["filters"])[0]
        want = matches(filters, alerts)
        assert run["alerts"] == len(alerts) and run["published"] == sum(want.values()), run
        assert run["republish"]["alerts"] == len(alerts), run["republish"]
        assert run["republish"]["published"] == run["published"], run["republish"]
        # the republish baseline writes its copy of each record to the same topics
        twice = {name: 2 * n for name, n in want.items()}
        assert_published(bootstrap, f"{topic}-{label}-", filters, twice)
        positive(run["marginal_alerts_per_s"], run["republish"]["alerts_per_s"])
    runs = result["realtime_250_per_s"]
    assert [r["filters"] for r in runs] == [1, 10]
    assert_latency_runs(
        bootstrap,
        made,
        store,
        runs,
        lambda names: user_filters(sum(n.startswith("user_") for n in names))[0],
    )


def check_payloads(result: dict, made: list[str], bootstrap: str, store: LocalSchemaStore) -> None:
    (topic,) = inputs(made, "payloads")
    alerts = decoded(bootstrap, topic, store)
    assert len(alerts) == result["topic"]["alerts"] == 300
    ten = bench_filters(10)[0]
    assert result["filters"] == [f.name for f in ten]
    want = matches(ten, alerts)
    assert set(result["payloads"]) == {"alert", "fields-avro", "fields-json", "fields-avro-history"}
    for payload, run in result["payloads"].items():
        assert run["records_published"] == sum(want.values()), (payload, run, want)
        assert_published(bootstrap, f"{topic}-{payload}-0-", ten, want)
        positive(run["marginal_alerts_per_s"], run["bytes_published"] or None)
    positive(result["spark_bytes_only"]["alerts_per_s"])


def check_objects(result: dict, made: list[str], bootstrap: str, store: LocalSchemaStore) -> None:
    """The same ten filters with and without object state: the same matches, plain Python's; the
    state holds every object of the topic (each simulated alert draws its own)."""
    (topic,) = inputs(made, "objects")
    alerts = decoded(bootstrap, topic, store)
    assert len(alerts) == result["topic"]["alerts"] == 2_000
    ten = bench_filters(10)[0]
    want = matches(ten, alerts)
    for run in ("stateless", "objects"):
        assert {n: v for n, v in result[run]["matches"].items() if v} == {
            n: v for n, v in want.items() if v
        }, run
        positive(result[run]["marginal_alerts_per_s"])
    assert_published(bootstrap, f"{topic}-objects-", ten, want)
    twins = [replace(f, name=f"{f.name}_object") for f in ten]  # beside the stateless ones
    assert_published(
        bootstrap,
        f"{topic}-beside-",
        [*ten, *twins],
        {**want, **{f"{n}_object": v for n, v in want.items()}},
    )
    positive(result["stateless_beside_objects"]["marginal_alerts_per_s"])
    ids = {a["diaSource"]["diaObjectId"] or a["diaSource"]["ssObjectId"] for a in alerts}
    assert result["state"]["objects"] == len(ids) > 1_900
    positive(result["ratio_objects_to_stateless"], result["state"]["disk_bytes"])


def check_xmatch(result: dict, tmp_path) -> None:
    """No broker: one simulated visit against uniform catalogs; the matches are the alerts with a
    catalog row within the radius, found here by brute force over unit vectors."""
    import pandas as pd

    from alertsieve.bench.commands.xmatch import _uniform_catalog
    from alertsieve.sim.simulator import AlertSimulator, SimulationConfig

    assert result["alerts"] == 300
    sim = AlertSimulator(SimulationConfig(schema_version="11.1", stamp_size=0, seed=5))
    alerts = [a["diaSource"] for a in sim.visit_alerts(0, count=300)]
    sources = unit_vectors(
        np.array([a["ra"] for a in alerts]), np.array([a["dec"] for a in alerts])
    )
    positive(result["baseline_visit_s"])
    assert [p["rows"] for p in result["catalogs"]] == [10_000, 100_000]
    for point in result["catalogs"]:
        assert "error" not in point, point
        _uniform_catalog(tmp_path / "cat.parquet", point["rows"])
        table = pd.read_parquet(tmp_path / "cat.parquet")
        catalog = unit_vectors(table["ra"].to_numpy(), table["dec"].to_numpy())
        nearest = np.degrees(np.arccos(np.clip((sources @ catalog.T).max(axis=1), -1, 1)))
        want = int(np.sum(nearest * 3600 < result["radius_arcsec"]))
        assert point["matches"] == want > 0, (point, want)
        positive(point["visit_s"])


def unit_vectors(ra_deg: np.ndarray, dec_deg: np.ndarray) -> np.ndarray:
    ra, dec = np.radians(ra_deg), np.radians(dec_deg)
    return np.stack([np.cos(dec) * np.cos(ra), np.cos(dec) * np.sin(ra), np.sin(dec)], axis=1)


def check_latency(result: dict, made: list[str], bootstrap: str, store: LocalSchemaStore) -> None:
    runs = result["runs"]
    assert [len(r["context_filters"]) for r in runs] == [0, 2]
    assert_latency_runs(bootstrap, made, store, runs, lambda _: bench_filters(10)[0])


def test_each_bench_command_quick_counts_what_plain_python_counts(kafka, spark, tmp_path, capsys):
    bootstrap, store = kafka.bootstrap_servers, LocalSchemaStore(tmp_path / "schemas")
    took = {}
    # the synthetic population, whose plain-Python twins these checks parse from its SQL
    extra = {"filters": ["--population", "pmod"]}
    for what, broker, check in [
        ("xmatch", None, lambda result, _: check_xmatch(result, tmp_path)),
        ("payloads", bootstrap, lambda *run: check_payloads(*run, bootstrap, store)),
        ("objects", bootstrap, lambda *run: check_objects(*run, bootstrap, store)),
        (
            "filters",
            bootstrap,
            lambda *run: check_filters(*run, bootstrap, store),
        ),
        ("latency", bootstrap, lambda *run: check_latency(*run, bootstrap, store)),
        ("stream", bootstrap, lambda *run: check_stream(*run, bootstrap, store)),
        ("models", bootstrap, lambda *run: check_models(*run, bootstrap, store)),
    ]:
        start = time.monotonic()
        check(*quick_run(["bench", what, *extra.get(what, [])], broker, capsys))
        assert spark.range(3).count() == 3, f"bench {what} left the session it was given stopped"
        took[what] = round(time.monotonic() - start)
    print(f"bench --quick runs and their checks took (s): {took}")
