"""Convert the CATS network Fink runs on Rubin (``cats_small_nometa_serial.keras``) to ONNX, so
the job runs it with ONNX Runtime and no TensorFlow.

    .venv-fink/bin/python models/training/cats_to_onnx.py [--out models/files]

Run in the suite's ``.venv-fink`` (tensorflow-cpu 2.15.1, tf2onnx 1.16.1, fink-science 7.4.0).
The Keras model (convolutions with squeeze-and-excitation, two bidirectional LSTMs, dense
layers; fixed input of 395 rows of (days since the first row, normalised flux, normalised
error, band code), padded with -999 and band 0) is converted by tf2onnx at opset 17 with a free
batch size. Output ``probabilities`` (batch, 5): SN-like, fast, long, periodic, non-periodic.
The script checks the graph against Keras on random padded curves of 1 to 395 rows and prints
the largest difference."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import numpy as np

OUT_NAME = "cats.onnx"
ROWS = 395


def fink_model_file() -> Path:
    """The Keras file in the installed fink-science."""
    import fink_science

    return (
        Path(fink_science.__file__).parent
        / "data/models/cats_models/cats_small_nometa_serial.keras"
    )


def random_curves(count: int, seed: int = 7) -> np.ndarray:
    """Padded curves as fink-science builds them, of random lengths."""
    rng = np.random.default_rng(seed)
    out = np.full((count, ROWS, 4), -999.0, dtype=np.float32)
    out[:, :, 3] = 0
    for i in range(count):
        n = int(rng.integers(1, ROWS + 1))
        days = np.sort(rng.uniform(0, 400, n))
        out[i, :n, 0] = days - days[0]
        out[i, :n, 1] = rng.uniform(0, 1, n)
        out[i, :n, 2] = rng.uniform(0, 1, n)
        out[i, :n, 3] = rng.integers(1, 7, n)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "files"))
    args = parser.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import onnxruntime
    import tensorflow as tf
    import tf2onnx

    keras_model = tf.keras.models.load_model(fink_model_file())
    signature = [tf.TensorSpec([None, ROWS, 4], tf.float32, name="curves")]
    model, _ = tf2onnx.convert.from_keras(keras_model, input_signature=signature, opset=17)
    converted_name = model.graph.output[0].name
    for node in model.graph.node:
        node.output[:] = ["probabilities" if o == converted_name else o for o in node.output]
    model.graph.output[0].name = "probabilities"
    model.doc_string = "CATS cats_small_nometa_serial (fink-science 7.4.0, Apache-2.0)"
    out = Path(args.out) / OUT_NAME
    out.write_bytes(model.SerializeToString())

    curves = random_curves(64)
    want = keras_model.predict(curves, verbose=0)
    session = onnxruntime.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    got = session.run(None, {"curves": curves})[0]
    print(
        json.dumps(
            {"written": str(out), "largest_difference_vs_keras": float(abs(got - want).max())}
        )
    )


if __name__ == "__main__":
    main()
