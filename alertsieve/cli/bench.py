"""``alertsieve bench produce|stream|filters|payloads|run|xmatch|latency|soak``: the benchmarks of
docs/benchmarks.md, each a sub-command with its own flags, each printing its results as JSON."""

from __future__ import annotations

import argparse
import json
from typing import Any

from alertsieve.bench.soak_plan import SoakPlan
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
        _add_payloads,
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
        help="alerts for the (slow) seeds' way (default 1000)",
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


def _print_json(result: dict) -> int:
    print(json.dumps(result, indent=2))
    return 0


# --- each benchmark: its sub-command, then what it runs -----------------------------------------


def _add_produce(which: Any) -> None:
    parser = which.add_parser("produce", help="producer throughput, ours against the seeds' way")
    _bootstrap(parser)
    _alerts(parser)
    _seeds_alerts(parser)
    parser.set_defaults(handler=run_produce)


def run_produce(args: argparse.Namespace) -> int:
    from alertsieve.bench.produce import bench_produce

    return _print_json(
        bench_produce(args.bootstrap, alerts=args.alerts, seeds_alerts=args.seeds_alerts)
    )


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
        help="the same cuts as Python filters, these counts (50 did not fit a 3 GB heap)",
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
    parser.set_defaults(handler=run_stream)


def run_stream(args: argparse.Namespace) -> int:
    from alertsieve.bench.stream import bench_stream

    return _print_json(
        bench_stream(
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
    )


def _add_filters(which: Any) -> None:
    parser = which.add_parser("filters", help="what a filter costs when a job holds many")
    _bootstrap(parser)
    _filter_counts(parser)
    _alerts(parser)
    _batch(parser)
    parser.add_argument("--figure", help="draw the results to this PNG")
    parser.set_defaults(handler=run_filters)


def run_filters(args: argparse.Namespace) -> int:
    from alertsieve.bench.filters import bench_filters_per_job

    result = bench_filters_per_job(
        args.bootstrap,
        counts=tuple(int(x) for x in args.filter_counts.split(",")),
        alerts=args.alerts,
        batch=args.batch,
    )
    if args.figure:
        from alertsieve.bench.filters import plot_filters_per_job

        plot_filters_per_job(result, args.figure)
    return _print_json(result)


def _add_payloads(which: Any) -> None:
    parser = which.add_parser(
        "payloads", help="what subscribers' payloads cost the job, and what they weigh"
    )
    _bootstrap(parser)
    _alerts(parser)
    _batch(parser)
    parser.set_defaults(handler=run_payloads)


def run_payloads(args: argparse.Namespace) -> int:
    from alertsieve.bench.payloads import bench_payloads

    return _print_json(bench_payloads(args.bootstrap, alerts=args.alerts, batch=args.batch))


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
    parser.set_defaults(handler=run_xmatch)


def run_xmatch(args: argparse.Namespace) -> int:
    from alertsieve.bench.xmatch import bench_xmatch

    return _print_json(bench_xmatch(tuple(int(float(x)) for x in args.catalog_rows.split(","))))


def _add_latency(which: Any) -> None:
    parser = which.add_parser(
        "latency",
        help="Real-Time Mode latency at a steady rate and in a burst, without and"
        " with feature and crossmatch filters beside the measured ones",
    )
    _bootstrap(parser)
    parser.set_defaults(handler=run_latency)


def run_latency(args: argparse.Namespace) -> int:
    from alertsieve.bench.latency import bench_context_latency

    return _print_json(bench_context_latency(args.bootstrap))


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
        "--out",
        default="results/soak",
        help="folder of its samples and files (default results/soak)",
    )
    parser.set_defaults(handler=run_soak)


def run_soak(args: argparse.Namespace) -> int:
    from alertsieve.bench.soak import soak

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
    )
    return _print_json(soak(plan, args.out, args.bootstrap))
