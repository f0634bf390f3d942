"""A soak run drawn against time (notebook 04, docs/benchmarks.md): what only a long run shows is
a trend, and a trend is read from a curve, not from a table.

Three panels share the time axis (minutes since the first visit): per-minute latency of the
published matches (p50 and p99), memory (resident size of each part, heap after a full GC of
each JVM), and the files the run leaves (checkpoints, Delta data files and log). A kill -9 is a
vertical line.
"""

from __future__ import annotations

import json
from pathlib import Path

from alertsieve.bench.soak.run import (
    delta_active_files,
    per_minute,
    read_latencies,
    read_samples,
    run_started,
)


def plot_soak(folder: str | Path, out: str | Path | None = None):
    """The figure of the soak whose files are in ``folder``; saved to ``out`` (a .png) if given."""
    import matplotlib.pyplot as plt

    folder = Path(folder)
    samples = read_samples(folder)
    minutes = per_minute(read_latencies(folder))
    summary_path = folder / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    fig, (lat, mem, files) = plt.subplots(1, 3, figsize=(14, 3.8))

    m = [x["minute"] + 0.5 for x in minutes]
    lat.plot(m, [x["p50"] for x in minutes], ".-", label="p50")
    lat.plot(m, [x["p99"] for x in minutes], ".-", label="p99")
    lat.set(yscale="log", ylabel="ms, input append to output append", title="Latency per minute")

    t = [s["t_s"] / 60 for s in samples]
    for part, color in (("job", "C0"), ("archive", "C1"), ("broker_and_producers", "C2")):
        mem.plot(
            t,
            [s["parts"].get(part, {}).get("rss_mb", 0) for s in samples],
            color,
            lw=0.8,
            label=f"{part} resident",
        )
        heaps = [
            (s["t_s"] / 60, s["heap_after_gc_mb"][part])
            for s in samples
            if s.get("heap_after_gc_mb", {}).get(part) is not None
        ]
        if heaps:
            mem.plot(*zip(*heaps, strict=True), "o", color=color, label=f"{part} heap after GC")
    mem.set(ylabel="MB", title="Memory", ylim=(0, None))

    for key, label in (
        ("delta_matches", "Delta matches files on disk"),
        ("checkpoint", "job checkpoint files"),
        ("archive_checkpoint", "archive checkpoint files"),
    ):
        files.plot(t, [s[key]["files"] for s in samples], label=label)
    files.plot(t, [s["delta_log_files"] for s in samples], label="Delta log files")
    active = delta_active_files(folder / "delta" / "matches", run_started(samples))
    if active:
        files.plot(
            [s / 60 for s, _ in active],
            [n for _, n in active],
            label="Delta files the table references",
        )
    files.set(ylabel="files", title="Files left on disk", ylim=(0, None))

    for ax in (lat, mem, files):
        if summary.get("killed_at_s") is not None:
            ax.axvline(
                summary["killed_at_s"] / 60, color="red", lw=0.8, ls="--", label="job killed -9"
            )
        ax.set_xlabel("minutes since the first visit")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    if out is not None:
        fig.savefig(out, dpi=90)
    return fig
