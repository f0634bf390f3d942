"""The visit producer: DMTN-028's model of alert production, made fast and accountable.

N visits of M alerts, one visit every ``interval`` seconds, split over K producer processes (the
real system runs one per CCD; here each process takes the detectors with ``detector % K == k``).
Every delivery report is counted, so a run ends with exactly how many alerts the brokers
acknowledged, never a guess. Per visit and producer we record alerts, bytes, the time spent
serializing and the time from the first send to the last acknowledgement.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import queue
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field, replace
from functools import cache
from typing import Any

from alertsieve.alerts.schemas import frame, load_rubin_schema, open_store
from alertsieve.errors import AlertsieveError
from alertsieve.kafka.client_security import librdkafka_conf
from alertsieve.kafka.topics import create_topic
from alertsieve.sim import VISIT_CADENCE_S

#: librdkafka settings tuned for ~100 KB messages, durable and idempotent.
PRODUCER_DEFAULTS: dict[str, Any] = {
    "acks": "all",
    "enable.idempotence": True,
    "linger.ms": 20,
    "batch.size": 4 * 1024 * 1024,
    "batch.num.messages": 10_000,
    "compression.type": "none",  # FITS noise does not compress; lz4 costs CPU for ~5%
    "message.max.bytes": 16 * 1024 * 1024,
    "queue.buffering.max.kbytes": 1024 * 1024,
    "queue.buffering.max.messages": 200_000,
    "message.timeout.ms": 120_000,
}


class ProduceError(AlertsieveError, RuntimeError):
    """The producer could not start (bad input, unreachable broker)."""


@dataclass
class ProduceConfig:
    bootstrap: str
    topic: str
    visits: int = 1
    alerts_per_visit: int = 10_000
    interval_s: float = VISIT_CADENCE_S
    producers: int = 1
    partitions: int = 4
    stamp_size: int = 84  # 0: no cutouts
    max_history: int = 10
    deep_share: float = 0.0  # alerts of deep-drilling fields: their share of a visit
    deep_history: int = 400  # and the earlier detections each carries
    schema_version: str | None = None
    seed: int = 0
    replay: list[str] = field(default_factory=list)
    metrics_path: str | None = None
    kafka_conf: dict[str, Any] = field(default_factory=dict)
    schema_registry: str | None = None
    schema_dir: str | None = None
    progress: bool = True
    serialize_only: bool = False  # benchmarks: encode everything, send nothing
    #: keep each producer's acknowledged keys here (one file each); default: a temporary folder
    #: read after a crash, then deleted
    ack_journal_dir: str | None = None


class SerializeOnlySink:
    """Stands in for the Kafka producer when a benchmark measures serialization alone:
    every message is 'delivered' at once, so the same code path times only the encoding."""

    def produce(self, topic: str, value: bytes, key: str, on_delivery) -> None:
        on_delivery(None, None)

    def poll(self, timeout: float = 0) -> int:
        return 0

    def flush(self, timeout: float = 0) -> int:
        return 0


@dataclass
class VisitReport:
    """One producer's share of one visit."""

    visit: int
    producer: int
    alerts: int
    bytes: int
    serialize_s: float  # Avro encoding + framing, summed over alerts
    send_ack_s: float  # first produce() to last delivery report (overlaps serialization)
    wall_s: float  # first serialization to last delivery report
    acked: int
    failed: int
    started_at: float  # unix time of the first serialization
    errors: list[str] = field(default_factory=list)
    scheduled_at: float | None = None  # unix time of the visit's slot in the cadence
    kind: str = "producer_visit"


