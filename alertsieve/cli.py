"""The `alertsieve` command: thin argument parsing over the library."""

from __future__ import annotations

import argparse
import json
import sys

from alertsieve import logs
from alertsieve.bench.soak_plan import SoakPlan
from alertsieve.errors import AlertsieveError
from alertsieve.kafka import embedded
from alertsieve.settings import SettingsError
from alertsieve.sim import VISIT_CADENCE_S
from alertsieve.stream.flags import add_arguments
from alertsieve.subscribe import command as listen


def _cmd_setup(args: argparse.Namespace) -> int:
    from alertsieve.setup_env import run_setup

    report = run_setup()
    for step in report.steps:
        print(f"  {step}")
    print(f"setup done in {report.seconds:.1f}s")
    return 0


def _cmd_jars(args: argparse.Namespace) -> int:
    from alertsieve.spark.jars import kafka_broker_jars, spark_connector_jars

    jars = kafka_broker_jars() if args.kafka else spark_connector_jars()
    print(",".join(str(j) for j in jars.jars))
    return 0


def _cmd_kafka(args: argparse.Namespace) -> int:
    if args.action == "start":
        cluster = embedded.start(
            args.data_dir, brokers=args.brokers, port=args.port, heap=args.heap
        )
        print(cluster.bootstrap_servers)
    elif args.action == "stop":
        stopped = embedded.stop(args.data_dir)
        print(
            f"stopped {len(stopped)} broker(s): {stopped}" if stopped else "no broker was running"
        )
        if args.purge:
            embedded.purge(args.data_dir)
    else:
        state = embedded.status(args.data_dir)
        print(json.dumps(state, indent=2))
        return 0 if state["running"] else 1
    return 0


