"""Experiment results as tables and figures: what notebook 04 and docs/benchmarks.md show.

Our "producing" time is DMTN-028's: a visit serialized and acknowledged by Kafka (the slowest
producer's wall time). Our "consuming" time is the nearest thing to theirs: from the visit's
last acknowledged alert to the filter job having published the results of the whole visit
(theirs: to a consumer having read to the end of the partition, with a trivial filter).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from alertsieve.bench.experiments.matrix import load_results
from alertsieve.errors import AlertsieveError

#: What each figure panel shows: (headline field, label)
TIMES = [("produce_s", "produce a visit"), ("filtered_s", "visit fully filtered")]
RATES = [("consumer_alerts_per_s", "per filter job"), ("total_alerts_per_s", "all filter jobs")]
LATENCIES = [("latency_p50_s", "p50"), ("latency_p99_s", "p99")]
AXIS_LABELS = {
    "alerts_per_visit": "alerts per visit",
    "producers": "producer processes",
    "consumers": "filter jobs (consumer groups)",
    "partitions": "partitions of the alert topic",
    "filters": "filters per job",
    "rate": "alerts per second sent",
}


def results_frame(root: str | Path):
    """One row per successful point: its settings, headline numbers and resource use."""
    import pandas as pd

    rows, env = [], {}
    for r in load_results(root):
        if r.get("status") != "ok":
            continue
        env = r["env"]
        row = {"experiment": r["experiment"], "dimension": r["dimension"], **r["point"]}
        row |= r["headline"]
        visits = "producer" in r  # a latency-against-rate point sends steadily instead
        row["consuming_s"] = _consuming(r) if visits else None
        row["mean_alert_kb"] = r["producer"]["mean_alert_kb"] if visits else r["mean_alert_kb"]
        for role, use in r["resources"].items():
            row[f"{role}_cpu_pct"] = use["cpu_mean_pct"]
            row[f"{role}_rss_mb"] = use["rss_max_mb"]
        row["cores"] = r["env"]["cores"]
        rows.append(row)
    frame = pd.DataFrame(rows)
    if not frame.empty:
        frame = frame.sort_values(["experiment", "stamps", *AXIS_LABELS])
    frame = frame.reset_index(drop=True)
    frame.attrs["env"] = env  # the machine of the last point: hardware and versions
    return frame


def _consuming(result: dict) -> float | None:
    """Median over visits and the slowest job: last alert acknowledged -> visit filtered."""
    from statistics import median

    visits = result["producer"]["visits"]
    worst = []
    for i, v in enumerate(visits):
        done = [c["visit_filtered_s"][i] for c in result["consumers"]]
        if all(d is not None for d in done):
            worst.append(max(done) - v["produce_s"])
    return round(median(worst), 3) if worst else None


def fit_line(x, y) -> tuple[float, float] | None:
    """Least-squares y = a + b x over the finite points (None with fewer than two)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    ok = np.isfinite(x) & np.isfinite(y)
    if ok.sum() < 2 or np.ptp(x[ok]) == 0:
        return None
    slope, intercept = np.polyfit(x[ok], y[ok], 1)
    return float(intercept), float(slope)


def _panel(ax, part, dimension: str, series: list[tuple[str, str]], ylabel: str) -> None:
    for stamps, group in part.groupby("stamps"):
        group = group.sort_values(dimension)
        for (column, label), marker in zip(series, "os^", strict=False):
            if group[column].isna().all():
                continue
            name = f"{label}, {'stamps' if stamps else 'no stamps'}"
            line = ax.plot(group[dimension], group[column], marker=marker, label=name)[0]
            fit = fit_line(group[dimension], group[column])
            if fit is not None:
                xs = np.linspace(group[dimension].min(), group[dimension].max(), 50)
                ax.plot(xs, fit[0] + fit[1] * xs, ls=":", color=line.get_color(), lw=1)
    ax.set_xlabel(AXIS_LABELS.get(dimension, dimension))
    ax.set_ylabel(ylabel)
    if dimension == "alerts_per_visit":  # three decades: log-log
        ax.set_xscale("log")
        ax.set_yscale("log")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)


def plot_experiment(frame, experiment: str, out_dir: str | Path | None = None):
    """Visit times, throughput and latency against the experiment's dimension (dotted: a
    fitted straight line), one figure; saved as ``<out_dir>/<experiment>.png`` if given."""
    import matplotlib.pyplot as plt

    part = frame[frame["experiment"] == experiment]
    if part.empty:
        raise AlertsieveError(f"no successful results for experiment {experiment!r}")
    dimension = part["dimension"].iloc[0]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    _panel(axes[0], part, dimension, TIMES, "seconds per visit")
    _panel(axes[1], part, dimension, RATES, "alerts/s while busy")
    _panel(axes[2], part, dimension, LATENCIES, "alert latency to output topic (s)")
    cores = int(part["cores"].iloc[0])
    fig.suptitle(f"{experiment}: against {AXIS_LABELS.get(dimension, dimension)} ({cores} cores)")
    fig.tight_layout()
    if out_dir is not None:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        fig.savefig(Path(out_dir) / f"{experiment}.png", dpi=90)
    return fig


TRIGGERS = {"0": "micro-batch", "realtime": "Real-Time Mode"}


