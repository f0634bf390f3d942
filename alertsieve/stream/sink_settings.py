"""The hot path's settings: the Kafka sink's producer for ~100 KB records and thousands of
topics, and the session's code generation for thousands of conditions."""

from __future__ import annotations

from alertsieve.stream.config import JobConfig
from alertsieve.stream.plan import JobPlan
from alertsieve.stream.sinks import kafka_options

MAX_MESSAGE_BYTES = 16 * 1024 * 1024  # the largest alert forwarded (the embedded brokers' limit)


#: Up to this many filters, the hot path runs in whole-stage generated code; beyond, Spark
#: generates code per expression instead. Whole-stage code puts every filter's condition in one
#: Java method: measured here (10,000 alerts, local[2]), 100 filters ran 2.6 s that way and 3.7 s
#: per expression; at 300, Spark failed to compile the method and fell back with an ERROR; at
#: 1,000, the Java compiler (Janino) filled a 3 GB driver heap. Per expression, each method holds
#: a few conditions and 1,000 filters compile in a second.
WHOLE_STAGE_MAX_FILTERS = 100


def codegen_conf(plan: JobPlan) -> dict[str, str]:
    """The session settings the hot path of ``plan`` needs (see ``WHOLE_STAGE_MAX_FILTERS``: a
    shape is one condition however many filters it holds). With shapes, an expression repeated on
    the right of an ``AND`` or ``OR`` is not computed ahead of the condition (Spark's default
    computes every repeated expression first, for every (alert, row) pair of the shapes' join,
    whatever the row's shape: at 10,000 filters, 46-48 s of a batch of 10,000 alerts against
    21 s without)."""
    conditions = len(plan.compiled) + len(plan.shapes)
    return {
        "spark.sql.codegen.wholeStage": str(conditions <= WHOLE_STAGE_MAX_FILTERS).lower(),
        "spark.sql.subexpressionElimination.skipForShortcutExpr": str(bool(plan.shapes)).lower(),
    }


#: What the Kafka sink's producer may hold in records not yet sent (Kafka's default is 32 MB). It
#: is heap: the 256 MB this was once, with 10,000 filters' topics each holding an open batch,
#: filled spark-submit's default 1 GB heap in the first batch (``OutOfMemoryError`` in the
#: producer's ``BufferPool``).
PRODUCER_MEMORY = 64 * 1024 * 1024


#: An open batch of one topic: large enough for a few ~100 KB alerts (the producer sends one
#: batch per partition per request, so an alert larger than its batch goes alone), small enough
#: that every topic of a job of ten thousand filters can hold one within a quarter of the
#: producer's memory, down to ``MIN_BATCH_BYTES``.
MAX_BATCH_BYTES, MIN_BATCH_BYTES = 1024 * 1024, 64 * 1024


def batch_bytes(topics: int) -> int:
    """The Kafka sink's ``batch.size`` for a job writing to ``topics`` topics (see above)."""
    share = PRODUCER_MEMORY // (4 * max(topics, 1))
    return max(MIN_BATCH_BYTES, min(MAX_BATCH_BYTES, share))


def sink_options(cfg: JobConfig, topics: int) -> dict[str, str]:
    """The Kafka sink's producer for ``topics`` topics, made for ~100 KB records: requests as
    large as the topics allow (the Java producer's 1 MB default fails a whole batch on one large
    alert), batches of a few alerts (``batch_bytes``), a linger short enough for Real-Time Mode,
    and a bounded memory (``PRODUCER_MEMORY``)."""
    opts = kafka_options(cfg.bootstrap, cfg.kafka_conf)
    opts.setdefault("kafka.max.request.size", str(MAX_MESSAGE_BYTES))
    opts.setdefault("kafka.batch.size", str(batch_bytes(topics)))
    opts.setdefault("kafka.linger.ms", "0" if cfg.realtime else "5")
    opts.setdefault("kafka.buffer.memory", str(PRODUCER_MEMORY))
    return opts
