"""`alertsieve filters diff`: the alerts a change to a filter adds and drops, over real alerts,
against fastavro + plain Python over the same files."""

from __future__ import annotations

import fastavro
import pytest
from crafted import REAL, REAL_FILES

from alertsieve.alerts.schemas import load_rubin_schema
from alertsieve.backtest.diff import diff, diff_lines, filter_named
from alertsieve.backtest.read_check import NothingToBacktest
from alertsieve.backtest.sources import load_alerts, messages_source
from alertsieve.cli import main
from alertsieve.publish.versions import filter_version

BEFORE = "from alertsieve.filtering.model import AlertFilter\nF = AlertFilter(name='doubt', sql='diaSource.reliability > {r}', params={{'r': {r}}})\n"
AFTER = (
    "from alertsieve.filtering.model import AlertFilter\n"
    "F = AlertFilter(name='doubt', sql='diaSource.reliability > {r} OR diaSource.snr > 6.5', params={'r': 0.9})\n"
)


def _real_alerts() -> dict[str, dict]:
    out = {}
    for name in REAL_FILES:
        with open(REAL / name, "rb") as f:
            for alert in fastavro.reader(f):
                out[str(alert["diaSource"]["diaSourceId"])] = alert
    return out


def test_diff_names_the_alerts_a_change_adds_and_drops(spark, tmp_path):
    deployed, edited = tmp_path / "deployed", tmp_path / "edited"
    deployed.mkdir()
    edited.mkdir()
    (deployed / "doubt.py").write_text(BEFORE.format(r=0.5))
    (edited / "doubt.py").write_text(AFTER)
    before = filter_named("doubt", [deployed], builtin=False)
    after = filter_named("doubt", [edited], builtin=False)

    alerts = _real_alerts()
    was = {k for k, a in alerts.items() if a["diaSource"]["reliability"] > 0.5}
    now = {
        k
        for k, a in alerts.items()
        if a["diaSource"]["reliability"] > 0.9 or a["diaSource"]["snr"] > 6.5
    }
    assert now - was and was - now  # the change both adds and drops real alerts

    source = load_alerts(spark, [str(REAL / n) for n in REAL_FILES])
    d = diff(spark, before, after, source)
    assert (d.alerts, d.before, d.after) == (len(alerts), len(was), len(now))
    assert d.added == sorted(now - was) and d.dropped == sorted(was - now)
    assert (d.before_version, d.after_version) == (filter_version(before), filter_version(after))
    lines = diff_lines(d, "deployed/", "edited/doubt.py", show=1)
    assert lines[1] == (
        f"over {len(alerts)} alerts: {len(was)} matches before, {len(now)} after:"
        f" +{len(now - was)} added, -{len(was - now)} dropped, {len(was & now)} in both"
    )
    assert lines[2] == f"+ {sorted(now - was)[0]}"


@pytest.mark.slow
def test_diff_on_the_command_line(tmp_path, spark, capsys):
    """As people run it before a redeploy: the edited filter's folder against the deployed one
    (in this process, on the tests' session: the check is what the command prints)."""
    deployed, edited, inputs = tmp_path / "deployed", tmp_path / "edited", tmp_path / "inputs"
    for folder in (deployed, edited, inputs):
        folder.mkdir()
    (deployed / "doubt.py").write_text(BEFORE.format(r=0.5))
    (edited / "doubt.py").write_text(AFTER)
    for name in REAL_FILES:
        (inputs / name).symlink_to(REAL / name)
    alerts = _real_alerts()
    was = {k for k, a in alerts.items() if a["diaSource"]["reliability"] > 0.5}
    now = {
        k
        for k, a in alerts.items()
        if a["diaSource"]["reliability"] > 0.9 or a["diaSource"]["snr"] > 6.5
    }
    code = main(
        [
            "filters",
            "diff",
            "doubt",
            "--filter-path",
            str(edited),
            "--against",
            str(deployed),
            "--input",
            str(inputs),
        ]
    )
    out = capsys.readouterr()
    assert code == 0, out.out[-2000:] + out.err[-2000:]
    assert (
        f"over {len(alerts)} alerts: {len(was)} matches before, {len(now)} after: +{len(now - was)} added,"
        f" -{len(was - now)} dropped, {len(was & now)} in both"
    ) in out.out.splitlines()


def test_diff_without_against_says_what_it_needs(capsys):
    assert main(["filters", "diff", "bright_high_snr", "--input", "x.avro"]) == 2
    err = capsys.readouterr().err
    assert "--against PATH" in err and len(err.strip().splitlines()) == 1


def test_an_unchanged_filter_has_one_version(tmp_path, r=0.5):
    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        d.mkdir()
        (d / "doubt.py").write_text(BEFORE.format(r=r))
    assert filter_version(filter_named("doubt", [a], builtin=False)) == filter_version(
        filter_named("doubt", [b], builtin=False)
    )


def test_undecodable_alerts_are_counted_apart_and_an_input_of_only_those_is_refused(spark):
    """The real LSSTCam v10.0 alerts among two messages no decoder reads: the diff is over the real
    ones alone (as plain Python finds them); the two messages alone are refused, naming why."""
    schema = load_rubin_schema("10.0")
    with open(REAL / "rubin-lsstcam-v10_0.avro", "rb") as f:
        records = list(fastavro.reader(f))
    junk = [("junk0", b""), ("junk1", b"\x01garbage")]
    real = [(str(i), schema.encode_framed(r)) for i, r in enumerate(records)]
    before = filter_named("bright_high_snr", [])
    d = diff(spark, before, before, messages_source(spark, "mixed", real + junk))
    assert (d.alerts, d.added, d.dropped) == (len(records), [], [])
    with pytest.raises(NothingToBacktest) as refused:
        diff(spark, before, before, messages_source(spark, "junk", junk))
    assert str(refused.value) == (
        "none of the 2 alerts read could be decoded: 1 x empty message;"
        " 1 x magic byte is 0x01, expected 0x00 (the stream job's quarantine reasons)"
    )