def plot_rate(frame, out_dir: str | Path | None = None):
    """Latency against alert rate, one line per trigger and quantile (log scales: milliseconds
    in Real-Time Mode, seconds in micro-batches), with the rate the sender reached; saved as
    ``<out_dir>/rate.png`` if given."""
    import matplotlib.pyplot as plt

    part = frame[frame["experiment"] == "rate"]
    if part.empty:
        raise AlertsieveError("no successful results for experiment 'rate'")
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for trigger, group in part.groupby("trigger"):
        group = group.sort_values("sent_alerts_per_s")
        for (column, label), style in zip(LATENCIES, ["-", "--"], strict=True):
            ms = np.maximum(group[column].to_numpy(float) * 1e3, 0.5)  # Kafka times are whole ms
            ax.plot(
                group["sent_alerts_per_s"],
                ms,
                marker="o",
                ls=style,
                label=f"{TRIGGERS.get(trigger, trigger)}, {label}",
            )
    ax.axvline(250, color="grey", lw=1, ls=":", label="LSST's average rate")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("alerts per second sent (steadily)")
    ax.set_ylabel("input append -> output append (ms; < 1 ms drawn at 0.5)")
    cores = int(part["cores"].iloc[0])
    ax.set_title(
        f"Latency against alert rate ({cores} cores, {int(part['filters'].iloc[0])} SQL filters)"
    )
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7)
    fig.tight_layout()
    if out_dir is not None:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        fig.savefig(Path(out_dir) / "rate.png", dpi=90)
    return fig


ROLES = [("broker", "broker"), ("filter_jobs", "filter jobs"), ("producers", "producers")]


def plot_resources(frame, experiment: str, out_dir: str | Path | None = None):
    """Mean CPU per role at every point of ``experiment``, stacked; saved as
    ``<out_dir>/<experiment>-cpu.png`` if given."""
    import matplotlib.pyplot as plt

    part = frame[frame["experiment"] == experiment]
    dimension = part["dimension"].iloc[0]
    labels = [
        f"{v}{'' if s else ' ns'}" for v, s in zip(part[dimension], part["stamps"], strict=True)
    ]
    fig, ax = plt.subplots(figsize=(max(5, 0.7 * len(part)), 3.5))
    bottom = np.zeros(len(part))
    for role, label in ROLES:
        values = part[f"{role}_cpu_pct"].fillna(0).to_numpy(float)
        ax.bar(labels, values, bottom=bottom, label=label)
        bottom += values
    cores = int(part["cores"].iloc[0])
    ax.axhline(100 * cores, color="k", ls="--", lw=1, label=f"{cores} cores")
    ax.set_xlabel(f"{AXIS_LABELS.get(dimension, dimension)} (ns: no stamps)")
    ax.set_ylabel("mean CPU, % of one core")
    ax.set_title(f"{experiment}: CPU during the measured visits")
    ax.legend(fontsize=7)
    fig.tight_layout()
    if out_dir is not None:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        fig.savefig(Path(out_dir) / f"{experiment}-cpu.png", dpi=90)
    return fig


#: Slopes are quoted per this many units of the dimension.
SLOPE_UNIT = {"alerts_per_visit": 1000}


def fits_table(frame):
    """Per experiment and stamps: the fitted slope of each headline number per unit of the
    dimension (seconds per added producer, per 1,000 more alerts per visit, ...)."""
    import pandas as pd

    rows = []
    for (experiment, stamps), part in frame.groupby(["experiment", "stamps"]):
        dimension = part["dimension"].iloc[0]
        unit = SLOPE_UNIT.get(dimension, 1)
        row = {"experiment": experiment, "stamps": stamps, "per": f"{unit} {dimension}"}
        for column in ("produce_s", "filtered_s", "total_alerts_per_s", "latency_p99_s"):
            fit = fit_line(part[dimension], part[column])
            row[f"{column} slope"] = None if fit is None else round(fit[1] * unit, 4)
        rows.append(row)
    return pd.DataFrame(rows)


def comparison_table(frame):
    """DMTN-028's summary table (13 AWS nodes, 136 KB alerts, a trivial filter) beside our
    10,000-alert points with stamps (this machine, ~98 KB alerts, 10 SQL filters)."""
    import pandas as pd

    from alertsieve.bench.experiments.dmtn028 import summary_table

    theirs = summary_table().assign(source="DMTN-028 (AWS)")
    ours = frame[(frame["alerts_per_visit"] == 10_000) & frame["stamps"]]
    ours = ours.drop_duplicates(["producers", "consumers", "partitions", "filters"])
    ours = pd.DataFrame(
        {
            "producers": ours["producers"],
            "consumers": ours["consumers"],
            "partitions": ours["partitions"],
            "producing_s": ours["produce_s"],
            "consuming_s": ours["consuming_s"],
            "total_s": (ours["produce_s"] + ours["consuming_s"]).round(2),
            "source": [
                f"alertsieve ({c} cores, {f} filters)"
                for c, f in zip(ours["cores"], ours["filters"], strict=True)
            ],
        }
    )
    columns = [
        "source",
        "producers",
        "consumers",
        "partitions",
        "producing_s",
        "consuming_s",
        "total_s",
    ]
    table = pd.concat([theirs[columns], ours[columns]], ignore_index=True)
    return table.sort_values(["source", "total_s"]).reset_index(drop=True)
