"""``alertsieve bench produce|stream|filters|models|payloads|objects|run|xmatch|latency|soak``: the benchmarks of
docs/benchmarks.md, each a sub-command with its own flags, each printing its results as JSON."""

from __future__ import annotations

import argparse
import json
from typing import Any

from alertsieve.bench.soak.plan import QUICK_SOAK, SoakPlan
from alertsieve.sim import VISIT_CADENCE_S


def add_parser(sub: Any) -> argparse.ArgumentParser:
    bench = sub.add_parser("bench", help="benchmarks that print JSON")
    which = bench.add_subparsers(
        dest="what", required=True, help="which benchmark (docs/benchmarks.md)"
    )
    for add in (
        _add_produce,
        _add_stream,
        _add_filters,
        _add_models,
        _add_payloads,
        _add_objects,
        _add_run,
        _add_xmatch,
        _add_latency,
        _add_soak,
    ):
        add(which)
    return bench


# --- flags more than one benchmark takes --------------------------------------------------------


def _bootstrap(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap", help="an existing Kafka (default: start an embedded one)")


def _alerts(parser: argparse.ArgumentParser, what: str = "alerts per run") -> None:
    parser.add_argument("--alerts", type=int, default=10_000, help=f"{what} (default 10000)")


def _seeds_alerts(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--seeds-alerts",
        type=int,
        default=1_000,
        help="alerts for the plain-Python baseline, fastavro and Python filters (slow; default 1000)",
    )


def _filter_counts(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--filter-counts", default="1,10,50", help="SQL filter counts to run (default 1,10,50)"
    )


def _batch(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--batch", type=int, default=20_000, help="max offsets per trigger (default 20000)"
    )


def _live_interval(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--live-interval",
        type=float,
        default=VISIT_CADENCE_S,
        help=f"cadence in seconds (default {VISIT_CADENCE_S:g})",
    )


def _quick(parser: argparse.ArgumentParser, scale: str) -> None:
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"a small run (seconds to minutes) printing the same JSON, to try the command: {scale};"
        " its numbers are not measurements",
    )


def _print_json(result: dict) -> int:
    print(json.dumps(result, indent=2))
    return 0


# --- each benchmark: its sub-command, then what it runs -----------------------------------------


def _add_produce(which: Any) -> None:
    parser = which.add_parser(
        "produce", help="producer throughput, against a plain-Python producer"
    )
    _bootstrap(parser)
    _alerts(parser)
    _seeds_alerts(parser)
    _quick(parser, "200 alerts a run, 20 for the plain-Python producer")
    parser.set_defaults(handler=run_produce)


def run_produce(args: argparse.Namespace) -> int:
    from alertsieve.bench.commands.produce import QUICK, bench_produce

    scale = QUICK if args.quick else {"alerts": args.alerts, "seeds_alerts": args.seeds_alerts}
    return _print_json(bench_produce(args.bootstrap, **scale))


def _add_stream(which: Any) -> None:
    parser = which.add_parser(
        "stream", help="the job's throughput and latency on a pre-filled topic, by filter count"
    )
    _bootstrap(parser)
    parser.add_argument("--visits", type=int, default=3, help="visits in the topic (default 3)")
    _alerts(parser, "alerts per visit")
    _filter_counts(parser)
    parser.add_argument(
        "--python-filter-counts",
        default="1,10",
        help="the same cuts as Python filters, these counts (default 1,10)",
    )
    _batch(parser)
    _seeds_alerts(parser)
    parser.add_argument(
        "--live-visits",
        type=int,
        default=3,
        help="visits produced at the cadence while the job runs (0: skip)",
    )
    _live_interval(parser)
    parser.add_argument(
        "--latency",
        default="realtime,0",
        help="triggers whose latency to measure at 250 alerts/s and in a"
        " 10,000-alert burst ('' to skip)",
    )
    parser.add_argument(
        "--histories",
        default="0,25,400",
        help="earlier detections per alert, one run each, for the cost of long light curves ('' to skip)",
    )
    parser.add_argument(
        "--history-alerts", type=int, default=2000, help="alerts per history (default 2000)"
    )
    parser.add_argument(
        "--model-alerts",
        default="tests/data/real/ztf-3.3-histories",
        help="real ZTF alerts (container files) sent through the job with and without a model ('' to skip)",
    )
    parser.add_argument(
        "--model-rounds",
        type=int,
        default=160,
        help="times those alerts are sent (default 160: the 124 real ones make 19,840)",
    )
    _quick(
        parser,
        "one visit of 300 alerts in batches of 100, 1 and 10 SQL filters, 1 Python filter,"
        " 2 visits 3 s apart, 4 s at the latency's rate and a 400-alert burst, 100 alerts of"
        " each history length, the model run's alerts twice",
    )
    parser.set_defaults(handler=run_stream)


