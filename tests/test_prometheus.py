"""The job's Prometheus endpoint, scraped by a real Prometheus server (Debian's ``prometheus``;
.ci/run installs it) that loads the shipped alerting rules, and PromQL's answers checked against
the job's own counts topic and the input's offsets: matches per filter equal, the consumer lag
rising while a producer outruns a job held back, and falling to 0 once the input is drained.
The shipped rules pass ``promtool check rules``."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import threading
from pathlib import Path
from urllib.parse import urlencode
from urllib.request import urlopen

import pytest
from job_helpers import (
    JOB_FILTERS,
    NAMES,
    counted_batches,
    expected_matches,
    simulated_visit,
    wait_for,
)

from alertsieve.filtering.model import AlertFilter
from alertsieve.kafka.topics import create_topic
from alertsieve.stream.config import JobConfig
from alertsieve.stream.job import FilterStream

RULES = Path(__file__).parent.parent / "conf" / "prometheus" / "alertsieve-rules.yml"


def _tool(name: str) -> str:
    found = shutil.which(name)
    assert found, (
        f"{name} not found: install Debian's prometheus package (apt-get install prometheus)"
    )
    return found


@pytest.mark.tools  # Debian's promtool
def test_promtool_passes_the_shipped_rules():
    checked = subprocess.run(
        [_tool("promtool"), "check", "rules", str(RULES)], capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 9 rules found" in checked.stdout


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Prometheus:
    """A Prometheus server on 127.0.0.1 scraping ``target`` each second, with the shipped rules."""

    def __init__(self, folder: Path, target: str):
        self.url = f"http://127.0.0.1:{_free_port()}"
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(RULES)],
            "scrape_configs": [
                {"job_name": "alertsieve", "static_configs": [{"targets": [target]}]}
            ],
        }
        (folder / "prometheus.yml").write_text(json.dumps(config))  # YAML holds JSON
        self.process = subprocess.Popen(
            [
                _tool("prometheus"),
                f"--config.file={folder / 'prometheus.yml'}",
                f"--storage.tsdb.path={folder / 'tsdb'}",
                f"--web.listen-address={self.url.removeprefix('http://')}",
            ],
            stdout=(folder / "prometheus.log").open("wb"),
            stderr=subprocess.STDOUT,
        )
        wait_for(self._ready, "Prometheus ready", 60, self.process, folder / "prometheus.log")

    def _ready(self) -> bool:
        try:
            return urlopen(f"{self.url}/-/ready", timeout=2).status == 200
        except OSError:
            return False

    def api(self, path: str, **params) -> dict:
        with urlopen(f"{self.url}/api/v1/{path}?{urlencode(params)}", timeout=10) as r:
            body = json.load(r)
        assert body["status"] == "success", body
        return body["data"]

    def value(self, query: str) -> float | None:
        """The query's one value now (None when it has none yet)."""
        result = self.api("query", query=query)["result"]
        return float(result[0]["value"][1]) if result else None

    def by(self, query: str, label: str) -> dict[str, float]:
        return {
            r["metric"][label]: float(r["value"][1])
            for r in self.api("query", query=query)["result"]
        }

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(30)


@pytest.mark.integration
def test_a_real_prometheus_scrapes_the_job(kafka, spark, tmp_path, topic_name):
    bootstrap, schema_dir = kafka.bootstrap_servers, str(tmp_path / "schemas")
    create_topic(bootstrap, topic_name, 2)
    prefix = f"{topic_name}-"
    cfg = JobConfig(
        bootstrap=bootstrap,
        topic=topic_name,
        survey="rubin",
        trigger="2",
        max_offsets_per_trigger=40,  # held back: 40 alerts each 2 s at most
        sinks=["kafka"],
        output_prefix=prefix,
        output_partitions=1,
        discover_filters=False,
        code_filters=[AlertFilter(name=n, sql=JOB_FILTERS[n][0]) for n in NAMES],
        checkpoint=str(tmp_path / "ckpt"),
        metrics_path=None,
        schema_dir=schema_dir,
        prometheus_port=0,
        prometheus_host="127.0.0.1",
    )
    stream = FilterStream(spark, cfg)
    job = threading.Thread(target=stream.run)
    job.start()
    server = None
    try:
        wait_for(lambda: stream.metrics_url is not None, "the metrics endpoint", 60)
        target = stream.metrics_url.removeprefix("http://").removesuffix("/metrics")
        server = Prometheus(tmp_path, target)
        produced, lags = 0, []
        for seed in range(6):  # a visit of 60 a second or so: three times what the job reads
            assert simulated_visit(bootstrap, topic_name, seed, schema_dir, 60, partitions=2).ok
            produced += 60
            wait_for(
                lambda n=produced: server.value("sum(alertsieve_input_end_offset)") == n,
                "Prometheus scraped the new end offsets",
                30,
            )
            lags.append(server.value("sum(alertsieve_consumer_lag)"))
        # the producer outruns the job: lag rises (the first visit may be read before a scrape)
        assert lags[0] < lags[-1], lags
        wait_for(lambda: server.value("sum(alertsieve_consumer_lag)") == 0, "lag back to 0", 180)
        counts = f"{prefix}counts"
        wait_for(
            lambda: sum(b["alerts_read"] for b in counted_batches(bootstrap, counts)) == produced,
            "every alert counted",
            60,
        )
        counted = {n: 0 for n in NAMES}
        for batch in counted_batches(bootstrap, counts):
            for name in NAMES:
                counted[name] += batch["filters"][name]["published"]
        query = "sum by (filter) (alertsieve_filter_published_total)"
        wait_for(lambda: server.by(query, "filter") == counted, "PromQL equals the counts", 30)
        assert server.value("sum(alertsieve_alerts_read_total)") == produced
        _, expected = expected_matches(bootstrap, topic_name, schema_dir)
        assert counted == {n: len(expected[n]) for n in NAMES} and all(counted.values())
        groups = server.api("rules")["groups"]
        assert [len(g["rules"]) for g in groups] == [9]
        assert all(r["health"] == "ok" for g in groups for r in g["rules"])
    finally:
        stream.stop()
        job.join(60)
        if server is not None:
            server.stop()
