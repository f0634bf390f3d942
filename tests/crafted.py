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
import json
import math
from pathlib import Path
from typing import Any

import fastavro
import numpy as np

from alertsieve.alerts.replay import read_raw_records
from alertsieve.alerts.schemas import frame, load_rubin_schema

REAL = Path(__file__).parent / "data" / "real"
#: The real Rubin files of tests/data/real and their schema versions; ``-b`` holds the two real
#: LSSTCam alerts with long histories (16 and 22 earlier detections).
REAL_FILES = {
    "rubin-lsstcam-v10_0.avro": "10.0",
    "rubin-opsrehearsal-v7_4.avro": "7.4",
    "rubin-lsstcam-v10_0-b.avro": "10.0",
}
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
        return {
            **copy.deepcopy(s),
            "midpointMjdTai": s["midpointMjdTai"] - days,
            "band": band or s["band"],
            "psfFlux": flux,
            "psfFluxErr": 100.0,
        }

    clean = {
        f"diaSource.{flag}": False
        for flag in (
            "shape_flag",
            "psfFlux_flag",
            "centroid_flag",
            "apFlux_flag",
            "forced_PsfFlux_flag",
            "forced_PsfFlux_flag_edge",
            "pixelFlags_interpolated",
            "pixelFlags_cr",
            "pixelFlags_bad",
            "pixelFlags_saturatedCenter",
        )
    }
    base = changed(
        record,
        prvDiaSources=None,
        prvDiaForcedSources=[],
        **clean,
        **{
            "diaSource.reliability": 0.95,
            "diaSource.ssObjectId": 0,
            "diaSource.psfFlux": 3_000.0,
            "diaSource.psfFluxErr": 100.0,
        },
    )
    return [
        base,  # a new source
        changed(base, **{"diaSource.psfFlux": 50_000.0, "diaSource.psfFluxErr": 500.0}),  # bright
        changed(base, **{"diaSource.ssObjectId": 42}),  # a known asteroid, the 7.x way
        changed(base, prvDiaSources=[earlier(1.0, 2_000.0)]),  # rising, and extragalactic
        changed(
            base,
            prvDiaSources=[
                earlier(d, f) for d, f in ((40, 2e3), (30, -2e3), (20, 2e3), (10, -2e3))
            ],
        ),
        changed(  # a variable star, for CATS: the detection on the same sine as its history
            base,
            prvDiaSources=_periodic_history(earlier),
            **{"diaSource.psfFlux": 10_000.0, "diaSource.psfFluxErr": 140.0},
        ),
    ]


def _periodic_history(earlier) -> list[dict]:
    """Twelve detections over 60 days alternating g and r, a 3.3-day sine of flux around 10,000
    nJy with errors growing from 100 (CATS takes equal errors for no light curve)."""
    out = []
    for i, days in enumerate(np.linspace(60.0, 1.0, 12)):
        point = earlier(days, 10_000 + 5_000 * math.sin(-2 * math.pi * days / 3.3), "gr"[i % 2])
        point["psfFluxErr"] = 100.0 + 3 * i
        out.append(point)
    return out


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
            ids = {
                path: alert_id
                for path in ("diaSourceId", "diaSource.diaSourceId")
                if path.split(".")[0] in alert
            }
            alert = changed(alert, **ids)
            edited.append((str(alert_id), frame(schema.schema_id, schema.encode(alert))))
    return out + edited


#: The real ZTF 3.3 alerts with light-curve histories (124 files, one alert each, as ZTF sends
#: them; see tests/data/real/SOURCES.md).
ZTF_HISTORIES = REAL / "ztf-3.3-histories"
#: The ZTF filters ``ztf_made_to_pass`` makes a copy for, in its order.
ZTF_EDITED_FOR = (
    "ztf_early_sn_ia",
    "ztf_fast_transients",
    "ztf_long_variables",
    "ztf_known_asteroids",
    "ztf_steady_risers",
)
#: The north Galactic pole (ICRS), far from the plane, for the copies that must be.
_HIGH_LATITUDE = {"candidate.ra": 192.85948, "candidate.dec": 27.12825}


def ztf_history_files() -> list[Path]:
    """The real ZTF alert files with histories, in name order."""
    return sorted(ZTF_HISTORIES.glob("*.avro"))