def run_stream(args: argparse.Namespace) -> int:
    from alertsieve.bench.commands.stream import QUICK, LiveScale, bench_stream

    triggers = tuple(t for t in args.latency.split(",") if t)
    histories = _counts(args.histories)
    if args.quick:
        return _print_json(
            bench_stream(
                args.bootstrap,
                latency_triggers=triggers,
                histories=histories,
                model_alerts=args.model_alerts or None,
                **QUICK,
            )
        )
    live = (
        LiveScale(args.live_visits, args.live_interval, args.alerts) if args.live_visits else None
    )
    return _print_json(
        bench_stream(
            args.bootstrap,
            visits=args.visits,
            alerts_per_visit=args.alerts,
            filter_counts=_counts(args.filter_counts),
            python_filter_counts=_counts(args.python_filter_counts),
            batch=args.batch,
            seeds_alerts=args.seeds_alerts,
            live=live,
            latency_triggers=triggers,
            histories=histories,
            history_alerts=args.history_alerts,
            model_alerts=args.model_alerts or None,
            model_rounds=args.model_rounds,
        )
    )


def _counts(text: str) -> tuple[int, ...]:
    """``1,10,50`` as (1, 10, 50); empty for ``''``."""
    return tuple(int(x) for x in text.split(",") if x)


def _add_filters(which: Any) -> None:
    parser = which.add_parser("filters", help="what a filter costs when a job holds many")
    _bootstrap(parser)
    _filter_counts(parser)
    _alerts(parser)
    _batch(parser)
    parser.add_argument(
        "--population",
        choices=["realistic", "pmod"],
        default="realistic",
        help="users' filters of many shapes tuned to pass 0.01-5%% each, checked against their"
        " twins (default), or the one synthetic shape of earlier measurements",
    )
    parser.add_argument(
        "--compiled-counts",
        default="",
        help="these filter counts also run with each filter compiled into the query, not read as data",
    )
    parser.add_argument(
        "--latency-counts",
        default="10,1000",
        help="Real-Time Mode at 250 alerts/s with these counts (default 10,1000; none: '')",
    )
    parser.add_argument(
        "--sink",
        choices=["kafka", "noop"],
        default="kafka",
        help="kafka: the matches published, beside librdkafka republishing the same records"
        " (default); noop: the filters evaluated and counted, no record built or published",
    )
    parser.add_argument(
        "--delivery",
        choices=["topics", "shared"],
        default="topics",
        help="topics: a topic per filter (default); shared: each matching alert once on one"
        " topic (its records' counts checked against the twins, no republish baseline)",
    )
    parser.add_argument("--figure", help="draw the results to this PNG")
    _quick(
        parser,
        "300 alerts in batches of 50, 1 and 10 filters, for latency 4 s at 250 alerts/s"
        " and a 400-alert burst",
    )
    parser.set_defaults(handler=run_filters)


def run_filters(args: argparse.Namespace) -> int:
    from alertsieve.bench.commands.filters import QUICK, bench_filters_per_job

    flags = {
        "counts": _counts(args.filter_counts),
        "alerts": args.alerts,
        "batch": args.batch,
        "compiled_counts": _counts(args.compiled_counts) if args.compiled_counts else (),
        "latency_counts": _counts(args.latency_counts) if args.latency_counts else (),
    }
    scale = QUICK if args.quick else flags
    result = bench_filters_per_job(
        args.bootstrap,
        population=args.population,
        sink=args.sink,
        delivery=args.delivery,
        **scale,
    )
    if args.figure:
        from alertsieve.bench.commands.filters import plot_filters_per_job

        plot_filters_per_job(result, args.figure)
    return _print_json(result)


