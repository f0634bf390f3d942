"""When a job had filtered a visit: read from its metrics lines (Spark's end offsets per batch),
the same way for the one-off commands, the experiment matrix and the soak."""

from __future__ import annotations


def batch_reaching(lines: list[dict], topic: str, end: dict) -> dict | None:
    """The first batch that had read ``topic`` up to ``end`` ({partition: offset})."""
    for line in sorted(lines, key=lambda x: x["batch_id"]):
        reached = line.get("spark", {}).get("endOffset", {}).get(topic, {})
        if reached and all(reached.get(str(p), -1) >= o for p, o in end.items()):
            return line
    return None


def visit_done_times(lines: list[dict], topic: str, ends: list[dict]) -> list[float | None]:
    """Per visit: the output time of the first batch that had read past all its alerts."""
    done = [batch_reaching(lines, topic, end) for end in ends]
    return [line["output_time"] if line else None for line in done]
