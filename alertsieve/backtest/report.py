"""The backtest's report: matches, rate and alerts a night per filter, a warning above a rate, and
over several observing nights each night's alerts and matches."""

from __future__ import annotations

from alertsieve.backtest.run import BacktestRow


def report(rows: list[BacktestRow], max_rate: float) -> tuple[str, bool]:
    """A readable table and whether every filter stayed under ``max_rate`` without errors; then,
    over more than one observing night, each survey's nights' alerts and matches. Over an
    input of several surveys, each filter's survey and the other surveys' alerts it left aside."""
    archived = any(r.archived for r in rows)
    mixed = any(r.left_aside for r in rows)
    width = max([24, *(len(r.name) for r in rows)])  # the longest name keeps the columns straight
    head = f"{'filter':<{width}} {'matches':>8} {'alerts':>8} {'rate':>8} {'per night':>10}"
    lines = [head + (f"  {'survey':<6} {'left aside':>10}" if mixed else "")]
    ok = True
    for r in rows:
        flag = ""
        if r.errors:
            flag, ok = f"  ERROR in {r.errors} batch(es): {r.first_error}", False
        elif (r.per_night > max_rate * r.alerts_per_night) if archived else (r.rate > max_rate):
            limit = (
                f"{round(max_rate * r.alerts_per_night):,} a night"
                if archived
                else f"{max_rate:.1%}"
            )
            flag, ok = f"  WARNING: above {limit}", False
        aside = f"  {r.survey:<6} {r.left_aside:>10}" if mixed else ""
        lines.append(
            f"{r.name:<{width}} {r.matches:>8} {r.alerts:>8} {_percent(r.rate):>8} {r.per_night:>10,}{aside}{flag}"
        )
    if archived:
        lines.append(
            "(an archive: alerts are the job's archived matches; rate is of those, per night"
            " the archive's mean a night)"
        )
    if mixed:
        lines.append("(each filter reads its own survey's alerts; left aside: the other surveys')")
    for survey in dict.fromkeys(r.survey for r in rows):
        lines += _nights([r for r in rows if r.survey == survey])
    return "\n".join(lines), ok


def _nights(rows: list[BacktestRow]) -> list[str]:
    """Over more than one observing night, each night's alerts and the filters' matches."""
    nights = sorted(rows[0].night_alerts)
    if len(nights) < 2:
        return []
    lines = ["", f"{'night':<12} {'alerts':>8}  " + "  ".join(r.name for r in rows)]
    for night in nights:
        counts = "  ".join(f"{r.nights.get(night, 0):>{len(r.name)}}" for r in rows)
        lines.append(f"{night.isoformat():<12} {rows[0].night_alerts[night]:>8}  {counts}")
    return lines


def _percent(rate: float) -> str:
    """A rate as a percentage, with two significant digits below 0.1% (4 in 100,000: 0.004%)."""
    return f"{rate:.2%}" if rate == 0 or rate >= 0.001 else f"{rate * 100:.2g}%"