def _add_models(which: Any) -> None:
    parser = which.add_parser(
        "models",
        help="what the classifiers cost in the stream: Rubin's SuperNNova and CATS, ZTF's anomaly",
    )
    _bootstrap(parser)
    parser.add_argument(
        "--alerts",
        type=int,
        default=20_000,
        help="simulated Rubin alerts with LSST-like histories (default 20000)",
    )
    parser.add_argument(
        "--real-rounds",
        type=int,
        default=400,
        help="times the 47 real LSSTCam alerts are sent (default 400: 18,800 alerts)",
    )
    parser.add_argument(
        "--ztf-rounds",
        type=int,
        default=160,
        help="times the 124 real ZTF alerts are sent (default 160: 19,840 alerts; 0: no ZTF axis)",
    )
    parser.add_argument(
        "--batch", type=int, default=5_000, help="alerts per micro-batch (default 5000)"
    )
    _quick(
        parser,
        "100 LSST-like alerts, the real Rubin alerts once and no ZTF axis (bench stream --quick"
        " has it), in batches of 50, 50 alerts a history, no warm-up",
    )
    parser.set_defaults(handler=run_models)


def run_models(args: argparse.Namespace) -> int:
    from alertsieve.bench.commands.models import QUICK, bench_models

    scale = (
        QUICK
        if args.quick
        else {
            "rubin_alerts": args.alerts,
            "real_rounds": args.real_rounds,
            "ztf_rounds": args.ztf_rounds,
            "batch": args.batch,
        }
    )
    return _print_json(bench_models(args.bootstrap, **scale))


def _add_payloads(which: Any) -> None:
    parser = which.add_parser(
        "payloads", help="what subscribers' payloads cost the job, and what they weigh"
    )
    _bootstrap(parser)
    _alerts(parser)
    _batch(parser)
    _quick(parser, "300 alerts in batches of 50, one round")
    parser.set_defaults(handler=run_payloads)


def run_payloads(args: argparse.Namespace) -> int:
    from alertsieve.bench.commands.payloads import QUICK, bench_payloads

    scale = QUICK if args.quick else {"alerts": args.alerts, "batch": args.batch}
    return _print_json(bench_payloads(args.bootstrap, **scale))


def _add_objects(which: Any) -> None:
    parser = which.add_parser(
        "objects", help="what keeping each object's state costs the job, and what it holds"
    )
    _bootstrap(parser)
    parser.add_argument(
        "--alerts",
        type=int,
        default=1_000_000,
        help="alerts, each a new object (default 1,000,000)",
    )
    _batch(parser)
    _quick(parser, "2,000 alerts in batches of 500")
    parser.set_defaults(handler=run_objects)


def run_objects(args: argparse.Namespace) -> int:
    from alertsieve.bench.commands.objects import QUICK, bench_objects

    scale = QUICK if args.quick else {"alerts": args.alerts, "batch": args.batch}
    return _print_json(bench_objects(args.bootstrap, **scale))


def _add_run(which: Any) -> None:
    parser = which.add_parser(
        "run", help="the scaling experiments of the files given (conf/experiments/)"
    )
    parser.add_argument("experiments", nargs="*", help="experiment files (conf/experiments/)")
    parser.add_argument("--quick", action="store_true", help="each file's small 'quick' scale")
    parser.add_argument("--results", help="results folder (default results/, results/quick/)")
    _bootstrap(parser)
    parser.set_defaults(handler=run_experiment_files)


def run_experiment_files(args: argparse.Namespace) -> int:
    from alertsieve.bench.experiments.matrix import load_experiment
    from alertsieve.bench.experiments.runner import run_experiments

    if not args.experiments:
        raise SystemExit(
            "alertsieve bench run: name experiment files, e.g. conf/experiments/*.yaml"
        )
    experiments = [load_experiment(path, quick=args.quick) for path in args.experiments]
    root = args.results or ("results/quick" if args.quick else "results")
    results = run_experiments(experiments, root, args.bootstrap, progress=not args.quiet)
    failed = [r for r in results if r["status"] != "ok"]
    print(
        json.dumps(
            {
                "results": root,
                "points_run": len(results),
                "failed": [
                    {"experiment": r["experiment"], "point": r["point"], "error": r["error"]}
                    for r in failed
                ],
                "headlines": [
                    {"experiment": r["experiment"], **r["point"], **r.get("headline", {})}
                    for r in results
                ],
            },
            indent=2,
        )
    )
    return 1 if failed else 0


def _add_xmatch(which: Any) -> None:
    parser = which.add_parser(
        "xmatch", help="what a catalog crossmatch costs per visit, by catalog size"
    )
    parser.add_argument(
        "--catalog-rows", default="1e5,1e6,1e7", help="catalog sizes (default 1e5,1e6,1e7)"
    )
    _quick(
        parser,
        "300 alerts, catalogs of 1e4 and 1e5 rows, a 600-arcsec radius (some matches in a"
        " catalog that small), one timed pass; no Kafka either way",
    )
    parser.set_defaults(handler=run_xmatch)