@dataclass
class ProduceSummary:
    reports: list[VisitReport]
    expected: int
    wall_s: float
    crashed: list[int] = field(default_factory=list)  # producers that died before finishing
    #: {producer: alerts acknowledged in the visit it died in}, from its acknowledgement journal
    acked_before_crash: dict[int, int] = field(default_factory=dict)

    @property
    def alerts(self) -> int:
        return sum(r.alerts for r in self.reports)

    @property
    def acked(self) -> int:
        return sum(r.acked for r in self.reports) + sum(self.acked_before_crash.values())

    @property
    def failed(self) -> int:
        return sum(r.failed for r in self.reports)

    @property
    def bytes(self) -> int:
        return sum(r.bytes for r in self.reports)

    @property
    def ok(self) -> bool:
        return not self.crashed and self.failed == 0 and self.acked == self.expected

    def visit_seconds(self) -> list[float]:
        """Per visit: first serialization of any producer to last acknowledgement of any."""
        by_visit: dict[int, list[VisitReport]] = {}
        for r in self.reports:
            by_visit.setdefault(r.visit, []).append(r)
        return [
            max(r.started_at + r.wall_s for r in rs) - min(r.started_at for r in rs)
            for _, rs in sorted(by_visit.items())
        ]

    def as_dict(self) -> dict[str, Any]:
        busy = sum(self.visit_seconds()) or float("nan")
        return {
            "kind": "producer_summary",
            "expected": self.expected,
            "alerts": self.alerts,
            "acked": self.acked,
            "failed": self.failed,
            "crashed_producers": self.crashed,
            "acked_before_crash": self.acked_before_crash,
            "bytes": self.bytes,
            "wall_s": round(self.wall_s, 3),
            "visit_s": [round(s, 3) for s in self.visit_seconds()],
            "alerts_per_s_in_visits": round(self.acked / busy, 1),
            "mb_per_s_in_visits": round(self.bytes / 1e6 / busy, 1),
        }

    def line(self) -> str:
        d = self.as_dict()
        verdict = "all acknowledged" if self.ok else "INCOMPLETE"
        if self.crashed:
            verdict += (
                f"; producer(s) {self.crashed} died, after {self.acked_before_crash} acknowledged"
                " in the visit they were sending"
            )
        visits = ", ".join(f"{s:.2f}" for s in d["visit_s"][:5]) + (
            " ..." if len(d["visit_s"]) > 5 else ""
        )
        return (
            f"produced {d['acked']}/{d['expected']} alerts ({verdict}; {d['failed']} failed),"
            f" {d['bytes'] / 1e6:.0f} MB; per visit [{visits}] s;"
            f" {d['alerts_per_s_in_visits']:.0f} alerts/s, {d['mb_per_s_in_visits']:.0f} MB/s while sending"
        )


# --- sending one visit ---------------------------------------------------------------------


def send_visit(
    producer,
    topic: str,
    items: Iterable[Any],
    serialize: Callable[[Any], tuple[str, bytes]],
    visit: int,
    producer_index: int,
    flush_timeout: float,
    journal: int | None = None,
) -> VisitReport:
    """Serialize and send ``items``; wait for every delivery report. Each acknowledged key is
    also appended to the ``journal`` file descriptor as it arrives: a write the kernel keeps
    even if this process is killed the next instant."""
    counts = {"acked": 0, "failed": 0}
    errors: list[str] = []

    def on_delivery(err, msg) -> None:
        if err is None:
            counts["acked"] += 1
            if journal is not None and msg is not None:
                os.write(journal, msg.key() + b"\n")
        else:
            counts["failed"] += 1
            if len(errors) < 5:
                errors.append(str(err))

    n = nbytes = 0
    serialize_s = 0.0
    started_at = time.time()
    t0 = time.perf_counter()
    first_send = None
    for item in items:
        ts = time.perf_counter()
        key, value = serialize(item)
        serialize_s += time.perf_counter() - ts
        if first_send is None:
            first_send = time.perf_counter()
        while True:
            try:
                producer.produce(topic, value=value, key=key, on_delivery=on_delivery)
                break
            except BufferError:  # local queue full: let librdkafka drain it
                producer.poll(0.05)
        producer.poll(0)
        n += 1
        nbytes += len(value)
    unsent = producer.flush(flush_timeout)
    end = time.perf_counter()
    if unsent:
        errors.append(f"{unsent} messages still unacknowledged after {flush_timeout:.0f}s")
    return VisitReport(
        visit=visit,
        producer=producer_index,
        alerts=n,
        bytes=nbytes,
        serialize_s=serialize_s,
        send_ack_s=end - (first_send or end),
        wall_s=end - t0,
        acked=counts["acked"],
        failed=counts["failed"],
        started_at=started_at,
        errors=errors,
    )


# --- what each producer process sends ------------------------------------------------------


def _simulated_visits(
    cfg: ProduceConfig, k: int, schema_id: int
) -> Iterator[tuple[list, Callable]]:
    from alertsieve.alerts.replay import alert_key
    from alertsieve.sim.simulator import AlertSimulator, SimulationConfig

    sim = AlertSimulator(
        SimulationConfig(
            schema_version=cfg.schema_version,
            alerts_per_visit=cfg.alerts_per_visit,
            max_history=cfg.max_history,
            max_forced=cfg.max_history,
            deep_share=cfg.deep_share,
            deep_history=cfg.deep_history,
            stamp_size=cfg.stamp_size,
            seed=cfg.seed,
            cadence_s=cfg.interval_s or VISIT_CADENCE_S,
        )
    )
    schema = sim.schema

    def serialize(record: dict) -> tuple[str, bytes]:
        return alert_key(record), frame(schema_id, schema.encode(record))

    for v in range(cfg.visits):
        yield list(sim.visit_alerts(v, part=k, parts=cfg.producers)), serialize


