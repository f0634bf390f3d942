"""One line for a batch whose every message was quarantined: the reason and its likely fix.

A job pointed at the wrong topic, or told the wrong survey or wire format, decodes nothing and
quarantines everything; the console line's "(N quarantined)" says so, but not why nor what to
change. The hot path observes the first and last quarantine reasons of each batch in sort order
(``batch_metrics.outcome_metrics``: ``min``/``max`` aggregates, so Real-Time Mode runs them too), and
every reason of the batch sorts between those two, so it starts with what they share: reasons
that differ only in a schema id or a message's first bytes are still known as one kind.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from alertsieve.stream.metrics import BatchStats

#: After the first batch that shows a diagnosis, it is repeated every this many batches that show
#: it again: a job left running on a wrong topic keeps saying so without a line per batch.
REPEAT_EVERY = 100


@dataclass(frozen=True)
class Fix:
    """A kind of reason, told by how it starts (``start``, a regular expression matched at the
    start of what every reason of the batch shares), and what likely causes it."""

    wire_format: str  # the decoder's: container (ZTF), confluent or plain (Rubin)
    start: str
    advice: str  # may name {survey}: how the job was told its survey


FIXES = [
    Fix(
        "container",
        r"not an Avro container file \(starts with 0x00",
        "{survey} but the messages are Confluent-framed (Rubin's wire format): were they replayed"
        " as Rubin? run with --survey rubin, or replay the files as ZTF",
    ),
    Fix(
        "container",
        r"not an Avro container file",
        "the messages are neither ZTF's Avro container files nor Confluent-framed: is --topic the"
        " alert stream?",
    ),
    Fix(
        "container",
        r"a [a-z0-9]+-compressed container",
        "the producer compresses its containers: have it write them uncompressed (codec null),"
        " as ZTF sends them",
    ),
    Fix(
        "container",
        r"a ZTF container whose writer schema",
        "a running job learns a new ZTF writer schema from its first message; where the job did"
        " not (a backtest of a topic), restart it: at start-up it learns them from schemas/ztf/,"
        " the topic's first and newest messages and the quarantined ones (which keep their bytes"
        " on the quarantine topic)",
    ),
    Fix(
        "container",
        r"undecodable Avro body in a container",
        "the containers do not match their own header's schema: the files are corrupt or truncated",
    ),
    Fix(
        "confluent",
        r"magic byte is 0x4f,",
        "the messages start like Avro container files (b'Obj\\x01', ZTF's wire format): run with"
        " --survey ztf",
    ),
    Fix(
        "confluent",
        r"magic byte is 0x",
        "the messages are not Confluent-framed: bare Avro bodies of one schema version need"
        " wire_format: plain and writer_schema_version in the settings file",
    ),
    Fix(
        "confluent",
        r"unknown schema id ",
        "the job looked that id up when it first met it (in schema_registry, else the local store,"
        " then Rubin's shipped versions) and found it nowhere: point schema_registry at the"
        " producer's registry, or register the schema there, then restart the job (it looks the"
        " quarantined messages' ids up again)",
    ),
    Fix(
        "confluent",
        r"undecodable Avro body for schema id ",
        "the bodies do not match the schema registered under that id: does the job read the"
        " producer's registry (schema_registry in the settings file)?",
    ),
    Fix(
        "confluent",
        r"schema id \d+ \(.*\) is not among the versions this job reads",
        "add the version to --schema-versions (schema_versions in the settings file)",
    ),
    Fix(
        "confluent",
        r"schema id \d+ \(.*\) is not a Rubin alert schema",
        "the topic carries records of another schema: is --topic the alert stream?",
    ),
    Fix(
        "plain",
        r"undecodable Avro body for ",
        "wire_format plain reads every message as a bare body of writer_schema_version: set it to"
        " the producer's version, or wire_format confluent for Confluent-framed messages"
        " (--survey ztf for ZTF's containers)",
    ),
]


def finding(
    stats: BatchStats, survey: str, wire_format: str, detected: bool = False
) -> tuple[str, str | None] | None:
    """(the reason, as shared by every message of the batch, and its likely fix or None) when
    every message of the batch was quarantined for one reason, or one kind of reason; else None.

    ``survey`` and ``wire_format``: the job's decoder's; ``detected``: the survey was told by the
    topic's first messages (``survey: auto``), not by ``--survey``."""
    first, last = stats.reason_min, stats.reason_max
    if (
        not stats.input_rows
        or stats.quarantined_rows != stats.input_rows
        or first is None
        or last is None
    ):
        return None
    shared = os.path.commonprefix([first, last])
    said = (
        f"survey {survey} (detected from the topic's first messages)"
        if detected
        else f"--survey {survey}"
    )
    for fix in FIXES:
        if fix.wire_format == wire_format and re.match(fix.start, shared):
            return (first if first == last else f"{shared}..."), fix.advice.format(survey=said)
    return (first, None) if first == last else None


def diagnose(
    stats: BatchStats, survey: str, wire_format: str, detected: bool = False
) -> str | None:
    """The one line saying that every message of the batch was quarantined, why, and the likely
    fix (see ``finding``); None when some message was decoded, or their reasons differ in kind."""
    found = finding(stats, survey, wire_format, detected)
    return None if found is None else _line(stats, *found)


def _line(stats: BatchStats, reason: str, fix: str | None) -> str:
    n = stats.input_rows
    line = f"batch {stats.batch_id}: every message was quarantined ({n} of {n}): {reason}"
    return f"{line} | likely: {fix}" if fix else line


class Diagnoser:
    """A job's diagnoses as its batches come: each distinct one on the first batch that shows it,
    then on every ``every``-th batch that shows it again."""

    def __init__(
        self, survey: str, wire_format: str, detected: bool = False, every: int = REPEAT_EVERY
    ):
        self.survey = survey
        self.wire_format = wire_format
        self.detected = detected
        self.every = every
        self._shown: dict[tuple[str, str | None], int] = {}

    def __call__(self, stats: BatchStats) -> str | None:
        """The line to emit for this batch, or None (nothing to say, or said recently)."""
        found = finding(stats, self.survey, self.wire_format, self.detected)
        if found is None:
            return None
        seen = self._shown.get(found, 0)
        self._shown[found] = seen + 1
        return _line(stats, *found) if seen % self.every == 0 else None