def run_xmatch(args: argparse.Namespace) -> int:
    from alertsieve.bench.commands.xmatch import QUICK, bench_xmatch

    scale = (
        QUICK
        if args.quick
        else {"sizes": tuple(int(float(x)) for x in args.catalog_rows.split(","))}
    )
    return _print_json(bench_xmatch(**scale))


def _add_latency(which: Any) -> None:
    parser = which.add_parser(
        "latency",
        help="Real-Time Mode latency at a steady rate and in a burst, without and"
        " with feature and crossmatch filters beside the measured ones",
    )
    _bootstrap(parser)
    _quick(parser, "4 s at 250 alerts/s after 4 s of warm-up, then a 400-alert burst")
    parser.set_defaults(handler=run_latency)


def run_latency(args: argparse.Namespace) -> int:
    from alertsieve.bench.commands.latency import QUICK, bench_context_latency

    return _print_json(bench_context_latency(args.bootstrap, **(QUICK if args.quick else {})))


def _add_soak(which: Any) -> None:
    parser = which.add_parser(
        "soak",
        help="the job and the archive for a long run at the survey's pace, sampled,"
        " then checked for anything lost",
    )
    _bootstrap(parser)
    _alerts(parser, "alerts in all")
    parser.add_argument(
        "--trigger",
        choices=["realtime", "micro"],
        default=SoakPlan.trigger,
        help=f"the job's trigger (default {SoakPlan.trigger})",
    )
    parser.add_argument(
        "--filters",
        type=int,
        default=SoakPlan.filters,
        help=f"broker-like SQL filters in the job (default {SoakPlan.filters})",
    )
    parser.add_argument(
        "--kill-after", type=float, help="kill -9 the job this many seconds in, then restart it"
    )
    parser.add_argument(
        "--rate", type=int, help="this many alerts every second instead of 10,000 every 39 s"
    )
    parser.add_argument(
        "--visit-size",
        type=int,
        default=SoakPlan.visit_size,
        help=f"alerts per visit (default {SoakPlan.visit_size})",
    )
    _live_interval(parser)
    parser.add_argument(
        "--sample-every",
        type=float,
        default=SoakPlan.sample_s,
        help=f"seconds between samples of CPU, memory and files (default {SoakPlan.sample_s:g})",
    )
    parser.add_argument(
        "--heap-every",
        type=float,
        default=SoakPlan.heap_every_s,
        help=f"seconds between heap readings after a full GC (default {SoakPlan.heap_every_s:g})",
    )
    parser.add_argument(
        "--check-visits",
        type=int,
        default=SoakPlan.oracle_visits,
        help="visits re-simulated to check the Delta archive against plain Python"
        f" (default {SoakPlan.oracle_visits})",
    )
    parser.add_argument(
        "--delta-upkeep",
        type=float,
        default=SoakPlan.upkeep_s,
        help="seconds between the archive's compactions and VACUUMs"
        f" (default {SoakPlan.upkeep_s:g})",
    )
    parser.add_argument(
        "--delta-retention-hours",
        type=float,
        default=SoakPlan.retention_hours,
        help=f"the history the archive keeps (default {SoakPlan.retention_hours:g} h: within the"
        " run, so its files are seen bounded)",
    )
    parser.add_argument(
        "--out",
        default="results/soak",
        help="folder of its samples and files (default results/soak)",
    )
    _quick(
        parser,
        "3 visits of 300 alerts 3 s apart, samples every second, heap every 10 s, every visit"
        " checked",
    )
    parser.set_defaults(handler=run_soak)


def run_soak(args: argparse.Namespace) -> int:
    from alertsieve.bench.soak.run import soak

    if args.quick:
        return _print_json(soak(QUICK_SOAK, args.out, args.bootstrap))
    plan = SoakPlan(
        alerts=args.alerts,
        trigger=args.trigger,
        filters=args.filters,
        kill_after_s=args.kill_after,
        rate=args.rate,
        visit_size=args.visit_size,
        interval_s=args.live_interval,
        sample_s=args.sample_every,
        heap_every_s=args.heap_every,
        oracle_visits=args.check_visits,
        upkeep_s=args.delta_upkeep,
        retention_hours=args.delta_retention_hours,
    )
    return _print_json(soak(plan, args.out, args.bootstrap))
