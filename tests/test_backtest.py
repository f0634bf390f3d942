"""Backtesting: filters over simulated alerts, over Avro files (the real corpus, night by night)
and over a Delta archive that keeps no messages, counted like plain Python."""

from __future__ import annotations

from pathlib import Path

import fastavro
import pytest
from oracles import dayobs

from alertsieve.alerts.schemas import load_rubin_schema
from alertsieve.backtest.read_check import NothingToBacktest
from alertsieve.backtest.report import report
from alertsieve.backtest.run import BacktestRow, backtest, by_survey
from alertsieve.backtest.sources import load_alerts, messages_source
from alertsieve.filtering.discovery import discover
from alertsieve.filtering.model import AlertFilter, FilterError
from alertsieve.sim.simulator import AlertSimulator, SimulationConfig

REAL = Path(__file__).parent / "data" / "real"
BRIGHT = next(f for f in discover(entry_points=False) if f.name == "bright_high_snr")
SNR_RELIABLE = AlertFilter(
    name="snr_reliable", survey="rubin", sql="diaSource.snr > 50 AND diaSource.reliability > 0.9"
)


def _bright(a: dict) -> bool:
    return a["diaSource"]["snr"] > 50 and a["diaSource"]["reliability"] > 0.9


def test_simulated_input_counts_like_python(spark):
    alerts = list(
        AlertSimulator(SimulationConfig(stamp_size=0, seed=11)).visit_alerts(0, count=400)
    )
    (row,) = backtest(spark, [SNR_RELIABLE], load_alerts(spark, "simulated:400"))
    assert (row.name, row.alerts, row.errors) == ("snr_reliable", 400, 0)
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
    (row,) = backtest(spark, [SNR_RELIABLE], load_alerts(spark, str(tmp_path)))
    assert row.alerts == 60 and row.matches == sum(_bright(a) for a in alerts)


def test_a_real_file_is_backtested_with_filters_written_for_every_version(spark):
    """Real Operations Rehearsal v7.4 alerts (tests/data/real) against a filter naming ``ssSource``,
    which v7.4 lacks: it compiles against the job's view and reads null there."""
    path = REAL / "rubin-opsrehearsal-v7_4.avro"
    with open(path, "rb") as f:
        records = list(fastavro.reader(f))
    either = AlertFilter(name="moving_or_bright", sql="ssSource IS NOT NULL OR diaSource.snr > 6")
    (row,) = backtest(spark, [either], load_alerts(spark, str(path)))
    expected = sum(r["diaSource"]["snr"] is not None and r["diaSource"]["snr"] > 6 for r in records)
    assert "ssSource" not in records[0]
    assert (
        0 < expected < len(records)
    )  # the cut splits the file: a filter matching all or none fails
    assert (row.alerts, row.errors, row.matches) == (len(records), 0, expected)


def test_filters_of_another_survey_are_left_out_or_refused():
    ztf = AlertFilter(name="ztf_only", sql="candidate.rb > 0.5", survey="ztf")
    anyone = AlertFilter(name="anyone", sql="true")  # no survey: Rubin's when there are any
    assert by_survey([BRIGHT, ztf], ["ztf"], "night/", named=False) == {"ztf": [ztf]}
    assert by_survey([BRIGHT, ztf, anyone], ["ztf", "rubin"], "night/", named=True) == {
        "rubin": [BRIGHT, anyone],
        "ztf": [ztf],
    }
    with pytest.raises(
        FilterError,
        match=r"--filter names 'bright_high_snr' .*, a filter for rubin alerts; night/ holds ztf alerts",
    ):
        by_survey([BRIGHT, ztf], ["ztf"], "night/", named=True)
    with pytest.raises(
        FilterError, match=r"night/ holds ztf alerts and none of the 1 filters found is for them"
    ):
        by_survey([BRIGHT], ["ztf"], "night/", named=False)


