"""A query's checkpoint made fit to start from, before the query starts.

Spark writes each offsets and commits entry to a hidden temporary file beside it
(``.<batch>.<uuid>.tmp``, with Hadoop's ``..<batch>.<uuid>.tmp.crc``) and renames it into place.
A job killed (``kill -9``, a lost machine) in the middle of that write leaves the temporary file
behind. From batch 1 on Spark ignores it, but a kill during the *first* batch leaves a checkpoint
whose only content is that leftover, and Spark 4.1 then refuses to start at all
(``STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY``: the checkpoint "should be empty on batch 0").
Nothing in such a file was ever committed, so removing it loses nothing: the batch it was
writing is run again from the same offsets.
"""

from __future__ import annotations

import logging
import re

log = logging.getLogger(__name__)

LOGS = ("offsets", "commits")  # the write-ahead logs Spark checks on batch 0
INTERRUPTED_WRITE = re.compile(r"\.\.?\d+\.[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}\.tmp(\.crc)?")


def is_interrupted_write(name: str) -> bool:
    """Whether a file in a checkpoint's log is a write Spark never finished (never committed)."""
    return INTERRUPTED_WRITE.fullmatch(name) is not None


def clear_interrupted_writes(spark, checkpoint: str) -> list[str]:
    """Remove the unfinished writes from ``checkpoint``'s logs (any Hadoop file system) and return
    their paths. Call it only while no query runs on ``checkpoint``: a running query's own write
    in progress looks the same."""
    hadoop = spark._jvm.org.apache.hadoop.fs
    root = hadoop.Path(checkpoint)
    fs = root.getFileSystem(spark._jsc.hadoopConfiguration())
    removed = []
    for name in LOGS:
        folder = hadoop.Path(root, name)
        if not fs.exists(folder):
            continue
        for status in fs.listStatus(folder):
            path = status.getPath()
            if is_interrupted_write(path.getName()) and fs.delete(path, False):
                removed.append(path.toString())
    if removed:
        log.warning(
            "removed %d unfinished checkpoint write(s) a stopped job left (never committed, so"
            " their batch runs again): %s",
            len(removed),
            ", ".join(removed),
        )
    return removed
