"""The job's metrics for Prometheus (``prometheus_port``): what an operator watches a job by for
months, and alerts on (``conf/prometheus/alertsieve-rules.yml``; docs/operating.md).

Counters grow with each batch's report (``observe``): alerts read, quarantined by kind of reason,
and per filter and version its matches, published, withheld and erroring batches; what Python
filters and models cost; alerts lost at the source. Gauges hold the last batch (input rows,
duration, rate, publication latency quantiles, when it ended). Read when Prometheus scrapes,
from the input and the job as they are then: the consumer lag of each input partition (its end
offset now against the offset the job has processed to), the age of the newest alert processed,
and each quota's use against its limit.

In Real-Time Mode a batch is an epoch (its checkpoint interval): counters and the processed
offsets move when an epoch ends, so the lag reads up to one interval's alerts high."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server
from prometheus_client.core import GaugeMetricFamily

from alertsieve.publish.counts import offsets_of
from alertsieve.stream.metrics import BatchStats

log = logging.getLogger(__name__)

#: Batch durations, seconds: Real-Time Mode's epochs run minutes, micro-batches a fraction of one.
DURATION_BUCKETS = (0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600)

#: (topic, partition) -> (earliest offset held, end offset) of every input partition
Watermarks = Callable[[], Mapping[tuple[str, int], tuple[int, int]]]
#: () -> (limits {filter: {kind: n}}, used {filter: {kind: n}}) of the daily quotas
Quotas = Callable[[], tuple[Mapping[str, Mapping[str, int]], Mapping[str, Mapping[str, int]]]]


class JobMetrics:
    """One job's metrics, in a registry of their own (served by ``serve``)."""

    def __init__(self, watermarks: Watermarks, quotas: Quotas, clock=time.time):
        self.registry = CollectorRegistry()
        self.processed: dict[tuple[str, int], int] = {}
        self.newest: float | None = None
        reg = {"registry": self.registry}
        filt = ("filter", "version")
        self.batches = Counter("alertsieve_batches", "Batches (epochs) that read alerts", **reg)
        self.read = Counter("alertsieve_alerts_read", "Alerts read from the input", **reg)
        self.quarantined = Counter(
            "alertsieve_alerts_quarantined",
            "Alerts quarantined, by kind of reason",
            ["reason"],
            **reg,
        )
        self.matches = Counter("alertsieve_filter_matches", "Matches of each filter", filt, **reg)
        self.published = Counter(
            "alertsieve_filter_published", "Matches published (not withheld)", filt, **reg
        )
        self.withheld = Counter(
            "alertsieve_filter_withheld",
            "Matches withheld: the filter's daily quota reached",
            filt,
            **reg,
        )
        self.errors = Counter(
            "alertsieve_filter_errors",
            "Batches in which the filter failed on some alerts",
            filt,
            **reg,
        )
        self.failed_alerts = Counter(
            "alertsieve_filter_failed_alerts",
            "Alerts a SQL filter raised an error on (no match there)",
            filt,
            **reg,
        )
        self.python = Counter(
            "alertsieve_python_filter_seconds", "Seconds Python filters ran", ["filter"], **reg
        )
        self.model_seconds = Counter(
            "alertsieve_model_seconds", "Seconds models ran", ["model"], **reg
        )
        self.model_alerts = Counter(
            "alertsieve_model_invocations", "Alerts models scored", ["model"], **reg
        )
        self.model_errors = Counter(
            "alertsieve_model_errors", "Batches in which a model failed", ["model"], **reg
        )
        self.lost = Counter(
            "alertsieve_lost_at_source",
            "Alerts the input no longer held when the job came to read them",
            ["topic", "partition"],
            **reg,
        )
        self.learned = Counter(
            "alertsieve_writer_schemas_learned", "Writer schemas met and learned mid-stream", **reg
        )
        self.duration = Histogram(
            "alertsieve_batch_duration_seconds", "Batch durations", buckets=DURATION_BUCKETS, **reg
        )
        self.rows = Gauge("alertsieve_batch_input_rows", "Alerts the last batch read", **reg)
        self.rate = Gauge("alertsieve_batch_rows_per_second", "The last batch's rate", **reg)
        self.latency = Gauge(
            "alertsieve_publication_latency_seconds",
            "The last batch's latency, Kafka append to publication, by quantile",
            ["quantile"],
            **reg,
        )
        self.ended = Gauge(
            "alertsieve_last_batch_timestamp_seconds", "When the last batch ended", **reg
        )
        self.filters = Gauge("alertsieve_filters_running", "Filters the job runs", **reg)
        self.registry.register(_AsScraped(self, watermarks, quotas, clock))
        self._server = None

    def observe(self, stats: BatchStats, progress: dict, versions: Mapping[str, str]) -> None:
        """One batch's report (``metrics.MetricsLog``'s ``on_batch``)."""
        self.batches.inc()
        self.read.inc(stats.input_rows)
        for kind, n in stats.quarantined_by.items():
            self.quarantined.labels(kind).inc(n)
        for name, n in stats.matches.items():
            labels = (name, versions.get(name, ""))
            held = stats.withheld.get(name, 0)
            self.matches.labels(*labels).inc(n + held)
            self.published.labels(*labels).inc(n)
            if held:
                self.withheld.labels(*labels).inc(held)
        for name in stats.filter_errors:
            self.errors.labels(name, versions.get(name, "")).inc()
        for name, n in stats.filter_error_alerts.items():
            self.failed_alerts.labels(name, versions.get(name, "")).inc(n)
        for name, seconds in stats.filter_seconds.items():
            self.python.labels(name).inc(seconds)
        for model, seconds in stats.model_seconds.items():
            self.model_seconds.labels(model).inc(seconds)
            self.model_alerts.labels(model).inc(stats.model_invocations.get(model, 0))
        for model in stats.model_errors:
            self.model_errors.labels(model).inc()
        for topic, parts in stats.lost_at_source.items():
            for partition, (start, end) in parts.items():
                self.lost.labels(topic, partition).inc(end - start)
        self.duration.observe(stats.batch_seconds)
        self.rows.set(stats.input_rows)
        self.rate.set(stats.rows_per_s)
        for quantile, seconds in stats.latency_s.items():
            if seconds is not None:
                self.latency.labels(quantile).set(seconds)
        self.ended.set(stats.output_time)
        self.filters.set(len(versions))
        for source in progress.get("sources", []):
            for topic, parts in offsets_of(source.get("endOffset")).items():
                for partition, offset in parts.items():
                    self.processed[(topic, int(partition))] = offset
        if stats.newest_alert_s is not None:
            self.newest = max(self.newest or 0.0, stats.newest_alert_s)

    def serve(self, host: str, port: int) -> str:
        """Serve ``/metrics`` on ``host:port`` (0: a free port); returns its URL."""
        self._server, _ = start_http_server(port, addr=host, registry=self.registry)
        bound_host, bound_port = self._server.server_address[:2]
        return f"http://{bound_host}:{bound_port}/metrics"

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