def test_the_real_corpus_is_backtested_night_by_night(spark):
    """The real LSSTCam v10.0 and Operations Rehearsal v7.4 alerts, two observing nights apart:
    each night's alerts and matches, and a range of nights, against plain Python."""
    files = [str(REAL / "rubin-lsstcam-v10_0.avro"), str(REAL / "rubin-opsrehearsal-v7_4.avro")]
    records = []
    for path in files:
        with open(path, "rb") as f:
            records += list(fastavro.reader(f))
    nights = {}
    for r in records:
        nights.setdefault(dayobs(r["diaSource"]["midpointMjdTai"]), []).append(r)
    assert len(nights) == 2
    positive = AlertFilter(name="positive", sql="diaSource.psfFlux > 0")
    (row,) = backtest(spark, [positive], load_alerts(spark, files))
    assert row.night_alerts == {n: len(rs) for n, rs in nights.items()}
    assert row.nights == {
        n: sum(r["diaSource"]["psfFlux"] > 0 for r in rs) for n, rs in nights.items()
    }
    text, _ = report([row], max_rate=0.05)
    first, last = sorted(nights)
    assert (
        f"{last.isoformat():<12} {len(nights[last]):>8}  {row.nights[last]:>8}" in text.splitlines()
    )
    (later,) = backtest(spark, [positive], load_alerts(spark, files), since=last)
    assert (later.alerts, later.matches) == (len(nights[last]), row.nights[last])
    (earlier,) = backtest(spark, [positive], load_alerts(spark, files), until=first)
    assert (earlier.alerts, earlier.matches) == (len(nights[first]), row.nights[first])


def test_an_archive_without_messages_says_how_to_keep_them(spark, tmp_path):
    spark.createDataFrame([("1", 1)], "alert_id string, offset long").write.format("delta").save(
        str(tmp_path / "matches")
    )
    with pytest.raises(
        FilterError,
        match=r"matches keeps no messages \(no column 'message'\).*delta_messages: true",
    ):
        load_alerts(spark, str(tmp_path))


def test_rare_matches_keep_their_rate():
    """4 in 100,000 reads 0.004%, not 0.00%; zero stays 0.00%."""
    text, ok = report(
        [BacktestRow("rare", 4, 100_000, 0, None), BacktestRow("none", 0, 100_000, 0, None)], 0.05
    )
    assert ok and "   0.004%" in text.splitlines()[1] and "   0.00%" in text.splitlines()[2]


def test_several_inputs_must_all_be_files():
    with pytest.raises(
        FilterError,
        match=r"'nowhere.avro' does not exist: several inputs must all be files or folders",
    ):
        load_alerts(None, [str(REAL / "rubin-lsstcam-v10_0.avro"), "nowhere.avro"])


def test_the_backtest_command_counts_the_nights_it_is_given_and_exits_on_the_rate(
    spark, tmp_path, capsys
):
    """`alertsieve backtest` itself on the real corpus, one night with --since/--until: the table
    counts that night's alerts and matches as plain Python does; exit 0 under --max-rate, 1 above."""
    from alertsieve import cli

    (tmp_path / "significant.py").write_text(
        "from alertsieve.filtering.model import AlertFilter\n\n"
        'FILTER = AlertFilter(name="significant", survey="rubin", sql="diaSource.snr > 5.5")\n'
    )
    files = [REAL / "rubin-lsstcam-v10_0.avro", REAL / "rubin-opsrehearsal-v7_4.avro"]
    nights: dict = {}
    for path in files:
        with open(path, "rb") as f:
            for r in fastavro.reader(f):
                nights.setdefault(dayobs(r["diaSource"]["midpointMjdTai"]), []).append(
                    r["diaSource"]["snr"] > 5.5
                )
    night = max(nights)
    alerts, matches = len(nights[night]), sum(nights[night])
    assert (
        0 < matches < alerts
    )  # the filter splits the night: a count of 0 or all would prove little
    args = [
        "backtest",
        "--filter",
        "significant",
        "--filter-path",
        str(tmp_path),
        "--input",
        str(files[0]),
        "--input",
        str(files[1]),
        "--since",
        night.isoformat(),
        "--until",
        night.isoformat(),
    ]
    rate = matches / alerts
    assert cli.main([*args, "--max-rate", str(rate + 0.01)]) == 0
    row = capsys.readouterr().out.splitlines()[1].split()
    assert row[:3] == ["significant", str(matches), str(alerts)]
    assert cli.main([*args, "--max-rate", str(rate - 0.01)]) == 1
    assert capsys.readouterr().out.splitlines()[1].endswith(f"WARNING: above {rate - 0.01:.1%}")


def _real_v10() -> list[dict]:
    with open(REAL / "rubin-lsstcam-v10_0.avro", "rb") as f:
        return list(fastavro.reader(f))


#: Messages no decoder can read, each with the reason the stream job quarantines it for.
JUNK = [
    (b"", "empty message"),
    (b"\x01garbage", "magic byte is 0x01, expected 0x00"),
    (b"\x01more garbage", "magic byte is 0x01, expected 0x00"),
    (b"\x00\x00\x00", "message of 3 bytes is shorter than the 5-byte header"),
    (
        b"\x00\x00\x00\x03\xe7" + b"\x02" * 40,
        "unknown schema id 999: neither the local schema store nor Rubin's shipped versions hold"
        " it; register it",
    ),
]


