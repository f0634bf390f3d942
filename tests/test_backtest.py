"""Backtesting: filters over simulated alerts and over Avro files, counted like plain Python."""

from __future__ import annotations

import fastavro

from alertsieve.alerts.schemas import load_rubin_schema
from alertsieve.filtering.backtest import backtest, load_alerts, report
from alertsieve.filtering.discovery import discover
from alertsieve.sim.simulator import AlertSimulator, SimulationConfig

BRIGHT = next(f for f in discover(entry_points=False) if f.name == "bright_high_snr")


def _bright(a: dict) -> bool:
    return a["diaSource"]["snr"] > 50 and a["diaSource"]["reliability"] > 0.9


def test_simulated_input_counts_like_python(spark):
    alerts = list(
        AlertSimulator(SimulationConfig(stamp_size=0, seed=11)).visit_alerts(0, count=400)
    )
    (row,) = backtest(spark, [BRIGHT], load_alerts(spark, "simulated:400"))
    assert (row.name, row.alerts, row.errors) == ("bright_high_snr", 400, 0)
    assert row.matches == sum(_bright(a) for a in alerts)
    assert row.per_night == round(row.matches / 400 * 10_000_000)
    text, ok = report([row], max_rate=0.01)
    assert not ok and "WARNING: above 1.0%" in text
    assert report([row], max_rate=0.5)[1] is True


def test_avro_files_are_backtested(spark, tmp_path):
    schema = load_rubin_schema()
    alerts = list(AlertSimulator(SimulationConfig(stamp_size=8, seed=12)).visit_alerts(0, count=60))
    with open(tmp_path / "night.avro", "wb") as f:
        fastavro.writer(f, schema.parsed, alerts, codec="deflate")
    (row,) = backtest(spark, [BRIGHT], load_alerts(spark, str(tmp_path)))
    assert row.alerts == 60 and row.matches == sum(_bright(a) for a in alerts)
