"""Train models/rubin_transients.py's forest on simulated Rubin alerts and convert it to ONNX.

    .venv/bin/python models/training/rubin_transients.py [--alerts 30000] [--out models/files]

The alerts are alertsieve's simulator's (schema 10.0, seed 20261127: the same run gives the
same forest), in a mix of a third supernovae on the rise, a third artefacts and a third of every
other population in the simulator's own proportions; each alert's label is the population the
simulator drew for it. The features are the model module's own (``features``), computed on the
alert records as fastavro would decode them. The forest is converted with float32 inputs
(scikit-learn compares its thresholds in float32, so the ONNX graph decides as it does), its
probabilities as a plain tensor (no ZipMap), and its agreement with scikit-learn printed."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # the model module, as this checkout has it

import rubin_transients as model  # noqa: E402

from alertsieve.sim.populations import DEFAULT_MIX  # noqa: E402
from alertsieve.sim.simulator import AlertSimulator, SimulationConfig  # noqa: E402

SEED = 20261127
SCHEMA = "10.0"


def training_mix() -> dict[str, float]:
    """A third risers, a third artefacts, a third the rest in the stream's proportions."""
    rest = {k: v for k, v in DEFAULT_MIX.items() if k not in ("rising", "bogus")}
    total = sum(rest.values())
    return {"rising": 1 / 3, "bogus": 1 / 3, **{k: v / total / 3 for k, v in rest.items()}}


def row_of(alert: dict) -> dict:
    """An alert record as the model's columns (its SQL over the filter view) give it."""
    source, earlier = alert["diaSource"], alert.get("prvDiaSources") or []
    return {
        "flux": source["psfFlux"],
        "flux_err": source["psfFluxErr"],
        "reliability": source["reliability"],
        "extendedness": source["extendedness"],
        "mjd": source["midpointMjdTai"],
        "band": source["band"],
        "prv_flux": [d["psfFlux"] for d in earlier],
        "prv_mjd": [d["midpointMjdTai"] for d in earlier],
        "prv_band": [d["band"] for d in earlier],
    }


def simulated(n: int) -> tuple[np.ndarray, np.ndarray]:
    """(features, labels) of ``n`` simulated alerts."""
    from tqdm import tqdm

    sim = AlertSimulator(
        SimulationConfig(
            schema_version=SCHEMA, alerts_per_visit=n, stamp_size=0, seed=SEED, mix=training_mix()
        )
    )
    visit = sim.visit(0)
    x, y = [], []
    for i in tqdm(range(n), desc="simulated alerts", unit="alert"):
        truth = sim.truth(visit, i)
        label = truth.population if truth.population in model.CLASSES else "other"
        x.append(model.features(row_of(sim.record(truth))))
        y.append(model.CLASSES.index(label))
    return np.asarray(x, dtype=np.float32), np.asarray(y)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--alerts", type=int, default=30_000)
    parser.add_argument("--out", type=Path, default=HERE.parent / "files")
    args = parser.parse_args()
    import onnxruntime
    from skl2onnx import to_onnx
    from skl2onnx.common.data_types import FloatTensorType
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.model_selection import train_test_split

    x, y = simulated(args.alerts)
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.25, random_state=SEED)
    forest = RandomForestClassifier(
        n_estimators=40, max_depth=10, min_samples_leaf=5, random_state=SEED, n_jobs=1
    ).fit(x_train, y_train)
    graph = to_onnx(
        forest,
        initial_types=[("features", FloatTensorType([None, x.shape[1]]))],
        options={id(forest): {"zipmap": False}},  # outputs: label, probabilities
        target_opset={"": 17, "ai.onnx.ml": 3},
    )
    path = args.out / "rubin_transients.onnx"
    path.write_bytes(graph.SerializeToString())
    session = onnxruntime.InferenceSession(str(path))
    onnx_p = session.run(["probabilities"], {"features": x_test})[0]
    agreement = float(np.mean(np.argmax(onnx_p, axis=1) == forest.predict(x_test)))
    print(
        json.dumps(
            {
                "alerts": args.alerts,
                "classes": dict(zip(model.CLASSES, np.bincount(y).tolist(), strict=True)),
                "test_accuracy": round(float(forest.score(x_test, y_test)), 4),
                "onnx_agrees_with_sklearn": agreement,
                "max_probability_difference": float(
                    np.abs(onnx_p - forest.predict_proba(x_test)).max()
                ),
                "file": str(path),
            },
            indent=1,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