def _parse_conf(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise SystemExit(f"alertsieve: --kafka-conf expects KEY=VALUE, got {pair!r}")
        out[key.strip()] = value.strip()
    return out


def _cmd_produce(args: argparse.Namespace) -> int:
    from alertsieve.produce.producer import ProduceConfig, produce

    kafka_conf: dict = _parse_conf(args.kafka_conf)
    for key, value in (("linger.ms", args.linger_ms), ("batch.size", args.batch_size),
                       ("compression.type", args.compression)):  # fmt: skip
        if value is not None:
            kafka_conf[key] = value
    summary = produce(
        ProduceConfig(
            bootstrap=args.bootstrap,
            topic=args.topic,
            visits=args.visits,
            alerts_per_visit=args.alerts_per_visit,
            interval_s=args.interval,
            producers=args.producers,
            partitions=args.partitions,
            stamp_size=0 if args.no_stamps else args.stamp_size,
            max_history=args.history,
            schema_version=args.schema_version,
            seed=args.seed,
            replay=args.replay or [],
            metrics_path=args.metrics,
            kafka_conf=kafka_conf,
            schema_registry=args.schema_registry,
            schema_dir=args.schema_dir,
            progress=not args.quiet,
            ack_journal_dir=args.ack_journal,
        )
    )
    print(summary.line())
    for report in summary.reports:
        for err in report.errors:
            print(f"visit {report.visit} producer {report.producer}: {err}", file=sys.stderr)
    return 0 if summary.ok else 1


def _cmd_bench_run(args: argparse.Namespace) -> int:
    from alertsieve.bench.experiments import load_experiment
    from alertsieve.bench.runner import run_experiments

    if not args.experiments:
        raise SystemExit(
            "alertsieve bench run: name experiment files, e.g. conf/experiments/*.yaml"
        )
    experiments = [load_experiment(path, quick=args.quick) for path in args.experiments]
    root = args.results or ("results/quick" if args.quick else "results")
    results = run_experiments(experiments, root, args.bootstrap, progress=not args.quiet)
    failed = [r for r in results if r["status"] != "ok"]
    print(json.dumps({
        "results": root,
        "points_run": len(results),
        "failed": [{"experiment": r["experiment"], "point": r["point"], "error": r["error"]} for r in failed],
        "headlines": [{"experiment": r["experiment"], **r["point"], **r.get("headline", {})} for r in results],
    }, indent=2))  # fmt: skip
    return 1 if failed else 0


def _cmd_bench(args: argparse.Namespace) -> int:
    if args.what == "run":
        return _cmd_bench_run(args)
    if args.what == "latency":
        from alertsieve.bench.latency import bench_context_latency

        result = bench_context_latency(args.bootstrap)
    elif args.what == "filters":
        from alertsieve.bench.filters import bench_filters_per_job

        result = bench_filters_per_job(args.bootstrap, counts=tuple(int(x) for x in args.filter_counts.split(",")),
                                       alerts=args.alerts, batch=args.batch)  # fmt: skip
        if args.figure:
            from alertsieve.bench.filters import plot_filters_per_job

            plot_filters_per_job(result, args.figure)
    elif args.what == "payloads":
        from alertsieve.bench.payloads import bench_payloads

        result = bench_payloads(args.bootstrap, alerts=args.alerts, batch=args.batch)
    elif args.what == "soak":
        from alertsieve.bench.soak import soak

        plan = SoakPlan(alerts=args.alerts, trigger=args.trigger, filters=args.filters, kill_after_s=args.kill_after,
                        rate=args.rate, visit_size=args.visit_size, interval_s=args.live_interval,
                        sample_s=args.sample_every, heap_every_s=args.heap_every, oracle_visits=args.check_visits)
        result = soak(plan, args.out, args.bootstrap)  # fmt: skip
    elif args.what == "xmatch":
        from alertsieve.bench.xmatch import bench_xmatch

        result = bench_xmatch(tuple(int(float(x)) for x in args.catalog_rows.split(",")))
    elif args.what == "produce":
        from alertsieve.bench.produce import bench_produce

        result = bench_produce(args.bootstrap, alerts=args.alerts, seeds_alerts=args.seeds_alerts)
    else:
        from alertsieve.bench.stream import bench_stream

        result = bench_stream(
            args.bootstrap,
            visits=args.visits,
            alerts_per_visit=args.alerts,
            filter_counts=tuple(int(x) for x in args.filter_counts.split(",")),
            python_filter_counts=tuple(int(x) for x in args.python_filter_counts.split(",") if x),
            batch=args.batch,
            seeds_alerts=args.seeds_alerts,
            live_visits=args.live_visits,
            live_interval_s=args.live_interval,
            latency_triggers=tuple(t for t in args.latency.split(",") if t),
        )
    print(json.dumps(result, indent=2))
    return 0


def _cmd_filter(args: argparse.Namespace) -> int:
    from alertsieve.stream.config import load_config
    from alertsieve.stream.flags import overrides
    from alertsieve.stream.job import run_job

    cfg = load_config(args.config, overrides(args))
    chosen = len(cfg.filters) if cfg.filters else "all"
    print(
        f"filter stream: {cfg.topic or cfg.topic_pattern} at {cfg.bootstrap} -> {', '.join(cfg.sinks)};"
        f" filters: {chosen}; checkpoint {cfg.checkpoint}; kafka settings {cfg.masked_kafka_conf()}",
        flush=True,
    )
    written = run_job(cfg)
    total = sum(line["input_rows"] for line in written)
    quarantined = sum(line["quarantined_rows"] for line in written)
    print(f"done: {len(written)} batch(es), {total} alerts, {quarantined} quarantined")
    return 0


def _cmd_archive(args: argparse.Namespace) -> int:
    from alertsieve.stream.config import load_config
    from alertsieve.stream.flags import overrides
    from alertsieve.stream.job import run_archive

    cfg = load_config(args.config, overrides(args))
    print(f"archive: the filters' topics ({cfg.output_prefix}*) at {cfg.bootstrap} -> {cfg.delta_path};"
          f" every {cfg.archive_trigger_seconds:g} s; checkpoint {cfg.archive_checkpoint}", flush=True)  # fmt: skip
    counts = run_archive(cfg)
    print(f"done: {counts['matches']} matched alerts, {counts['quarantine']} quarantined in {cfg.delta_path}")
    return 0


def _chosen_filters(names: str | None, paths: list[str] | None):
    from alertsieve.filtering.discovery import discover
    from alertsieve.filtering.model import FilterError

    found = discover(paths or [])
    if not names:
        return found
    by_name = {f.name: f for f in found}
    missing = [n for n in names.split(",") if n not in by_name]
    if missing:
        raise FilterError(f"no filter named {missing}; known: {sorted(by_name)}")
    return [by_name[n] for n in names.split(",")]


#: ``filters list`` shows each filter up to this many, and counts by source beyond.
LIST_IN_FULL = 30


def _cmd_filters(args: argparse.Namespace) -> int:
    filters = _chosen_filters(args.name, args.filter_path)
    if args.action == "list" and args.names:
        print("\n".join(f.name for f in filters))
        return 0
    if args.action == "list" and len(filters) > LIST_IN_FULL:
        from alertsieve.filtering.discovery import counts_by_source

        print(f"{len(filters)} filters  ('--names' lists every name; 'filters list NAME[,NAME]' shows those)")
        print(f"{'filters':>7}  {'survey':<6} {'kind':<7} source")
        for survey, kind, source, n in counts_by_source(filters):
            print(f"{n:>7}  {survey:<6} {kind:<7} {source}")
        return 0
    if args.action == "list":
        from alertsieve.publish.versions import filter_versions

        versions = filter_versions(filters, args.catalog_dir)
        for f in filters:
            kind = f.kind
            summary = (f.description or "").strip().splitlines()[0] if f.description else ""
            publishes = "alert" if f.payload == "alert" else f"fields ({f.format}: {', '.join(f.fields)})"
            print(f"{f.name:<22} {kind:<7} {summary}")
            print(f"{'':<22} {'':<7} version {versions[f.name]}; publishes {publishes}")
            print(f"{'':<22} {'':<7} {f.origin}; params {dict(f.params)}")
        return 0
    if args.action == "diff":
        return _filters_diff(args)
    from alertsieve.catalogs.store import CatalogError
    from alertsieve.filtering.lacking import lacking_fields, lacking_lines
    from alertsieve.filtering.model import FilterError
    from alertsieve.filtering.prepare import prepare
    from alertsieve.publish.payloads import check_payload, record_types
    from alertsieve.spark.session import command_session
    from alertsieve.view.decode_settings import DecodeSettings
    from alertsieve.view.surveys import rubin_decoder, ztf_decoder

    decoders = {"rubin": rubin_decoder(DecodeSettings(survey="rubin")), "ztf": ztf_decoder([])}
    failures = 0
    with command_session("alertsieve-filters-check", conf={"spark.ui.enabled": "false"}) as spark:
        for f in filters:
            decoder = decoders[f.survey or "rubin"]

            def payload(samples, f=f, decoder=decoder) -> None:
                check_payload(f)
                record_types([f], decoder, {f.name: ""}, samples)  # its fields compile on every version

            try:
                prepared = prepare(spark, [f], decoder, catalog_dir=args.catalog_dir, check=payload)
                print(f"ok      {f.name} ({decoder.survey})")
                for line in lacking_lines(lacking_fields(decoder, [f], prepared.reads)):
                    print(f"        {line}")
            except (FilterError, CatalogError) as e:
                failures += 1
                print(f"FAILED  {e}")
    return 1 if failures else 0


def _filters_diff(args: argparse.Namespace) -> int:
    from alertsieve.backtest.diff import diff, diff_lines, filter_named
    from alertsieve.backtest.sources import load_alerts
    from alertsieve.filtering.model import FilterError
    from alertsieve.spark.session import command_session

    if not args.name or "," in args.name or not args.input or not args.against:
        raise FilterError("filters diff takes one filter NAME, --input (alerts) and --against PATH"
                          " (the file or folder holding the filter as it runs now)")  # fmt: skip
    after = filter_named(args.name, args.filter_path or [])
    before = filter_named(args.name, [args.against], builtin=False)
    with command_session("alertsieve-filters-diff", conf={"spark.ui.enabled": "false"}) as spark:
        alerts = load_alerts(spark, args.input, args.bootstrap, args.schema_dir)
        result = diff(spark, before, after, alerts, args.catalog_dir)
    print("\n".join(diff_lines(result, args.against, after.origin, args.show)))
    return 0


def _night(text: str):
    """An observing night on the command line: an ISO date, or a clear error naming the form."""
    from datetime import date

    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a night: give a date, YYYY-MM-DD") from None


def _cmd_backtest(args: argparse.Namespace) -> int:
    from alertsieve.backtest.report import report
    from alertsieve.backtest.run import backtest, for_survey
    from alertsieve.backtest.sources import load_alerts
    from alertsieve.spark.session import command_session

    filters = _chosen_filters(args.filter, args.filter_path)
    with command_session("alertsieve-backtest", conf={"spark.ui.enabled": "false"}) as spark:
        alerts = load_alerts(spark, args.input, args.bootstrap, args.schema_dir)
        filters = for_survey(filters, alerts.decoder.survey, ", ".join(args.input), named=bool(args.filter))
        rows = backtest(spark, filters, alerts, args.catalog_dir, args.since, args.until)
        text, ok = report(rows, args.max_rate)
    print(text)
    return 0 if ok else 1



def _cmd_schemas(args: argparse.Namespace) -> int:
    from alertsieve.alerts.schemas import rubin_versions
    from alertsieve.alerts.view import view_document

    versions = args.versions.split(",") if args.versions else [
        v for v in rubin_versions() if int(v.split(".")[0]) >= 7
    ]  # fmt: skip
    print(view_document(versions), end="")
    return 0


def _cmd_catalog(args: argparse.Namespace) -> int:
    """``catalog add|list`` and ``watch add|list``: index a file for ``xmatch.NAME`` / ``watch.NAME``."""
    from alertsieve.catalogs.store import add_catalog, add_watchmap, describe, list_catalogs

    if args.action == "list":
        family = "xmatch" if args.command == "catalog" else "watch"
        for meta in list_catalogs(args.catalog_dir):
            if meta.family == family:
                print(describe(meta))
        return 0
    if not (args.name and args.file):
        raise SettingsError(f"{args.command} add needs NAME and FILE")
    if args.command == "catalog":
        meta = add_catalog(args.catalog_dir, args.name, args.file, args.ra, args.dec, args.radius)
    elif args.map:
        meta = add_watchmap(args.catalog_dir, args.name, args.file, args.order)
    else:
        meta = add_catalog(args.catalog_dir, args.name, args.file, args.ra, args.dec, args.radius or 1.0,
                           kind="watchlist", radius_column=None if args.radius else args.radius_column)  # fmt: skip
    print(describe(meta))
    print(f"filters read it as {meta.family}.{meta.name} (catalog folder {args.catalog_dir})")
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from alertsieve.demo import run_demo

    return 0 if run_demo(args.visits, args.alerts_per_visit)["ok"] else 1


def _sky_table_parser(sub, command: str, what: str, file_help: str) -> argparse.ArgumentParser:
    """``catalog`` and ``watch``: the same verbs, name, file, position columns and folder."""
    parser = sub.add_parser(command, help=what)
    parser.add_argument("action", choices=["add", "list"], help="add one from FILE, or list those there are")
    parser.add_argument("name", nargs="?", help=f"its name in SQL ({'xmatch' if command == 'catalog' else 'watch'}.NAME)")
    parser.add_argument("file", nargs="?", help=file_help)
    parser.add_argument("--ra", default="ra", help="column of right ascension, degrees (default ra)")
    parser.add_argument("--dec", default="dec", help="column of declination, degrees (default dec)")
    parser.add_argument("--catalog-dir", default="catalogs", help="the catalog folder (default catalogs)")
    return parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="alertsieve", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    sub.add_parser("setup", help="fetch Kafka and Spark connector jars; configure spark-submit")

    jars = sub.add_parser("jars", help="print a comma-separated jar list (for spark-submit --jars)")
    which = jars.add_mutually_exclusive_group()
    which.add_argument("--spark", action="store_true", help="Spark connectors (default)")
    which.add_argument("--kafka", action="store_true", help="the Kafka broker")

    kafka = sub.add_parser("kafka", help="run an embedded Kafka cluster on 127.0.0.1")
    kafka.add_argument("action", choices=["start", "stop", "status"], help="start a cluster, stop it, or print its status (JSON)")
    kafka.add_argument("--brokers", type=int, default=1, help="number of brokers (default 1)")
    kafka.add_argument("--port", type=int, help="first broker port (default: a free one)")
    kafka.add_argument(
        "--data-dir", help=f"cluster directory (default {embedded.default_data_dir()})"
    )
    kafka.add_argument("--heap", default="512m", help="JVM heap per broker (default 512m)")
    kafka.add_argument("--purge", action="store_true", help="with stop: delete the data too")

    prod = sub.add_parser("produce", help="send simulated visits (or replay Avro files) to Kafka")
    prod.add_argument("--bootstrap", required=True, help="Kafka bootstrap servers")
    prod.add_argument("--topic", required=True, help="the topic to send to")
    prod.add_argument("--visits", type=int, default=1, help="simulated visits to send (default 1)")
    prod.add_argument("--alerts-per-visit", type=int, default=10_000, help="alerts in each visit (default 10,000)")
    prod.add_argument(
        "--interval", type=float, default=VISIT_CADENCE_S, help="seconds between visits (0: back to back)"
    )
    prod.add_argument(
        "--producers", type=int, default=1, help="producer processes splitting each visit"
    )
    prod.add_argument(
        "--partitions", type=int, default=4, help="partitions if the topic is created"
    )
    prod.add_argument("--no-stamps", action="store_true", help="alerts without FITS cutouts")
    prod.add_argument(
        "--stamp-size", type=int, default=84, help="cutout side in pixels (default 84, ~32 KB)"
    )
    prod.add_argument("--history", type=int, default=10, help="max previous detections per alert")
    prod.add_argument("--schema-version", help="Rubin schema, e.g. 11.1 (default: latest shipped)")
    prod.add_argument("--seed", type=int, default=0, help="the simulation's seed: the same seed, the same alerts")
    prod.add_argument("--replay", nargs="+", metavar="PATH", help="Avro container files or folders")
    prod.add_argument("--metrics", help="append per-visit metrics (JSON lines) to this file")
    prod.add_argument("--ack-journal", metavar="DIR",
                      help="keep each producer's acknowledged alert ids here (after a crash: what to resend)")  # fmt: skip
    prod.add_argument(
        "--schema-registry", help="Confluent Schema Registry URL (default: local store)"
    )
    prod.add_argument("--schema-dir", help="local schema store directory")
    prod.add_argument("--linger-ms", type=int, help="librdkafka linger.ms (default: the producer's)")
    prod.add_argument("--batch-size", type=int, help="librdkafka batch.size in bytes (default: the producer's)")
    prod.add_argument("--compression", choices=["none", "lz4", "zstd", "snappy", "gzip"], help="compression of the Kafka batches")
    prod.add_argument("--kafka-conf", action="append", default=[], metavar="KEY=VALUE",
                      help="any librdkafka producer setting (repeatable)")  # fmt: skip

    filt = sub.add_parser(
        "filter", help="run the filter stream job (same as jobs/filter_stream.py)"
    )
    add_arguments(filt)

    arch = sub.add_parser(
        "archive", help="archive a filter job's topics into Delta (the job's settings; --archive-trigger)"
    )
    add_arguments(arch)

    flt = sub.add_parser(
        "filters", help="list the discovered filters, check them on sample alerts, or diff a change"
    )
    flt.add_argument("action", choices=["list", "check", "diff"],
                     help="list them, check them on sample alerts, or diff one against a deployed copy")
    flt.add_argument("name", nargs="?", help="comma-separated filter names (default: all); diff: one name")
    flt.add_argument("--input", action="append", help="diff: alerts to run both versions over (as backtest --input)")
    flt.add_argument("--against", metavar="PATH",
                     help="diff: the file or folder holding the filter as it runs now (the new one is discovered)")
    flt.add_argument("--bootstrap", help="diff: Kafka bootstrap servers, when --input is a topic")
    flt.add_argument("--schema-dir", help="diff: local schema store directory")
    flt.add_argument("--show", type=int, default=20, help="diff: alert ids shown of each side (default 20)")
    flt.add_argument("--filter-path", action="append", metavar="DIR", help="more filter modules and tables")
    flt.add_argument("--names", action="store_true", help="list: every filter's name, one a line")
    flt.add_argument("--catalog-dir", default="catalogs", help="catalogs the filters name (default catalogs)")

    bt = sub.add_parser("backtest", help="run filters over a topic, Avro files, a Delta archive or simulated alerts")
    bt.add_argument("--filter", help="comma-separated filter names (default: all discovered)")
    bt.add_argument(
        "--input", required=True, action="append",
        help="a topic, an Avro file or folder (repeat for more), a job's Delta archive (its delta_path), or simulated:N",
    )  # fmt: skip
    bt.add_argument("--since", type=_night, help="first observing night, YYYY-MM-DD (Rubin's dayObs)")
    bt.add_argument("--until", type=_night, help="last observing night, YYYY-MM-DD (inclusive)")
    bt.add_argument("--bootstrap", help="Kafka bootstrap servers, when --input is a topic")
    bt.add_argument("--schema-dir", help="local schema store directory")
    bt.add_argument(
        "--max-rate", type=float, default=0.05, help="warn above this match rate (default 0.05)"
    )
    bt.add_argument("--filter-path", action="append", metavar="DIR", help="more filter modules")
    bt.add_argument("--catalog-dir", default="catalogs", help="catalogs the filters name (default catalogs)")

    bench = sub.add_parser("bench", help="benchmarks that print JSON")
    bench.add_argument("what", choices=["produce", "stream", "filters", "payloads", "run", "xmatch", "latency", "soak"],
                       help="which benchmark (docs/benchmarks.md); run: the experiment files given")
    bench.add_argument("--catalog-rows", default="1e5,1e6,1e7", help="xmatch: catalog sizes (default 1e5,1e6,1e7)")
    bench.add_argument("experiments", nargs="*", help="run: experiment files (conf/experiments/)")
    bench.add_argument("--quick", action="store_true", help="run: each file's small 'quick' scale")
    bench.add_argument("--results", help="run: results folder (default results/, results/quick/)")
    bench.add_argument("--bootstrap", help="an existing Kafka (default: start an embedded one)")
    bench.add_argument("--alerts", type=int, default=10_000, help="alerts per run (default 10000)")
    bench.add_argument("--seeds-alerts", type=int, default=1_000,
                       help="alerts for the (slow) seeds' way (default 1000)")  # fmt: skip
    bench.add_argument("--visits", type=int, default=3, help="stream: visits in the topic")
    bench.add_argument("--filter-counts", default="1,10,50", help="stream, filters: SQL filter counts to run")
    bench.add_argument("--python-filter-counts", default="1,10",
                       help="stream: the same cuts as Python filters, these counts (50 did not fit a 3 GB heap)")
    bench.add_argument("--batch", type=int, default=20_000, help="stream, filters: max offsets per trigger")
    bench.add_argument("--figure", help="filters: draw the results to this PNG")
    bench.add_argument("--live-visits", type=int, default=3,
                       help="stream: visits produced at the cadence while the job runs (0: skip)")  # fmt: skip
    bench.add_argument("--live-interval", type=float, default=VISIT_CADENCE_S,
                       help=f"stream, soak: cadence in seconds (default {VISIT_CADENCE_S:g})")
    bench.add_argument("--latency", default="realtime,0",
                       help="stream: triggers whose latency to measure at 250 alerts/s and in a"
                            " 10,000-alert burst ('' to skip)")  # fmt: skip
    bench.add_argument("--trigger", choices=["realtime", "micro"], default=SoakPlan.trigger,
                       help=f"soak: the job's trigger (default {SoakPlan.trigger})")
    bench.add_argument("--filters", type=int, default=SoakPlan.filters,
                       help=f"soak: broker-like SQL filters in the job (default {SoakPlan.filters})")
    bench.add_argument("--kill-after", type=float, help="soak: kill -9 the job this many seconds in, then restart it")
    bench.add_argument("--rate", type=int, help="soak: this many alerts every second instead of 10,000 every 39 s")
    bench.add_argument("--visit-size", type=int, default=SoakPlan.visit_size,
                       help=f"soak: alerts per visit (default {SoakPlan.visit_size})")
    bench.add_argument("--sample-every", type=float, default=SoakPlan.sample_s,
                       help=f"soak: seconds between samples of CPU, memory and files (default {SoakPlan.sample_s:g})")
    bench.add_argument("--heap-every", type=float, default=SoakPlan.heap_every_s,
                       help=f"soak: seconds between heap readings after a full GC (default {SoakPlan.heap_every_s:g})")
    bench.add_argument("--check-visits", type=int, default=SoakPlan.oracle_visits,
                       help="soak: visits re-simulated to check the Delta archive against plain Python"
                            f" (default {SoakPlan.oracle_visits})")
    bench.add_argument("--out", default="results/soak", help="soak: folder of its samples and files (default results/soak)")

    schemas = sub.add_parser("schemas", help="the filter view across Rubin schema versions")
    schemas.add_argument("what", choices=["view"], help="view: the field table (docs/filter-view.md)")
    schemas.add_argument("--versions", help="comma-separated, e.g. 7.4,10.0,11.1 (default: 7.0 on)")

    cat = _sky_table_parser(sub, "catalog", "index a CSV or Parquet catalog for xmatch.NAME in filters",
                            "a .csv or .parquet file, or builtin:hipparcos, builtin:openngc")  # fmt: skip
    cat.add_argument("--radius", type=float, default=2.0, help="match radius, arcsec (default 2)")
    watch = _sky_table_parser(sub, "watch", "a watchlist (CSV of name, ra, dec, radius) or a watchmap (MOC) for watch.NAME",
                              "a watchlist .csv/.parquet, or with --map a MOC .fits or a CSV of pixels")  # fmt: skip
    watch.add_argument("--radius-column", default="radius", help="column of each entry's radius, arcsec (default radius)")
    watch.add_argument("--radius", type=float, default=None, help="one radius (arcsec) for every entry, instead of a column")
    watch.add_argument("--map", action="store_true", help="FILE is a sky region: a MOC FITS file, or a CSV of nested pixels (ipix) with --order")
    watch.add_argument("--order", type=int, help="HEALPix order of a CSV of pixels")

    listen.add_parser(sub)

    demo = sub.add_parser("demo", help="embedded Kafka, simulated visits, the filter job, a summary")
    demo.add_argument("--visits", type=int, default=2, help="simulated visits (default 2)")
    demo.add_argument("--alerts-per-visit", type=int, default=2000, help="default 2000")
    for command in sub.choices.values():
        _add_verbosity(command)
    return parser


def _add_verbosity(parser: argparse.ArgumentParser) -> None:
    """Every command's ``-v``/``-q``: how much of the library's log it shows."""
    said = parser.add_mutually_exclusive_group()
    said.add_argument("-v", "--verbose", action="store_true", help="also debug lines, each with its time and logger")
    said.add_argument("-q", "--quiet", action="store_true", help="warnings and errors only; no progress bar")


def _verbosity(args: argparse.Namespace) -> int:
    return logs.QUIET if args.quiet else logs.VERBOSE if args.verbose else logs.NORMAL


HANDLERS = {
    "setup": _cmd_setup,
    "jars": _cmd_jars,
    "kafka": _cmd_kafka,
    "produce": _cmd_produce,
    "bench": _cmd_bench,
    "filter": _cmd_filter,
    "archive": _cmd_archive,
    "filters": _cmd_filters,
    "backtest": _cmd_backtest,
    "schemas": _cmd_schemas,
    "demo": _cmd_demo,
    "catalog": _cmd_catalog,
    "watch": _cmd_catalog,
    "listen": listen.run,
}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logs.configure(_verbosity(args))
    try:
        return HANDLERS[args.command](args)
    except AlertsieveError as e:  # ours, explained in the message; anything else is a bug: its traceback
        print(f"alertsieve {args.command}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
