"""What ``filters list --bootstrap`` says of each filter, from a job's deployment record and
counts records in order (``alertsieve.subscribe.job_state``): the later of a batch and a refusal
holds."""

from __future__ import annotations

import datetime as dt

from alertsieve.subscribe.job_state import filter_states

AT = dt.datetime(2026, 11, 27, 9, 20, tzinfo=dt.UTC).timestamp()
DAY = dt.date(2026, 11, 27)


def _batch(**versions: str) -> dict:
    return {
        "kind": "counts",
        "filters": {n: {"version": v, "published": 1} for n, v in versions.items()},
    }


def _refused(name: str, reason: str, going: str | None = None) -> dict:
    entry = {"reason": reason, "running_versions": {name: going} if going else {}}
    return {"kind": "refused", "filters": {name: entry}, "written_at": AT}


def test_each_filter_is_running_refused_or_not_running():
    records = [
        _batch(bright="v1", faint="f1", old="o1"),
        _refused("bright", "no field x", going="v1"),  # a change refused, v1 goes on
        _batch(bright="v1", faint="f1", old="o1"),
        _refused("wide", "passes 40.00% of the reference"),  # admission: left out
        _refused("filters/broken.py", "does not import"),  # a file that did not load
    ]
    versions = {"bright": "v2", "faint": "f1", "old": "o2", "wide": "w1", "lost": "l1", "b": "b1"}
    origins = {"b": "filters/broken.py"}
    assert filter_states(records, versions, origins, DAY) == {
        "bright": "refused (2026-11-27 09:20 UTC): no field x; its running version v1 goes on",
        "faint": "running this version (f1)",
        "old": "running version o1, not this one (o2)",
        "wide": "refused (2026-11-27 09:20 UTC): passes 40.00% of the reference; not running",
        "lost": "not running (no batch has published it)",
        "b": "refused (2026-11-27 09:20 UTC): does not import; not running",
    }
    # The file back to what runs: running, the refused change said until a batch comes.
    assert filter_states(records[:2], {"bright": "v1"}, {}, DAY) == {
        "bright": "running this version (v1); a change refused (2026-11-27 09:20 UTC): no field x"
    }
    assert filter_states(records, {"bright": "v1"}, {}, DAY) == {
        "bright": "running this version (v1)"
    }
    # Admitted later (a batch published it after the refusal): running.
    assert filter_states([*records, _batch(wide="w1")], {"wide": "w1"}, {}, DAY) == {
        "wide": "running this version (w1)"
    }


def test_a_filter_past_its_daily_quota_says_until_when():
    quota = {"kind": "quota", "filter": "bright", "day": "2026-11-27", "used": {}, "quota": {}}
    records = [_batch(bright="v1"), quota]
    assert filter_states(records, {"bright": "v1"}, {}, DAY) == {
        "bright": "running this version (v1); its daily quota reached: matches withheld until"
        " 2026-11-28 00:00 UTC"
    }
    tomorrow = DAY + dt.timedelta(days=1)
    assert filter_states(records, {"bright": "v1"}, {}, tomorrow) == {
        "bright": "running this version (v1)"
    }


def test_the_deployment_record_alone_says_what_runs_and_what_was_refused():
    """A job deployed long ago: its compacted deployment record, and no counts today."""
    deployment = {
        "kind": "deployment",
        "filters": {"bright": {"version": "v1"}, "faint": {"version": "f1"}},
        "refused": {
            "bright": {"reason": "no field x", "running_versions": {"bright": "v1"}},
            "wide": {"reason": "passes 40.00% of the reference", "running_versions": {}},
        },
        "written_at": AT,
    }
    versions = {"bright": "v2", "faint": "f1", "wide": "w1", "lost": "l1"}
    assert filter_states([deployment], versions, {}, DAY) == {
        "bright": "refused (2026-11-27 09:20 UTC): no field x; its running version v1 goes on",
        "faint": "running this version (f1)",
        "wide": "refused (2026-11-27 09:20 UTC): passes 40.00% of the reference; not running",
        "lost": "not running (no batch has published it)",
    }
    assert filter_states([deployment], {"bright": "v1"}, {}, DAY) == {
        "bright": "running this version (v1); a change refused (2026-11-27 09:20 UTC): no field x"
    }
    # a batch after it: what the batch published holds
    assert filter_states([deployment, _batch(bright="v1")], {"bright": "v1"}, {}, DAY) == {
        "bright": "running this version (v1)"
    }