def ztf_histories() -> list[dict]:
    """The real ZTF alerts with histories as fastavro decodes them (one per file, name order)."""
    out = []
    for path in ztf_history_files():
        with path.open("rb") as f:
            (record,) = list(fastavro.reader(f))
        out.append(record)
    return out


def _ztf_prv_fields() -> list[str]:
    """The fields of a ZTF 3.3 ``prv_candidates`` entry, from a real file's writer schema."""
    with ztf_history_files()[0].open("rb") as f:
        schema = fastavro.reader(f).writer_schema
    history = next(x for x in schema["fields"] if x["name"] == "prv_candidates")
    (entry,) = [t["items"] for t in history["type"] if isinstance(t, dict)]
    return [x["name"] for x in entry["fields"]]


#: What the upper limits ZTF sends keep of their image besides jd and diffmaglim.
_LIMIT_KEEPS = (
    "pid",
    "programid",
    "programpi",
    "nid",
    "rcid",
    "field",
    "magzpsci",
    "magzpsciunc",
    "magzpscirms",
    "clrcoeff",
    "clrcounc",
    "rbversion",
)


def ztf_made_to_pass(record: dict, first_id: int = EDITED_IDS) -> list[dict]:
    """Copies of a real ZTF alert, one made to pass each filter of ``ZTF_EDITED_FOR`` (in that
    order), with ``candid`` ``first_id + i`` (top level and ``candidate``; ``objectId`` as it was).

    Only what the cuts read is changed: the candidate's quality, sign, magnitude, position,
    catalogue and history fields, and ``prv_candidates``, whose detections are replaced by copies
    of the candidate at other times and magnitudes. The record's own upper limits stay, but for
    the two transients only those more than a week old: a later one would be their prediscovery
    limit, and might make the fast one an early SN Ia as well. Every field a cut reads is set, so
    any real record will do, and each copy passes its own filter and no other."""
    c = record["candidate"]
    jd, fid = c["jd"], c["fid"] if c["fid"] in (1, 2, 3) else 2
    limits = [p for p in record.get("prv_candidates") or [] if p.get("candid") is None]
    fields = list((record.get("prv_candidates") or [{}])[0]) or _ztf_prv_fields()

    def detection(days: float, mag: float, err: float, k: int) -> dict:
        """A positive detection ``days`` before the candidate, copied from it."""
        entry = {name: copy.deepcopy(c.get(name)) for name in fields}
        moved = {"jd": jd - days, "fid": fid, "magpsf": mag, "sigmapsf": err, "isdiffpos": "t"}
        return {**entry, **moved, "candid": c["candid"] - 1 - k}

    def limit(days: float, depth: float) -> dict:
        """An upper limit ``days`` before the candidate, as deep as ``depth``."""
        entry = {name: (c.get(name) if name in _LIMIT_KEEPS else None) for name in fields}
        return {**entry, "jd": jd - days, "fid": fid, "diffmaglim": depth}

    def history(*entries: dict, kept: list[dict] = limits) -> list[dict]:
        return sorted([*copy.deepcopy(kept), *entries], key=lambda p: p["jd"])

    clean = {
        "candidate.rb": 0.9,
        "candidate.drb": 0.99,
        "candidate.nbad": 0,
        "candidate.fwhm": 2.5,
        "candidate.elong": 1.1,
        "candidate.magdiff": 0.05,
        "candidate.isdiffpos": "t",
        "candidate.fid": fid,
        "candidate.magpsf": 18.0,
        "candidate.sigmapsf": 0.05,
        "candidate.ssdistnr": -999.0,
        "candidate.ssmagnr": -999.0,
    }
    transient = {
        **clean,
        **_HIGH_LATITUDE,
        "candidate.sgscore1": 0.05,
        "candidate.distpsnr1": 3.0,
        "candidate.classtar": 0.95,
    }
    week_old = [p for p in limits if p["jd"] < jd - 7]
    # Early SN Ia: first seen 5 d ago, 2 d after a 20.5 mag limit; 0.2 mag/d brighter than 2 d ago.
    early = {**transient, "candidate.jdstarthist": jd - 5, "candidate.ndethist": 3}
    early_history = [limit(7, 20.5), detection(5, 18.8, 0.08, 1), detection(2, 18.4, 0.06, 0)]
    # Fast transient: first seen 1.5 d ago; 1 mag/d brighter than a day ago.
    fast = {**transient, "candidate.jdstarthist": jd - 1.5, "candidate.ndethist": 3}
    fast_history = [detection(1.5, 19.5, 0.1, 1), detection(1, 19.0, 0.08, 0)]
    # Long-history variable: a PS1 star seen by ZTF for 500 d, swinging by 1 mag over 25 d.
    variable = {
        **clean,
        "candidate.sgscore1": 0.99,
        "candidate.distpsnr1": 0.3,
        "candidate.magpsf": 17.8,
        "candidate.jdstarthist": jd - 500,
        "candidate.ndethist": 150,
    }
    swings = ((5, 17.1), (10, 17.9), (15, 17.2), (20, 18.0), (25, 17.0))
    variable_history = [detection(d, m, 0.05, k) for k, (d, m) in enumerate(swings)]
    # Known asteroid: 1.5 arcsec from a known object predicted at 18.3 mag, seen here only now.
    asteroid = {
        **clean,
        "candidate.ssdistnr": 1.5,
        "candidate.ssmagnr": 18.3,
        "candidate.distpsnr1": 8.0,
        "candidate.ndethist": 1,
    }
    # Steady riser: first seen by ZTF 20 d ago (too old for the early and fast filters), 0.1 mag/d
    # brighter every 3 d over the last 12 d.
    steady = {**transient, "candidate.jdstarthist": jd - 20, "candidate.ndethist": 6}
    steady_history = [
        detection(d, 18.0 + 0.1 * d, 0.08, k) for k, d in enumerate((3.0, 6.0, 9.0, 12.0))
    ]
    copies = [
        changed(record, **early, prv_candidates=history(*early_history, kept=week_old)),
        changed(record, **fast, prv_candidates=history(*fast_history, kept=week_old)),
        changed(record, **variable, prv_candidates=history(*variable_history)),
        changed(record, **asteroid, prv_candidates=history()),
        changed(record, **steady, prv_candidates=history(*steady_history, kept=week_old)),
    ]
    return [
        changed(a, candid=first_id + i, **{"candidate.candid": first_id + i})
        for i, a in enumerate(copies)
    ]


