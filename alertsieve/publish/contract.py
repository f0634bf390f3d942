"""The output contract: what the job publishes, where, and what it says about each record.

Everything a subscriber relies on is named here once; the hot path and payloads that write it,
the archive, the subscriber (``alertsieve.subscribe``) and the latency reader that read it import
these names, and docs/subscribers.md describes them. Pure Python (no Spark): subscribers import it.

Topics (``DEFAULT_PREFIX`` unless the job's ``output_prefix`` says otherwise):
- ``<prefix><filter>``: a filter's matches (``filter_topic``; a filter may name its own topic);
- ``<prefix>quarantine``: the messages the job could not decode, with the reason;
- ``<prefix>counts``: one JSON record per batch (``COUNTS_KIND``), so a subscriber can check
  that it received everything (``alertsieve.publish.counts``, ``alertsieve.subscribe.verify``).

Headers of every record of a filter's topic (``MATCH_HEADERS``), and why each is there:
- ``filter``: which filter passed the alert, since filters may share a topic and the archive
  collects every filter's topic into one row per alert;
- ``filter_version``: which version of that filter passed it (a hash of what decides its
  matches), so a redeployed filter's records are told apart and verified per version;
- ``payload``: what the value is (``PAYLOAD_ALERT``: the original bytes; ``PAYLOAD_FIELDS``: a
  compact record), so a reader decodes it without guessing;
- ``format``: a fields record's encoding (``FORMAT_AVRO`` or ``FORMAT_JSON``), fields only;
- ``source_topic``, ``source_partition``, ``source_offset``: where the alert came from, its
  identity: the archive merges on it (exactly once) and verification counts distinct ones;
- ``kafka_timestamp_ms``: when the alert was appended to the input, so latency is measured where
  subscribers see it (the record's own timestamp minus this);
- ``processed_at_ms``: when the job published it;
- ``counts_topic``: the job's counts topic, so a subscriber verifies against it without knowing
  the job's ``output_prefix``.

With ``delivery: shared``, each alert that passed any shared filter is published once, on
``<prefix>matches`` (``shared_topic``), with the source and time headers above, ``payload`` and
``format`` (``json`` for a fields record) and ``filters`` (``SHARED_FILTERS``): a JSON list, one
entry per filter it passed, ``{"filter", "filter_version"}`` and, for a filter that publishes
fields, ``"fields"``: its fields, as its own topic's JSON record would hold them. The value is
the original alert when a filter it passed publishes the alert, else a JSON record of the
envelope (no ``filter``: the header says which). A filter with ``readers``, its own ``topic`` or a
daily quota keeps its topic (``delivered_topic``): a shared topic cannot hide one user's matches
from another, nor withhold one filter's.

A quarantined message's record carries ``reason`` (why it could not be decoded) and the source
headers (``QUARANTINE_HEADERS``), but no ``filter``: that is how a reader tells it apart.

A fields record's value begins with ``ENVELOPE``: the alert's identity, the same filter, version,
source and times as the headers, and the detection's time and position.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from alertsieve.filtering.model import Filter

# --- headers ---------------------------------------------------------------------------------

FILTER = "filter"
FILTER_VERSION = "filter_version"
PAYLOAD = "payload"
FORMAT = "format"
SOURCE_TOPIC = "source_topic"
SOURCE_PARTITION = "source_partition"
SOURCE_OFFSET = "source_offset"
KAFKA_TIMESTAMP_MS = "kafka_timestamp_ms"
PROCESSED_AT_MS = "processed_at_ms"
REASON = "reason"
COUNTS_TOPIC = "counts_topic"
#: What ran the filter on a record of a filter of objects: ``alert``, or ``annotation:<annotator>``
#: (the record's source is then the annotation, its value the object's latest alert).
TRIGGER = "trigger"
#: A shared record's filters (see the module): JSON ``[{filter, filter_version, fields?}]``.
SHARED_FILTERS = "filters"
FIELDS = "fields"

#: Where the alert came from and when it arrived: on every record, matched or quarantined.
SOURCE_HEADERS = (SOURCE_TOPIC, SOURCE_PARTITION, SOURCE_OFFSET, KAFKA_TIMESTAMP_MS)
#: Headers every record of a filter's topic carries (``format`` only with ``payload: fields``).
MATCH_HEADERS = (
    FILTER,
    FILTER_VERSION,
    PAYLOAD,
    FORMAT,
    *SOURCE_HEADERS,
    PROCESSED_AT_MS,
    COUNTS_TOPIC,
)
#: Headers of a quarantined message's record.
QUARANTINE_HEADERS = (REASON, *SOURCE_HEADERS)

# --- payload kinds (the ``payload`` header) and formats (the ``format`` header) ---------------

PAYLOAD_ALERT = "alert"
PAYLOAD_FIELDS = "fields"
#: What a reader calls a quarantined message's value (it has no ``payload`` header: the job
#: could not decode it); ``alertsieve.subscribe``'s ``Match.payload``.
PAYLOAD_QUARANTINE = "quarantine"
FORMAT_AVRO = "avro"
FORMAT_JSON = "json"

# --- a fields record's envelope ----------------------------------------------------------------

ALERT_ID = "alert_id"
SURVEY = "survey"
#: The fields every fields record starts with, and their Spark types.
ENVELOPE = {
    ALERT_ID: "string",
    SURVEY: "string",
    FILTER: "string",
    FILTER_VERSION: "string",
    SOURCE_TOPIC: "string",
    SOURCE_PARTITION: "int",
    SOURCE_OFFSET: "bigint",
    KAFKA_TIMESTAMP_MS: "bigint",
    PROCESSED_AT_MS: "bigint",
    "mjd": "double",
    "ra": "double",
    "dec": "double",
}

# --- topics -------------------------------------------------------------------------------------

DEFAULT_PREFIX = "alertsieve-"
QUARANTINE = PAYLOAD_QUARANTINE  # the quarantine topic's suffix: the same word
COUNTS = "counts"
DEPLOYMENT = "deployment"
SHARED = "matches"  # the shared topic's suffix (``delivery: shared``)
DELIVERY_TOPICS, DELIVERY_SHARED = "topics", "shared"


def filter_topic(f: Filter, prefix: str) -> str:
    """A filter's topic: its own, else ``<prefix><name>``."""
    return f.topic or f"{prefix}{f.name}"


