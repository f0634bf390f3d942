"""What a running job makes of each filter, read from its counts topic: running (which version),
refused (why: its checks or its admission, and whether a running version goes on), or not
running. ``alertsieve filters list --bootstrap`` shows it beside each filter's file, so whoever
wrote a filter sees why its topic stays quiet without reading the job's log.

The job's compacted deployment topic holds its last deployment (what runs, what was refused);
the counts topic a record per batch (the filters it published, with their versions), a record per
deployment that refused filters (``CountsTopic.refused``) and one when a filter reaches its daily
quota. The latest record says what holds now. ``job_records`` reads the deployment record and
today's counts only: a job that has run for months has millions of batch records. Pure but for
``job_records``: the records come in ordered by when they were written.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from typing import Any

from alertsieve.publish import contract


def filter_states(
    records: Iterable[Mapping[str, Any]],
    versions: Mapping[str, str],
    origins: Mapping[str, str],
    today: dt.date,
) -> dict[str, str]:
    """{filter: one line} for each filter of ``versions`` (its version here) from the job's
    counts records; a refusal may name the filter or the file it comes from (``origins``); a
    running filter whose daily quota was reached ``today`` (UTC) says so."""
    ran: dict[str, tuple[int, str]] = {}  # filter -> (position, version) of its latest batch
    refused: dict[str, tuple[float, Mapping[str, Any], float]] = {}  # name or file -> latest
    capped: set[str] = set()  # quota reached today
    for position, record in enumerate(records):
        kind = record.get(contract.KIND, contract.COUNTS_KIND)
        if kind == contract.QUOTA_KIND and record.get(contract.DAY) == str(today):
            capped.add(str(record.get(contract.FILTER)))
        for name, entry in (record.get(contract.FILTERS) or {}).items():
            if not isinstance(entry, Mapping):
                continue
            if kind in (contract.COUNTS_KIND, contract.DEPLOYMENT_KIND):
                ran[name] = (position, str(entry.get(contract.VERSION)))
            elif kind == contract.REFUSED_KIND:
                refused[name] = (position, entry, float(record.get(contract.WRITTEN_AT) or 0))
        if kind == contract.DEPLOYMENT_KIND:  # its refusals came after what it runs
            for name, entry in (record.get(contract.REFUSED) or {}).items():
                written = float(record.get(contract.WRITTEN_AT) or 0)
                refused[name] = (position + 0.5, entry, written)
    states = {}
    for name, version in versions.items():
        run = ran.get(name)
        refusal = refused.get(name) or refused.get(origins.get(name, ""))
        if refusal and (run is None or refusal[0] > run[0] or run[1] != version):
            _, entry, written = refusal
            at = dt.datetime.fromtimestamp(written, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
            said = f"({at}): {entry.get(contract.REASON)}"
            going = (entry.get(contract.RUNNING_VERSIONS) or {}).get(name)
            if going == version:  # a change was refused, and the file is back to what runs
                states[name] = f"running this version ({version}); a change refused {said}"
            else:
                states[name] = f"refused {said}" + (
                    f"; its running version {going} goes on" if going else "; not running"
                )
        elif run and run[1] == version:
            states[name] = f"running this version ({version})" + (
                f"; its daily quota reached: matches withheld until {today + dt.timedelta(1)}"
                " 00:00 UTC"
                if name in capped
                else ""
            )
        elif run:
            states[name] = f"running version {run[1]}, not this one ({version})"
        else:
            states[name] = "not running (no batch has published it)"
    return states


def job_records(bootstrap: str, prefix: str, kafka_conf: Mapping[str, str], today: dt.date) -> list:
    """The job's deployment record and today's (UTC) counts records, by when each was written:
    what ``filter_states`` needs, read from bounded places."""
    from alertsieve.publish.counts import read_counts

    midnight = dt.datetime.combine(today, dt.time(), dt.UTC).timestamp()
    records = read_counts(bootstrap, contract.deployment_topic(prefix), dict(kafka_conf))
    records += read_counts(
        bootstrap, contract.counts_topic(prefix), dict(kafka_conf), since_ms=int(midnight * 1000)
    )
    return sorted(records, key=lambda r: float(r.get(contract.WRITTEN_AT) or 0))