def ztf_messages() -> list[tuple[str, bytes]]:
    """(candid, message) of the real ZTF alerts with histories, as ZTF sends them (each file
    whole), then the ``ztf_made_to_pass`` copies of the first, written with its writer schema."""
    from alertsieve.alerts.ztf import header, one_alert_container

    files, records = ztf_history_files(), ztf_histories()
    out = [(str(r["candid"]), p.read_bytes()) for p, r in zip(files, records, strict=True)]
    schema_json = header(files[0].read_bytes())["avro.schema"]
    parsed = fastavro.parse_schema(json.loads(schema_json))
    for alert in ztf_made_to_pass(records[0]):
        body = io.BytesIO()
        fastavro.schemaless_writer(body, parsed, alert)
        out.append((str(alert["candid"]), one_alert_container(schema_json, body.getvalue())))
    return out


def spark_export(schema: dict) -> dict:
    """``schema`` as Spark's Avro writer puts it: the alert record ``topLevelRecord``, each nested
    record named after its field in its parent's namespace (a named type used twice is written
    twice), fields in reverse order, unions flipped (a null default where null comes first, as
    Avro requires, none otherwise), no docs or custom attributes."""

    def walk(node: Any, name: str, namespace: str) -> Any:
        if isinstance(node, list):
            return [walk(branch, name, namespace) for branch in reversed(node)]
        if isinstance(node, str):
            return node  # a primitive: expand_schema wrote every named type out in full
        if node["type"] == "array":
            return {"type": "array", "items": walk(node["items"], name, namespace)}
        if node["type"] != "record":
            return node  # a primitive with a logical type (Rubin's timestamps)
        full = f"{namespace}.{name}" if namespace else name
        fields = []
        for f in reversed(node["fields"]):
            kind = walk(f["type"], f["name"], full)
            null_first = isinstance(kind, list) and kind[0] == "null"
            fields.append(
                {"name": f["name"], "type": kind, **({"default": None} if null_first else {})}
            )
        return {
            "type": "record",
            "name": name,
            **({"namespace": namespace} if namespace else {}),
            "fields": fields,
        }

    return walk(fastavro.schema.expand_schema(schema), "topLevelRecord", "")