def shared_topic(prefix: str) -> str:
    """Where ``delivery: shared`` publishes each matching alert once."""
    return f"{prefix}{SHARED}"


def is_shared(f: Filter, delivery: str) -> bool:
    """Whether ``f``'s matches go to the shared topic: with shared delivery, unless it has
    ``readers`` (its topic is private to them), a topic of its own, or a daily quota (what it
    withholds and the bytes it counts are its topic's)."""
    return delivery == DELIVERY_SHARED and not (f.readers or f.topic or f.quota)


def delivered_topic(f: Filter, prefix: str, delivery: str = DELIVERY_TOPICS) -> str:
    """Where ``f``'s matches are published: the shared topic (``is_shared``) or its own."""
    return shared_topic(prefix) if is_shared(f, delivery) else filter_topic(f, prefix)


def quarantine_topic(prefix: str) -> str:
    return f"{prefix}{QUARANTINE}"


def counts_topic(prefix: str) -> str:
    return f"{prefix}{COUNTS}"


def deployment_topic(prefix: str) -> str:
    """The job's deployment record, on a compacted topic: what runs now, whatever its age."""
    return f"{prefix}{DEPLOYMENT}"


ANNOTATIONS = "annotations"  # the annotators' topics' infix: <prefix>annotations-<annotator>


def annotation_topic(prefix: str, annotator: str) -> str:
    """Where ``annotator`` publishes its annotations: a topic of its own, so the broker's ACLs
    decide who writes under its name (``alertsieve.publish.annotations``)."""
    return f"{prefix}{ANNOTATIONS}-{annotator}"


def annotations_pattern(prefix: str) -> str:
    """The topics of every annotator (a Java regular expression, as Kafka subscribes)."""
    import re

    return f"{re.escape(prefix)}{ANNOTATIONS}-.+"


def derive_counts_topic(topic: str) -> str:
    """The counts topic of the job that publishes ``topic``, for a prefix that ends with its only
    ``-``: ``alertsieve-bright`` -> ``alertsieve-counts``; a topic without ``-`` -> ``counts``."""
    head, sep, _ = topic.partition("-")
    return f"{head}{sep}{COUNTS}" if sep else COUNTS


# --- the counts record (one per batch, see alertsieve.publish.counts) ---------------------------

KIND = "kind"
COUNTS_KIND = COUNTS  # the value of ``kind``: what the record is
QUERY_ID = "query_id"
BATCH_ID = "batch_id"
INPUT = "input"  # {topic: {partition: [start, end)}}: the offsets the batch read
#: {topic: {partition: [start, end)}}: offsets the batch was to read that the input no longer
#: held (retention, a reset): never read, so never published; only when there were any.
LOST_AT_SOURCE = "lost_at_source"
ALERTS_READ = "alerts_read"
QUARANTINED = "quarantined"
FILTERS = "filters"  # {filter: {VERSION, TOPIC, PUBLISHED}}, every filter of the job
VERSION = "version"
TOPIC = "topic"
PUBLISHED = "published"
#: Per filter, for a filter with a daily quota: the bytes it published, and the matches it
#: withheld (its quota for the UTC day reached: counted, not published).
BYTES = "bytes"
WITHHELD = "withheld"
#: Per filter, when it failed on some alerts of the batch: the first error (a Python filter's, or
#: that of a model whose score it reads): those alerts had no match of it.
ERROR = "error"
#: Per filter, when its SQL raised an error on some alerts of the batch (a division by zero, a
#: cast that fails): how many; those alerts had no match of it.
FAILED_ALERTS = "failed_alerts"
RECORDS = "records"  # a quota's other kind (with BYTES)
#: ``kind`` of the record written when a filter reaches its quota: ``{FILTER, VERSION, DAY,
#: USED, QUOTA, WRITTEN_AT}``.
QUOTA_KIND = "quota"
DAY = "day"
USED = "used"
QUOTA = "quota"
QUARANTINE_TOPIC = "quarantine_topic"
WRITTEN_AT = "written_at"
#: ``kind`` of the record a deployment writes when ``on_bad_filter: skip`` refused filters:
#: ``{FILTERS: {name or file: {REASON, RUNNING_VERSIONS}}}`` (``alertsieve.publish.counts``).
REFUSED_KIND = "refused"
RUNNING_VERSIONS = "running_versions"
#: ``kind`` of the record each deployment writes on the deployment topic (one key: compaction
#: keeps the last): ``{FILTERS: {name: {VERSION}}, REFUSED: {name or file: {REASON,
#: RUNNING_VERSIONS}}, WRITTEN_AT}``: what ``filters list --bootstrap`` reads.
DEPLOYMENT_KIND = DEPLOYMENT
REFUSED = "refused"
