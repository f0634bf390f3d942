"""Which offsets a batch matched apart from the alerts' bytes reads again (``bytes_apart.ranges``):
every wanted offset inside a range, no range past the last wanted, few ranges a partition. The
join itself is checked end to end where a job publishes whole alerts matched in Python
(tests/test_many_filters.py, tests/test_stream_job.py, tests/test_models.py)."""

from __future__ import annotations

import random

from alertsieve.stream.bytes_apart import GAP_OFFSETS, MAX_RANGES, ranges


def covered(spans: list[tuple[int, int]]) -> set[int]:
    return {o for a, b in spans for o in range(a, b)}


def test_one_alert_is_one_offset_read():
    assert ranges([41]) == [(41, 42)]


def test_close_alerts_are_one_range_and_far_ones_their_own():
    near = [10, 11, 11 + GAP_OFFSETS]  # a gap of GAP_OFFSETS: still read through
    far = 12 + 2 * GAP_OFFSETS  # one more: a range of its own
    assert ranges([*near, far, 10]) == [(10, 12 + GAP_OFFSETS), (far, far + 1)]


def test_every_wanted_offset_is_read_in_at_most_max_ranges():
    rng = random.Random(7)
    for density in (0.001, 0.01, 0.3):
        wanted = [o for o in range(20_000) if rng.random() < density]
        spans = ranges(wanted)
        assert set(wanted) <= covered(spans)
        assert len(spans) <= MAX_RANGES
        assert spans == sorted(spans) and spans[0][0] == min(wanted)
        assert spans[-1][1] == max(wanted) + 1
        # each range starts and ends at a wanted offset: nothing read before or after them
        assert all(a in wanted and b - 1 in wanted for a, b in spans)
