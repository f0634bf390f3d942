"""The archive's upkeep on a real Delta table: six small commits (as six archive batches leave
them) compacted into one file and the replaced files vacuumed, the rows unchanged (the
oracle: the rows written), and the schedule it keeps."""

from __future__ import annotations

import pytest

from alertsieve.stream.archive_upkeep import Upkeep, _data_files
from alertsieve.stream.config import JobConfig


@pytest.mark.slow  # Delta's first OPTIMIZE and VACUUM in a session: ~50 s here
def test_the_upkeep_compacts_and_vacuums_a_table_of_small_commits(spark, tmp_path):
    from delta.tables import DeltaTable

    path = str(tmp_path / "delta" / "matches")
    rows = [(i, f"alert-{i}") for i in range(60)]
    for start in range(0, 60, 10):
        batch = spark.createDataFrame(rows[start : start + 10], "offset long, alert_id string")
        batch.coalesce(1).write.format("delta").mode("append").save(path)
    assert DeltaTable.forPath(spark, path).detail().first()["numFiles"] == 6

    now = [0.0]
    cfg = JobConfig(
        bootstrap="127.0.0.1:9092",
        topic="alerts",
        delta_path=str(tmp_path / "delta"),
        delta_upkeep_seconds=60,
        delta_retention_hours=0,
    )
    upkeep = Upkeep(
        spark, cfg.delta_path, cfg.delta_upkeep_seconds, cfg.delta_retention_hours, lambda: now[0]
    )
    assert not upkeep.due()
    now[0] = 60.0
    assert upkeep.due()
    upkeep.run()
    assert not upkeep.due()  # the next one an interval later

    table = DeltaTable.forPath(spark, path)
    assert table.detail().first()["numFiles"] == 1
    assert _data_files(path) == 1  # the six replaced files are gone from the disk
    got = sorted(
        (r["offset"], r["alert_id"]) for r in spark.read.format("delta").load(path).collect()
    )
    assert got == rows
    properties = table.detail().first()["properties"]
    assert properties["delta.deletedFileRetentionDuration"] == "interval 0 seconds"
    assert properties["delta.logRetentionDuration"] == "interval 86400 seconds"  # a day at least