def _replayed_visits(
    cfg: ProduceConfig, k: int, replay: ReplayInputs
) -> Iterator[tuple[list, Callable]]:
    """This producer's share of the files, as (key, message) pairs: official Avro byte for byte,
    exports made official and encoded with the survey's schema of their version."""
    from alertsieve.alerts.export_files import official_messages, records
    from alertsieve.alerts.replay import read_raw_records, wire_message

    units = [(source, path) for source in replay.inputs for path in source.files]
    share = max(1, cfg.alerts_per_visit // cfg.producers)
    rubin_id_of = _rubin_id_of(cfg)
    batch: list = []
    for source, path in units[k :: cfg.producers]:
        if source.official:
            pairs = (
                (raw.key, wire_message(raw, replay.official_ids[str(path)]))
                for raw in read_raw_records(path)
            )
        else:
            one = replace(source, files=[path], root=None, _plans={})
            pairs = (
                (key, message)
                for key, message, _ in official_messages(one, records(one), rubin_id_of)
            )
        for pair in pairs:
            batch.append(pair)
            if len(batch) == share:
                yield batch, _as_is
                batch = []
    if batch:
        yield batch, _as_is


def _as_is(pair: tuple[str, bytes]) -> tuple[str, bytes]:
    return pair


def _rubin_id_of(cfg: ProduceConfig) -> Callable[[str], int | None]:
    """Rubin version -> the id of its official schema where the job looks ids up: the registry's
    (registered on first use); None (Rubin's own id) without a registry."""
    if not cfg.schema_registry:
        return lambda version: None
    store, subject = open_store(cfg.schema_registry, cfg.schema_dir), f"{cfg.topic}-value"

    @cache
    def id_of(version: str) -> int:
        return store.register(load_rubin_schema(version).definition, subject).schema_id

    return id_of


def _producer_main(
    k: int, cfg: ProduceConfig, schema_ids: Any, reports: mp.Queue, barrier: Any, journal_dir: str
) -> None:
    """One producer process: prepare each visit ahead of its slot, then send it on time."""
    from confluent_kafka import Producer

    producer = (
        SerializeOnlySink()
        if cfg.serialize_only
        else Producer(
            {
                "bootstrap.servers": cfg.bootstrap,
                "client.id": f"alertsieve-producer-{k}",
                **PRODUCER_DEFAULTS,
                **librdkafka_conf(cfg.kafka_conf),
            }
        )
    )
    flush_timeout = float({**PRODUCER_DEFAULTS, **cfg.kafka_conf}["message.timeout.ms"]) / 1000 + 10
    visits = (
        _replayed_visits(cfg, k, schema_ids)
        if cfg.replay
        else _simulated_visits(cfg, k, schema_ids)
    )
    journal = os.open(journal_path(journal_dir, k), os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    first = next(visits, None)
    barrier.wait()  # every producer starts visit 0 at the same moment
    t0 = time.time()
    v = 0
    item = first
    while item is not None:
        records, serialize = item
        slot = t0 + v * cfg.interval_s
        delay = slot - time.time()
        if delay > 0:
            time.sleep(delay)
        report = send_visit(producer, cfg.topic, records, serialize, v, k, flush_timeout, journal)
        report.scheduled_at = slot
        reports.put(asdict(report))
        v += 1
        item = next(visits, None)  # prepared while the cadence clock runs
    os.close(journal)
    reports.put({"kind": "producer_done", "producer": k})


# --- the parent: checks, topic, schema ids, workers, metrics --------------------------------


def _check_broker(bootstrap: str, extra: dict[str, Any]) -> None:
    from confluent_kafka.admin import AdminClient

    try:
        AdminClient({"bootstrap.servers": bootstrap, **_security(extra)}).list_topics(timeout=10)
    except Exception as e:  # noqa: BLE001 - librdkafka's KafkaException wording is the useful part
        raise ProduceError(
            f"cannot reach Kafka at {bootstrap} ({e}); nothing was sent: 0 alerts acknowledged"
        ) from None


def _schema_ids(cfg: ProduceConfig) -> Any:
    """Simulated: the Rubin id (or the registry's). Replay: each file's writer schema, registered
    (an official Rubin schema keeps its Rubin id); None for ZTF files, sent as ZTF sends them."""
    store = open_store(cfg.schema_registry, cfg.schema_dir)
    subject = f"{cfg.topic}-value"
    if not cfg.replay:
        schema = load_rubin_schema(cfg.schema_version)
        if cfg.schema_registry:
            return store.register(schema.definition, subject).schema_id
        return schema.schema_id
    from alertsieve.alerts.export_files import find_inputs
    from alertsieve.alerts.replay import writer_schema

    inputs = find_inputs(cfg.replay)
    for source in inputs:
        if not source.official:
            source.check()
    ids = {
        str(path): None
        if source.official == "ztf"
        else store.register(writer_schema(path), subject).schema_id
        for source in inputs
        if source.official
        for path in source.files
    }
    return ReplayInputs([replace(s, _plans={}) for s in inputs], ids)


@dataclass
class ReplayInputs:
    """What a replay sends: the inputs found, and each official Rubin file's schema id."""

    inputs: list
    official_ids: dict[str, int | None]  # file -> id (None: ZTF, sent as a container)


def produce(cfg: ProduceConfig) -> ProduceSummary:
    """Run the producers to completion and account for every alert."""
    if cfg.producers < 1 or cfg.visits < 1 or cfg.alerts_per_visit < 1:
        raise ProduceError("--producers, --visits and --alerts-per-visit must be at least 1")
    schema_ids = _schema_ids(cfg)  # fails early on a bad version or replay file
    if not cfg.serialize_only:
        _check_broker(cfg.bootstrap, cfg.kafka_conf)
        create_topic(
            cfg.bootstrap,
            cfg.topic,
            cfg.partitions,
            config={"message.timestamp.type": "LogAppendTime"},
            extra=_security(cfg.kafka_conf),
        )  # latency is measured from the broker's append time
    if cfg.replay:
        from alertsieve.alerts.export_files import count_rows

        expected = sum(count_rows(source) for source in schema_ids.inputs)
    else:
        expected = cfg.visits * cfg.alerts_per_visit

    ctx = mp.get_context("spawn")  # librdkafka threads and fork do not mix
    reports: mp.Queue = ctx.Queue()
    barrier = ctx.Barrier(cfg.producers)
    journal_dir = cfg.ack_journal_dir or tempfile.mkdtemp(prefix="alertsieve-acks-")
    os.makedirs(journal_dir, exist_ok=True)
    workers = [
        ctx.Process(
            target=_producer_main,
            args=(k, cfg, schema_ids, reports, barrier, journal_dir),
            daemon=True,
        )
        for k in range(cfg.producers)
    ]
    start = time.perf_counter()
    for w in workers:
        w.start()
    collected: list[VisitReport] = []
    done: set[int] = set()
    metrics = open(cfg.metrics_path, "a") if cfg.metrics_path else None  # noqa: SIM115
    bar = _progress(expected, cfg.progress)
    try:
        while len(done) < cfg.producers:
            try:
                msg = reports.get(timeout=0.5)
            except queue.Empty:
                if all(not w.is_alive() for w in workers):
                    break
                continue
            if msg["kind"] == "producer_done":
                done.add(msg["producer"])
                continue
            report = VisitReport(**msg)
            collected.append(report)
            bar.update(report.acked)
            if metrics:
                metrics.write(json.dumps(msg) + "\n")
                metrics.flush()
        for w in workers:
            w.join(timeout=10)
    finally:
        bar.close()
        for w in workers:
            if w.is_alive():
                w.terminate()
    crashed = sorted(set(range(cfg.producers)) - done)
    summary = ProduceSummary(
        collected,
        expected,
        time.perf_counter() - start,
        crashed=crashed,
        acked_before_crash=_acked_before_crash(journal_dir, crashed, collected),
    )
    if not cfg.ack_journal_dir:
        shutil.rmtree(journal_dir, ignore_errors=True)
    if metrics:
        metrics.write(json.dumps(summary.as_dict()) + "\n")
        metrics.close()
    return summary


def journal_path(journal_dir: str, producer: int) -> str:
    return os.path.join(journal_dir, f"producer-{producer}.acked")


def _acked_before_crash(journal_dir: str, crashed: list[int], reports: list[VisitReport]) -> dict:
    """For each producer that died: acknowledgements in its journal beyond those of the visits
    it reported, i.e. the part of its last visit Kafka confirmed before it died."""
    out = {}
    for k in crashed:
        try:
            with open(journal_path(journal_dir, k), "rb") as f:
                journaled = sum(1 for _ in f)
        except FileNotFoundError:
            journaled = 0
        out[k] = journaled - sum(r.acked for r in reports if r.producer == k)
    return out


def _security(conf: dict[str, Any]) -> dict[str, Any]:
    """The settings an admin client needs too: how to reach and authenticate to the brokers."""
    return {
        k: v
        for k, v in librdkafka_conf(conf).items()
        if k.startswith(("security.", "sasl.", "ssl."))
    }


def _progress(total: int, enabled: bool):
    from tqdm import tqdm

    return tqdm(total=total, unit="alert", desc="acknowledged", disable=not enabled, smoothing=0.1)


def stop_resource_tracker() -> None:
    """multiprocessing's resource tracker, started for the producers' barrier, outlives
    :func:`produce` until Python exits; a command that must leave nothing running behind it
    (``make demo``) stops it explicitly. A later :func:`produce` starts a new one."""
    from multiprocessing import resource_tracker

    stop = getattr(resource_tracker._resource_tracker, "_stop", None)  # 3.11+: private, present
    if stop is not None:
        stop()
