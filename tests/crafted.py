"""Real alerts as they arrive, and copies edited so that each contributed filter has one to pass.

The real corpus is small (tests/data/real: a few LSSTCam v10.0 and Operations Rehearsal v7.4
alerts) and passes few of the contributed filters, rightly: no history in it is long enough for a
fast riser or a variable star. Edited copies of a real alert keep everything a filter does not cut
on as Rubin sent it (its schema version, the 7.x nulls, its layout), so a filter is checked against
real records while still having something to pass.
"""

from __future__ import annotations

import copy
import io
from pathlib import Path

import fastavro

from alertsieve.alerts.replay import read_raw_records
from alertsieve.alerts.schemas import frame, load_rubin_schema

REAL = Path(__file__).parent / "data" / "real"
#: The real Rubin files of tests/data/real and their schema versions; ``-b`` holds the two real
#: LSSTCam alerts with long histories (16 and 22 earlier detections).
REAL_FILES = {"rubin-lsstcam-v10_0.avro": "10.0", "rubin-opsrehearsal-v7_4.avro": "7.4", "rubin-lsstcam-v10_0-b.avro": "10.0"}
#: Edited copies get ids from here on, so that no two alerts of a stream share one.
EDITED_IDS = 9_000_000_000_000_000_000


def changed(record: dict, **changes) -> dict:
    """A copy of ``record`` with ``changes`` ("diaSource.snr": 5.0, ...) applied."""
    record = copy.deepcopy(record)
    for path, value in changes.items():
        *parents, leaf = path.split(".")
        node = record
        for p in parents:
            node = node[p]
        node[leaf] = value
    return record


def made_to_pass(record: dict) -> list[dict]:
    """Copies of a real alert edited so that each filter has one to pass, in that alert's own
    schema version: how the 7.x nulls (no isDipole, glint_trail, nDiaSources, ssSource) and the
    real layouts (a null history, forced photometry) meet each filter."""
    s = record["diaSource"]

    def earlier(days: float, flux: float, band: str | None = None) -> dict:
        return {**copy.deepcopy(s), "midpointMjdTai": s["midpointMjdTai"] - days, "band": band or s["band"],
                "psfFlux": flux, "psfFluxErr": 100.0}  # fmt: skip

    clean = {f"diaSource.{flag}": False for flag in ("shape_flag", "psfFlux_flag", "centroid_flag", "apFlux_flag",
             "forced_PsfFlux_flag", "forced_PsfFlux_flag_edge", "pixelFlags_interpolated", "pixelFlags_cr",
             "pixelFlags_bad", "pixelFlags_saturatedCenter")}  # fmt: skip
    base = changed(record, prvDiaSources=None, prvDiaForcedSources=[], **clean, **{
        "diaSource.reliability": 0.95, "diaSource.ssObjectId": 0, "diaSource.psfFlux": 3_000.0,
        "diaSource.psfFluxErr": 100.0})  # fmt: skip
    return [
        base,  # a new source
        changed(base, **{"diaSource.psfFlux": 50_000.0, "diaSource.psfFluxErr": 500.0}),  # bright
        changed(base, **{"diaSource.ssObjectId": 42}),  # a known asteroid, the 7.x way
        changed(base, prvDiaSources=[earlier(1.0, 2_000.0)]),  # rising, and extragalactic
        changed(base, prvDiaSources=[earlier(d, f) for d, f in ((40, 2e3), (30, -2e3), (20, 2e3), (10, -2e3))]),
    ]


def real_messages() -> list[tuple[str, bytes]]:
    """(alert id, message) of the real alerts of tests/data/real, then edited copies of the first
    of each file (``made_to_pass``, each with an id of its own), as Rubin frames them."""
    out, edited = [], []
    for name, version in REAL_FILES.items():
        schema = load_rubin_schema(version)
        raws = list(read_raw_records(REAL / name))
        out += [(r.key, frame(schema.schema_id, r.body)) for r in raws]
        first = fastavro.schemaless_reader(io.BytesIO(raws[0].body), schema.parsed, None)
        for alert in made_to_pass(first):
            alert_id = EDITED_IDS + len(edited)
            ids = {path: alert_id for path in ("diaSourceId", "diaSource.diaSourceId") if path.split(".")[0] in alert}
            alert = changed(alert, **ids)
            edited.append((str(alert_id), frame(schema.schema_id, schema.encode(alert))))
    return out + edited