def _said(reasons: list[str]) -> str:
    """What a backtest says of undecodable alerts: per reason, most common first (then by name)."""
    counts = sorted({r: reasons.count(r) for r in reasons}.items(), key=lambda kv: (-kv[1], kv[0]))
    return "; ".join(f"{n} x {r}" for r, n in counts)


def test_a_partial_read_says_how_many_alerts_were_not_decoded_and_why(spark, caplog):
    """Six real LSSTCam alerts among five undecodable messages: the counts are over the six, as
    plain Python over fastavro finds them, and a warning names the five, per reason."""
    records = _real_v10()
    schema = load_rubin_schema("10.0")
    messages = [(str(i), schema.encode_framed(r)) for i, r in enumerate(records)]
    messages += [(f"junk{i}", m) for i, (m, _) in enumerate(JUNK)]
    positive = AlertFilter(name="positive", sql="diaSource.psfFlux > 0")
    with caplog.at_level("WARNING", logger="alertsieve.backtest.read_check"):
        (row,) = backtest(spark, [positive], messages_source(spark, "mixed", messages))
    assert (row.alerts, row.matches) == (
        len(records),
        sum(r["diaSource"]["psfFlux"] > 0 for r in records),
    )
    assert caplog.messages == [
        f"{len(JUNK)} of {len(messages)} alerts could not be decoded"
        f" ({_said([why for _, why in JUNK])}); rates are over the {len(records)} decoded"
    ]


def test_an_input_of_which_nothing_decodes_is_refused_naming_why(spark):
    messages = [(f"junk{i}", m) for i, (m, _) in enumerate(JUNK)]
    with pytest.raises(NothingToBacktest) as refused:
        backtest(spark, [BRIGHT], messages_source(spark, "junk", messages))
    assert str(refused.value) == (
        f"none of the {len(JUNK)} alerts read could be decoded:"
        f" {_said([why for _, why in JUNK])} (the stream job's quarantine reasons)"
    )


def test_the_backtest_command_exits_non_zero_when_no_alert_is_in_the_nights(spark, capsys):
    """Real alerts, none of them observed in 2030: the command says so and exits 2, with no table
    of zeros."""
    from alertsieve import cli

    path = str(REAL / "rubin-lsstcam-v10_0.avro")
    code = cli.main(["backtest", "--input", path, "--since", "2030-01-01", "--filter", BRIGHT.name])
    out = capsys.readouterr()
    assert code == 2 and out.out == ""
    assert out.err.strip() == (
        "alertsieve backtest: error: no alert of the input decodes in the nights 2030-01-01 to ..."
    )


def test_a_folder_of_every_kind_is_read_whole(spark, tmp_path):
    """A folder as a user keeps one: the 47 real LSSTCam v10.0 alerts (more than the first
    messages a decoder is planned from) before Operations Rehearsal v7.4 ones, two brokers'
    Parquet exports of other versions side by side, ZTF alerts and a SOURCES.md. Each export is
    read on its own schema, every Rubin version is decoded, the ZTF alerts are a survey of their
    own: counts from fastavro and pyarrow."""
    import shutil

    import pyarrow.parquet as pq

    from alertsieve.backtest.sources import survey_sources

    light_curves = REAL.parent / "rubin-light-curves" / "rubin-lsstcam-v10_0.avro"
    (tmp_path / "a-lsstcam.avro").symlink_to(light_curves)
    (tmp_path / "b-or.avro").symlink_to(REAL / "rubin-opsrehearsal-v7_4.avro")
    shutil.copytree(REAL.parent / "exports", tmp_path / "exports")  # folders: rglob
    shutil.copytree(REAL / "ztf-3.3", tmp_path / "ztf")  # follows no symlink to one
    (tmp_path / "SOURCES.md").write_text("where these come from\n")
    rubin = sum(
        1
        for p in (light_curves, REAL / "rubin-opsrehearsal-v7_4.avro")
        for _ in fastavro.reader(p.open("rb"))
    )
    rubin += sum(pq.read_metadata(p).num_rows for p in (REAL.parent / "exports").glob("*.parquet"))
    ztf = sum(1 for p in (REAL / "ztf-3.3").glob("*.avro") for _ in fastavro.reader(p.open("rb")))
    every = {s: AlertFilter(name=f"every_{s}", survey=s, sql="true") for s in ("rubin", "ztf")}
    found = {a.decoder.survey: a for a in survey_sources(spark, [str(tmp_path)])}
    assert sorted(found) == ["rubin", "ztf"]
    for survey, expected in (("rubin", rubin), ("ztf", ztf)):
        (row,) = backtest(spark, [every[survey]], found[survey])
        assert (row.alerts, row.matches, row.errors) == (expected, expected, 0)
