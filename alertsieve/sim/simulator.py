"""Simulated alerts valid under any Rubin schema version, with plausible science and FITS cutouts.

The science comes from ``populations`` (schema-free truth); this module maps it onto whatever
fields a schema version has. Fields the science does not speak to are filled once per record
type with realistic placeholders, so an alert has Rubin's size and shape; floats are rounded to
32 bits where the schema says ``float``, so a simulated record equals its decoded self.

Every alert is drawn from its own generator seeded by (seed, visit, index): any slice of a visit
(a producer's share of detectors) is reproducible on its own.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np

from alertsieve.alerts.schemas import AlertSchema, load_rubin_schema
from alertsieve.sim import VISIT_CADENCE_S
from alertsieve.sim.cutouts import StampMaker
from alertsieve.sim.populations import (
    DEFAULT_MIX,
    DETECTORS,
    AlertTruth,
    Detection,
    Visit,
    choose_population,
    deep_field_truth,
    make_visit,
    simulate_truth,
)

SECOND = 1.0 / 86400.0


@dataclass
class SimulationConfig:
    schema_version: str | None = None  # None: the latest lsst-alert-packet ships
    alerts_per_visit: int = 10_000
    max_history: int = 10  # previous detections per alert (each alert draws 0..max)
    max_forced: int = 10  # forced-photometry points per alert
    # Alerts of deep-drilling fields: their share of a visit, and how many earlier detections
    # each carries (populations.deep_field_truth).
    deep_share: float = 0.0
    deep_history: int = 400
    stamp_size: int = 84  # pixels per side; 0 = no cutouts. 84 px is ~32 KB per FITS stamp
    seed: int = 0
    mix: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_MIX))
    cadence_s: float = VISIT_CADENCE_S


# --- the schema, seen as record types ------------------------------------------------------


def _non_null(avro_type: Any) -> list[Any]:
    return [t for t in avro_type if t != "null"] if isinstance(avro_type, list) else [avro_type]


def _nullable(avro_type: Any) -> bool:
    return isinstance(avro_type, list) and "null" in avro_type


class SchemaShape:
    """Named record types of a schema and, per record type, a filled-in template."""

    def __init__(self, schema: AlertSchema, seed: int):
        self.schema = schema
        self.named: dict[str, dict] = {}
        self._collect(schema.definition, namespace=None)
        rng = np.random.default_rng([seed, 0x7E3])
        self.templates: dict[str, dict] = {}
        self.float32_fields: dict[str, frozenset[str]] = {}
        self.fields: dict[str, dict[str, Any]] = {}
        for name, rec in self.named.items():
            if rec.get("type") == "record":
                self.fields[name] = {f["name"]: f["type"] for f in rec["fields"]}
                self.templates[name] = {f["name"]: self._filler(f, rng) for f in rec["fields"]}
                self.float32_fields[name] = frozenset(
                    f["name"] for f in rec["fields"] if "float" in _non_null(f["type"])
                )

    def _collect(self, node: Any, namespace: str | None) -> None:
        if isinstance(node, list):
            for item in node:
                self._collect(item, namespace)
        elif isinstance(node, dict):
            kind = node.get("type")
            if kind in ("record", "enum", "fixed"):
                ns = node.get("namespace", namespace)
                full = node["name"] if "." in node["name"] or not ns else f"{ns}.{node['name']}"
                self.named[full] = node
                self.named.setdefault(node["name"].split(".")[-1], node)
                for f in node.get("fields", []):
                    self._collect(f["type"], ns)
            elif kind == "array":
                self._collect(node["items"], namespace)
            elif kind == "map":
                self._collect(node["values"], namespace)

    def resolve(self, avro_type: Any) -> Any:
        return self.named.get(avro_type, avro_type) if isinstance(avro_type, str) else avro_type

    def record_name(self, avro_type: Any) -> str | None:
        """The record type (short name) a field holds, directly, in a union or in an array."""
        for t in _non_null(avro_type):
            t = self.resolve(t)
            if isinstance(t, dict) and t.get("type") == "array":
                t = self.resolve(t["items"])
            if isinstance(t, dict) and t.get("type") == "record":
                return t["name"].split(".")[-1]
        return None

    def _filler(self, f: dict, rng: np.random.Generator) -> Any:
        """A plausible constant for a field the science does not set."""
        name, avro_type = f["name"], f["type"]
        t = self.resolve(_non_null(avro_type)[0])
        lname = name.lower()
        if isinstance(t, dict):
            kind = t.get("type")
            logical = t.get("logicalType")
            if logical and logical.startswith("timestamp"):
                return datetime(
                    2026, 11, 22, 3, 14, 15, 926535 if "micros" in logical else 926000, tzinfo=UTC
                )
            if kind == "enum":
                return t["symbols"][0]
            if kind == "fixed":
                return bytes(t["size"])
            if kind == "map":
                return {}
            if kind == "array":
                return None if _nullable(avro_type) else []
            if kind == "record":
                if _nullable(avro_type):
                    return None
                return {sub["name"]: self._filler(sub, rng) for sub in t["fields"]}
            t = kind
        if t == "boolean":
            return False
        if t in ("int", "long"):
            return int(rng.integers(5, 40)) if "ndata" in lname or lname.startswith("n") else 0
        if t in ("float", "double"):
            if lname.endswith("err") or "sigma" in lname:
                value = float(rng.uniform(0.01, 0.2))
            elif "cov" in lname:
                value = float(rng.uniform(-1e-6, 1e-6))
            else:
                value = float(rng.normal(0.0, 1.0))
            return float(np.float32(value)) if t == "float" else value
        if t == "string":
            return "" if _nullable(avro_type) else "unknown"
        if t == "bytes":
            return None if _nullable(avro_type) else b""
        return None

    def record(self, record_name: str, values: dict[str, Any]) -> dict:
        """The template for ``record_name`` with ``values`` laid over it (unknown names dropped)."""
        out = dict(self.templates[record_name])
        floats = self.float32_fields[record_name]
        types = self.fields[record_name]
        for key, value in values.items():
            if key not in out:
                continue
            if value is None and not _nullable(types[key]):
                continue
            if key in floats and value is not None:
                value = float(np.float32(value))
            out[key] = value
        return out


# --- truth -> fields ------------------------------------------------------------------------


def _source_fields(det: Detection, truth: AlertTruth) -> dict[str, Any]:
    pos_err = 0.2 / 3600 / max(det.snr, 1.0)  # degrees: ~0.2" PSF over SNR
    science = truth.template_flux + det.flux
    return {
        "diaSourceId": det.source_id,
        "alertId": det.source_id,
        "visit": det.visit_id,
        "ccdVisitId": det.visit_id * 1000 + det.detector,
        "detector": det.detector,
        "diaObjectId": truth.object_id,
        "ssObjectId": truth.ss_object_id,
        "parentDiaSourceId": None,
        "midpointMjdTai": det.mjd,
        "midPointTai": det.mjd,
        "timeProcessedMjdTai": det.mjd + 60 * SECOND,
        "timeWithdrawnMjdTai": None,
        "ra": det.ra,
        "dec": det.dec,
        "decl": det.dec,
        "raErr": pos_err,
        "decErr": pos_err,
        "x": 2036.0 + (det.source_id % 2000) - 1000,
        "y": 2000.0 + (det.source_id % 1900) - 950,
        "psfFlux": det.flux,
        "psFlux": det.flux,
        "psfFluxErr": det.flux_err,
        "psFluxErr": det.flux_err,
        "apFlux": det.flux * 1.02,
        "apFluxErr": det.flux_err * 1.1,
        "snr": det.snr,
        "scienceFlux": science,
        "scienceFluxErr": det.flux_err,
        "templateFlux": truth.template_flux,
        "templateFluxErr": det.flux_err * 0.5,
        "band": det.band,
        "filterName": det.band,
        "reliability": truth.reliability,
        "extendedness": truth.extendedness,
        "isDipole": truth.is_dipole,
        "isNegative": det.flux < 0,
        "trail_flag": truth.trailed,
        "trailLength": 4.5 if truth.trailed else 0.0,
        "psfNdata": 441,
        "bboxSize": 21,
    }


def _forced_fields(det: Detection, truth: AlertTruth) -> dict[str, Any]:
    return {
        "diaForcedSourceId": det.source_id,
        "diaObjectId": truth.object_id or 0,
        "ra": det.ra,
        "dec": det.dec,
        "decl": det.dec,
        "visit": det.visit_id,
        "ccdVisitId": det.visit_id * 1000 + det.detector,
        "detector": det.detector,
        "psfFlux": det.flux,
        "psFlux": det.flux,
        "psfFluxErr": det.flux_err,
        "psFluxErr": det.flux_err,
        "midpointMjdTai": det.mjd,
        "midPointTai": det.mjd,
        "scienceFlux": truth.template_flux + det.flux,
        "scienceFluxErr": det.flux_err,
        "band": det.band,
        "filterName": det.band,
        "timeProcessedMjdTai": det.mjd + 60 * SECOND,
        "timeWithdrawnMjdTai": None,
    }


def _object_fields(truth: AlertTruth) -> dict[str, Any]:
    """The diaObject summary, computed from the same detections the alert carries."""
    detections = [*truth.history, truth.source]
    out: dict[str, Any] = {
        "diaObjectId": truth.object_id,
        "validityStartMjdTai": detections[0].mjd,
        "ra": float(np.mean([d.ra for d in detections])),
        "dec": float(np.mean([d.dec for d in detections])),
        "decl": float(np.mean([d.dec for d in detections])),
        "raErr": 1e-5,
        "decErr": 1e-5,
        "nDiaSources": len(detections),
        "firstDiaSourceMjdTai": detections[0].mjd,
        "lastDiaSourceMjdTai": detections[-1].mjd,
        "radecMjdTai": detections[-1].mjd,
    }
    for band in "ugrizy":
        in_band = [d for d in detections if d.band == band]
        fluxes = np.array([d.flux for d in in_band])
        errs = np.array([d.flux_err for d in in_band])
        n = len(in_band)
        out[f"{band}_psfFluxNdata"] = n
        out[f"{band}_psfFluxMean"] = float(fluxes.mean()) if n else None
        out[f"{band}_psfFluxMeanErr"] = float(errs.mean() / math.sqrt(n)) if n else None
        out[f"{band}_psfFluxSigma"] = float(fluxes.std(ddof=1)) if n > 1 else None
        out[f"{band}_psfFluxMin"] = float(fluxes.min()) if n else None
        out[f"{band}_psfFluxMax"] = float(fluxes.max()) if n else None
        out[f"{band}_psfFluxErrMean"] = float(errs.mean()) if n else None
        slopes = [
            (b.flux - a.flux) / (b.mjd - a.mjd)
            for a, b in zip(in_band, in_band[1:], strict=False)
            if b.mjd > a.mjd
        ]
        out[f"{band}_psfFluxMaxSlope"] = float(max(slopes, key=abs)) if slopes else None
        out[f"{band}_scienceFluxMean"] = float(fluxes.mean() + truth.template_flux) if n else None
        out[f"{band}_scienceFluxMeanErr"] = out[f"{band}_psfFluxMeanErr"]
    return out


def _ss_fields(truth: AlertTruth) -> dict[str, Any]:
    src = truth.source
    return {
        "diaSourceId": src.source_id,
        "ssObjectId": truth.ss_object_id,
        "designation": f"2026 {chr(65 + truth.ss_object_id % 26)}{truth.ss_object_id % 999}",
        "eclLambda": src.ra,  # close enough for a simulated main-belt asteroid
        "eclBeta": src.dec / 5,
        "helioRange": 2.4,
        "topoRange": 1.6,
        "phaseAngle": 12.0,
        "elongation": 150.0,
        "ephRa": src.ra,
        "ephDec": src.dec,
        "ephOffset": 0.3,
    }


# --- the simulator --------------------------------------------------------------------------


def _in_a_deep_field(config: SimulationConfig, visit: Visit, alert_index: int) -> bool:
    """Whether an alert is of a deep-drilling field: drawn from a generator of its own, so that
    every other alert of a seed is the same with deep fields or without."""
    rng = np.random.default_rng([config.seed, visit.index, alert_index, 0xDEE9])
    return bool(rng.uniform() < config.deep_share)


class AlertSimulator:
    """Seeded, reproducible alerts for one schema version."""

    def __init__(self, config: SimulationConfig | None = None):
        self.config = config or SimulationConfig()
        self.schema = load_rubin_schema(self.config.schema_version)
        self.shape = SchemaShape(self.schema, self.config.seed)
        self.stamps = (
            StampMaker(self.config.stamp_size, seed=self.config.seed)
            if self.config.stamp_size
            else None
        )
        self._alert_name = self.schema.definition["name"].split(".")[-1]
        self._top = self.shape.fields[self._alert_name]
        self._record_of = {name: self.shape.record_name(t) for name, t in self._top.items()}

    def visit(self, index: int) -> Visit:
        return make_visit(self.config.seed, index, cadence_s=self.config.cadence_s)

    def truth(self, visit: Visit, alert_index: int) -> AlertTruth:
        rng = np.random.default_rng([self.config.seed, visit.index, alert_index])
        if self.config.deep_share and _in_a_deep_field(self.config, visit, alert_index):
            return deep_field_truth(
                rng, visit, alert_index, self.config.deep_history, self.config.max_forced
            )
        population = choose_population(rng, self.config.mix)
        return simulate_truth(
            rng, visit, alert_index, population, self.config.max_history, self.config.max_forced
        )

    def alert(self, visit: Visit, alert_index: int) -> dict:
        """The alert record (a dict ready for fastavro) for one index of a visit."""
        truth = self.truth(visit, alert_index)
        return self.record(truth)

    def record(self, truth: AlertTruth) -> dict:
        shape, target = self.shape, self._record_of
        values: dict[str, Any] = {
            "diaSourceId": truth.source.source_id,
            "alertId": truth.source.source_id,
            "observation_reason": None,
            "target_name": None,
        }
        for name in self._top:
            if name == "diaSource":
                values[name] = shape.record(target[name], _source_fields(truth.source, truth))
            elif name == "prvDiaSources":
                values[name] = [
                    shape.record(target[name], _source_fields(d, truth)) for d in truth.history
                ]
            elif name == "prvDiaForcedSources":
                values[name] = [
                    shape.record(target[name], _forced_fields(d, truth)) for d in truth.forced
                ]
            elif name == "diaObject" and truth.object_id:
                values[name] = shape.record(target[name], _object_fields(truth))
            elif name in ("ssSource", "ssObject") and truth.ss_object_id:
                values[name] = shape.record(target[name], _ss_fields(truth))
        if self.stamps is not None:
            rng = np.random.default_rng([self.config.seed, truth.source.source_id, 0xC07])
            src = truth.source
            diff, sci, tmpl = self.stamps.stamps(
                rng, src.ra, src.dec, src.flux, truth.template_flux, pixel_noise=src.flux_err / 10.0
            )
            values.update(cutoutDifference=diff, cutoutScience=sci, cutoutTemplate=tmpl)
        return shape.record(self._alert_name, values)

    def visit_alerts(
        self, index: int, part: int = 0, parts: int = 1, count: int | None = None
    ) -> Iterator[dict]:
        """Alerts of visit ``index`` whose detector falls to producer ``part`` of ``parts``
        (detector % parts == part), as the real system splits a visit by CCD."""
        visit = self.visit(index)
        n = self.config.alerts_per_visit if count is None else count
        for i in range(n):
            if (i % DETECTORS) % parts == part:
                yield self.alert(visit, i)
