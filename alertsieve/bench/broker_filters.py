"""The benchmarks' broker-like filters: templates of cuts with thresholds tuned to pass 0.4-2% of
the simulated stream, as SQL filters for the job, as plain Python for the seeds' way and the
tests, and as pandas functions for Python filters."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from alertsieve.filtering.model import AlertFilter

Cut = tuple[str, str, object]  # (field path, op, value or "{t}")

#: Broker-like filters, each a conjunction of cuts with one threshold to vary, tuned on the
#: simulated stream (seed 0, visit 0, the simulator's published population mix) to pass 2%, 1.5%,
#: 1%, 0.7% and 0.4% of alerts, as real filters do (a filter passing 1% sends 100,000 alerts a
#: night). "moving" cannot reach 2%: 1.1% of the stream has an ssSource; it passes 1.1% to 0.2%.
#: (name, cuts, thresholds)
TEMPLATES: list[tuple[str, list[Cut], list[float]]] = [
    ("snr", [("diaSource.snr", ">", "{t}")], [170, 223, 325, 457, 735]),
    (
        "reliable_bright",
        [("diaSource.reliability", ">", "{t}"), ("diaSource.snr", ">", 100)],
        [0.880, 0.929, 0.953, 0.968, 0.980],
    ),
    ("flux", [("diaSource.psfFlux", ">", "{t}")], [5.10e4, 7.63e4, 1.55e5, 2.83e5, 6.42e5]),
    (
        "history_bright",
        [("diaObject.nDiaSources", ">", 10), ("diaSource.snr", ">", "{t}")],
        [119, 146, 191, 239, 306],
    ),
    (
        "moving",
        [("ssSource", "not_null", None), ("diaSource.snr", ">", "{t}")],
        [5.0, 5.95, 7.67, 13.7, 29.9],
    ),
    (
        "template",
        [("diaSource.templateFlux", ">", "{t}")],
        [3.35e5, 3.77e5, 4.12e5, 4.49e5, 4.91e5],
    ),
    ("science", [("diaSource.scienceFlux", ">", "{t}")], [3.95e5, 4.39e5, 5.07e5, 5.58e5, 7.75e5]),
    (
        "new_bright",
        [("prvDiaSources", "empty", None), ("diaSource.snr", ">", "{t}")],
        [8.29, 9.85, 14.5, 21.5, 38.9],
    ),
    (
        "extended",
        [("diaSource.extendedness", ">", "{t}"), ("diaSource.snr", ">", 50)],
        [0.0822, 0.0888, 0.0983, 0.265, 0.555],
    ),
    ("bogus", [("diaSource.reliability", "<", "{t}")], [0.0149, 0.0115, 0.00750, 0.00531, 0.00308]),
]


def _value(alert: dict, path: str):
    value = alert
    for key in path.split("."):
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _sql(cuts: list[Cut], t: float) -> str:
    parts = []
    for path, op, v in cuts:
        v = t if v == "{t}" else v
        if op == "not_null":
            parts.append(f"{path} IS NOT NULL")
        elif op == "empty":
            parts.append(f"size({path}) = 0")
        else:
            parts.append(f"{path} {op} {v}")
    return " AND ".join(parts)


def _python(cuts: list[Cut], t: float) -> Callable[[dict], bool]:
    def test(alert: dict) -> bool:
        for path, op, v in cuts:
            v = t if v == "{t}" else v
            x = _value(alert, path)
            if op == "not_null":
                ok = x is not None
            elif op == "empty":
                ok = x is not None and len(x) == 0
            else:
                ok = x is not None and (x > v if op == ">" else x < v)
            if not ok:
                return False
        return True

    return test


def bench_filters(n: int) -> tuple[list[AlertFilter], list[Callable[[dict], bool]]]:
    """``n`` filters cycling through the templates and their thresholds (50 distinct cuts),
    as SQL for the job and as plain Python for the seeds' way."""
    filters, tests = [], []
    for i in range(n):
        name, cuts, thresholds = TEMPLATES[i % len(TEMPLATES)]
        t = thresholds[(i // len(TEMPLATES)) % len(thresholds)]
        filters.append(AlertFilter(name=f"{name}_{i}", sql=_sql(cuts, t)))
        tests.append(_python(cuts, t))
    return filters, tests


def _vectorized(cuts: list[Cut], t: float, names: list[str]) -> Callable:
    """The same cuts as a pandas function over declared columns (what a Python filter runs)."""

    def run(alerts):
        import numpy as np
        import pandas as pd

        keep = np.ones(len(alerts), dtype=bool)
        for (_, op, v), col in zip(cuts, names, strict=True):
            v = t if v == "{t}" else v
            x = alerts[col]
            if op == "not_null":
                keep &= x.fillna(False).to_numpy(bool)
            elif op == "empty":
                keep &= x.to_numpy() == 0
            else:
                values = pd.to_numeric(x, errors="coerce").to_numpy(float)
                keep &= (values > v) if op == ">" else (values < v)
        return pd.Series(keep)

    return run


def python_bench_filters(n: int) -> list:
    """The first ``n`` bench filters written as Python filters (pandas UDFs)."""
    from alertsieve.filtering.model import PythonFilter

    out = []
    for i in range(n):
        name, cuts, thresholds = TEMPLATES[i % len(TEMPLATES)]
        t = thresholds[(i // len(TEMPLATES)) % len(thresholds)]
        names = [f"c{j}" for j in range(len(cuts))]
        sql_of = {"not_null": "{} IS NOT NULL", "empty": "size({})"}
        columns = {
            c: sql_of.get(op, "{}").format(path)
            for c, (path, op, _) in zip(names, cuts, strict=True)
        }
        out.append(
            PythonFilter(
                name=f"py_{name}_{i}", function=_vectorized(cuts, t, names), columns=columns
            )
        )
    return out


def bench_job_settings(
    filters: int,
    bootstrap: str,
    topic: str,
    folder: Path,
    *,
    trigger: str,
    max_offsets_per_trigger: int,
    output_prefix: str,
    sinks: list[str],
    schema_dir: str,
) -> dict:
    """The settings file of a filter job that runs the first ``filters`` broker-like filters (and
    none from ``filters/``) on ``topic`` from its start, one output partition per filter, with its
    checkpoint, metrics and Delta tables in ``folder``: what every benchmark's job shares."""
    return {
        "bootstrap": bootstrap,
        "topic": topic,
        "starting_offsets": "earliest",
        "trigger": trigger,
        "max_offsets_per_trigger": max_offsets_per_trigger,
        "sql_filters": [{"name": f.name, "sql": f.sql} for f in bench_filters(filters)[0]],
        "discover_filters": False,
        "sinks": sinks,
        "output_prefix": output_prefix,
        "output_partitions": 1,
        "delta_path": str(folder / "delta"),
        "checkpoint": str(folder / "checkpoint"),
        "metrics_path": str(folder / "metrics.jsonl"),
        "schema_dir": schema_dir,
    }
