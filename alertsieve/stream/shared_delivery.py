"""Shared delivery (``delivery: shared``): each alert that passed any shared filter published
once, on the job's ``<prefix>matches``, naming every filter and version it passed.

With a topic per filter, ten thousand filters write their matches to ten thousand topics, a few
records per topic and batch: a batch header per partition, a log append per topic, and
librdkafka, which sends one partition per request (confluentinc/librdkafka#1700), republishes
them at a hundredth of its rate to one topic. BOOM publishes each matching alert once with the
filters it passed inside; Pitt-Google serves subscriptions from one topic. Here the record's
``filters`` header lists each filter it passed with its version and, for a filter that publishes
fields, those fields as its own topic's JSON record would hold them; its value is the original
alert when a filter it passed publishes the alert, else the envelope (``contract``). A subscriber
reads one filter's matches from it (``alertsieve listen --filter``), and verifies them against the
counts topic, which counts per filter as before.

Where an alert's outcomes are one array (the compiled and predicate-first filters'; shared
delivery runs no shaped join, whose rows are one per match), the shared filters' indices are
taken out of it into ``SHARED`` and replaced by one index, ``shared_index``: exploded, the alert
has one row for its shared record beside its private filters' rows.
"""

from __future__ import annotations

import json

from alertsieve.publish import contract
from alertsieve.publish.payloads import envelope_columns
from alertsieve.spark.constants import constant_at
from alertsieve.stream.config import JobConfig
from alertsieve.stream.plan import JobPlan

#: The column of an alert's shared filters' indices (on its shared record's row).
SHARED = "_shared"
#: The shared record's ``filters`` header (JSON) and what its value is (``payload``).
ENTRIES, PAYLOAD = "_shared_entries", "_shared_payload"


def shared_index(plan: JobPlan) -> int:
    """The outcome index of an alert's shared record: past every filter's."""
    return len(plan.filters)


def flags(plan: JobPlan, cfg: JobConfig) -> list[int]:
    """1 for each filter delivered shared, 0 for one that keeps its topic."""
    return [int(contract.is_shared(f, cfg.delivery)) for f in plan.filters]


def split(outcomes, plan: JobPlan, cfg: JobConfig) -> tuple:
    """(outcomes, shared): an alert's outcome indices with its shared filters' replaced by
    ``shared_index`` (when it passed any), and those filters' indices."""
    from pyspark.sql import functions as F

    shared_flags = flags(plan, cfg)

    def is_shared(i):
        return (i >= 0) & (constant_at(shared_flags, "int", i + 1) == 1)

    shared = F.filter(outcomes, is_shared)
    rest = F.filter(outcomes, lambda i: ~is_shared(i))
    marker = F.array(F.lit(shared_index(plan)))
    return F.when(F.size(shared) > 0, F.concat(rest, marker)).otherwise(rest), shared


def names(plan: JobPlan):
    """The shared filters' names of a shared record's row (its ``SHARED`` indices)."""
    from pyspark.sql import functions as F

    listed = [f.name for f in plan.filters]
    return F.transform(SHARED, lambda i: constant_at(listed, "string", i + 1))


def entries(plan: JobPlan, groups: list[list[int]], record_of) -> tuple:
    """(the ``filters`` header's JSON, the payload) of a shared record's row: an entry per
    filter, ``{"filter", "filter_version"}`` and, for a fields filter, ``"fields"``: its
    group's fields as JSON (``record_of(filter)``: its fields as a struct column, computed
    once per group); the payload is the alert when one of them publishes it."""
    from pyspark.sql import functions as F

    group_of = [0] * len(plan.filters)
    for g, members in enumerate(groups, 1):
        for i in members:
            group_of[i] = g
    heads = []
    for i, f in enumerate(plan.filters):
        head = json.dumps(
            {contract.FILTER: f.name, contract.FILTER_VERSION: plan.versions.get(f.name, "")}
        )[:-1]
        heads.append(head + (f', "{contract.FIELDS}": ' if group_of[i] else ""))

    def fields(i):
        """The entry's fields: its group's, written for this entry only (an alert passes a few
        filters of a few groups; the JSON of every group for every alert cost more than all)."""
        g = constant_at(group_of, "int", i + 1)
        text = F.lit("")
        for k, members in enumerate(groups, 1):
            record = F.to_json(record_of(plan.filters[members[0]]), {"ignoreNullFields": "false"})
            text = F.when(g == k, record).otherwise(text)
        return text

    listed = F.transform(
        SHARED, lambda i: F.concat(constant_at(heads, "string", i + 1), fields(i), F.lit("}"))
    )
    header = F.concat(F.lit("["), F.array_join(listed, ", "), F.lit("]"))
    alert = F.exists(SHARED, lambda i: constant_at(group_of, "int", i + 1) == 0)
    payload = F.when(alert, F.lit(contract.PAYLOAD_ALERT)).otherwise(F.lit(contract.PAYLOAD_FIELDS))
    return header, payload


def envelope(plan: JobPlan):
    """A shared fields record's value: the envelope as JSON, without ``filter`` and its version
    (the header lists them)."""
    from pyspark.sql import functions as F

    columns = envelope_columns(plan.decoder, "", "")
    kept = [
        c
        for name, c in zip(contract.ENVELOPE, columns, strict=True)
        if name not in (contract.FILTER, contract.FILTER_VERSION)
    ]
    return F.to_json(F.struct(*kept), {"ignoreNullFields": "false"}).cast("binary")