class _AsScraped:
    """The metrics read when Prometheus scrapes: lag, the newest alert's age, quota use."""

    def __init__(self, job: JobMetrics, watermarks: Watermarks, quotas: Quotas, clock):
        self.job, self.watermarks, self.quotas, self.clock = job, watermarks, quotas, clock
        self._failing = False

    def collect(self):
        lag = GaugeMetricFamily(
            "alertsieve_consumer_lag",
            "Alerts in the input the job has not processed: end offset minus processed offset",
            labels=["topic", "partition"],
        )
        end = GaugeMetricFamily(
            "alertsieve_input_end_offset",
            "Each input partition's end offset",
            labels=["topic", "partition"],
        )
        try:
            marks = self.watermarks()
            self._failing = False
        except Exception as e:  # the input unreachable: no lag this scrape, the rest is served
            if not self._failing:
                log.warning("prometheus: the input's offsets could not be read: %s", e)
            self._failing, marks = True, {}
        for (topic, partition), (low, high) in sorted(marks.items()):
            done = self.job.processed.get((topic, partition), low)
            lag.add_metric([topic, str(partition)], max(high - max(done, low), 0))
            end.add_metric([topic, str(partition)], high)
        yield lag
        yield end
        if self.job.newest is not None:
            yield GaugeMetricFamily(
                "alertsieve_newest_alert_age_seconds",
                "Seconds since the newest alert the job processed was appended to the input",
                value=self.clock() - self.job.newest,
            )
        limits, used = self.quotas()
        limit = GaugeMetricFamily(
            "alertsieve_quota_limit", "Each daily quota", labels=["filter", "kind"]
        )
        use = GaugeMetricFamily(
            "alertsieve_quota_used", "Each daily quota's use today (UTC)", labels=["filter", "kind"]
        )
        for name, kinds in sorted(limits.items()):
            for kind, n in kinds.items():
                limit.add_metric([name, kind], n)
                use.add_metric([name, kind], used.get(name, {}).get(kind, 0))
        yield limit
        yield use
