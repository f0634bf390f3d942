"""Convert the SuperNNova network Fink runs on Rubin (``elasticc_binary_broad/SN_vs_other``) to
ONNX, so the job runs it with ONNX Runtime and no torch.

    .venv-fink/bin/python models/training/snn_to_onnx.py [--out models/files]

Run in the suite's ``.venv-fink`` (``make .venv-fink``: Debian's python3-torch, SuperNNova
3.0.51 and fink-science 7.4.0). The network is SuperNNova's ``VanillaRNN`` as its
``cli_args.json`` sets it: a two-layer bidirectional LSTM (32 units) over the light curve's
normalised rows, the last layer's outputs averaged over each curve's own length, a linear layer
and a softmax. torch's exporter cannot export packed sequences, so the graph is written here
with ONNX's own LSTM operator, whose ``sequence_lens`` is what packing does: each curve of a
padded batch is read to its own end in both directions. The weights are the state dict's, gates
reordered from torch's (i, f, g, o) to ONNX's (i, o, f, c).

Inputs ``rows`` (time, batch, 76: float32, SuperNNova's normalised features in its order) and
``lengths`` (batch: int32); output ``probabilities`` (batch, 2: SN, other). The script checks
the graph against torch running SuperNNova's own model class on packed random batches and
prints the largest difference."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

MODEL = "elasticc_binary_broad/SN_vs_other"
OUT_NAME = "snn_sn_vs_other.onnx"
#: torch's LSTM gate blocks (i, f, g, o) in ONNX's order (i, o, f, c).
GATES = [0, 3, 1, 2]


def fink_model_dir() -> Path:
    """The model's folder in the installed fink-science."""
    import fink_science

    return Path(fink_science.__file__).parent / "data/models/snn_models" / MODEL


def _gates(weight: np.ndarray, hidden: int) -> np.ndarray:
    blocks = weight.reshape(4, hidden, *weight.shape[1:])
    return blocks[GATES].reshape(weight.shape)


def lstm_initializers(state: dict, layer: int, hidden: int, prefix: str) -> list:
    """W, R and B of one bidirectional layer, forward then reverse, as ONNX wants them."""
    from onnx import numpy_helper

    def direction(suffix: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        name = f"rnn_layer.{{}}_l{layer}{suffix}"
        w = _gates(state[name.format("weight_ih")].numpy(), hidden)
        r = _gates(state[name.format("weight_hh")].numpy(), hidden)
        b = np.concatenate(
            [
                _gates(state[name.format("bias_ih")].numpy(), hidden),
                _gates(state[name.format("bias_hh")].numpy(), hidden),
            ]
        )
        return w, r, b

    forward, reverse = direction(""), direction("_reverse")
    return [
        numpy_helper.from_array(np.stack([f, r]).astype(np.float32), f"{prefix}_{n}")
        for n, f, r in zip("WRB", forward, reverse, strict=True)
    ]


def build_graph(state: dict, hidden: int, layers: int):
    """The ONNX model of the network whose weights are ``state``."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    features = state["rnn_layer.weight_ih_l0"].shape[1]
    classes = state["output_layer.weight"].shape[0]
    nodes, inits = [], []
    inits.append(numpy_helper.from_array(np.array([0, 0, -1], dtype=np.int64), "flat_shape"))
    nodes.append(helper.make_node("Cast", ["lengths"], ["lengths_f"], to=TensorProto.FLOAT))
    current = "rows"
    for layer in range(layers):
        p = f"lstm{layer}"
        inits += lstm_initializers(state, layer, hidden, p)
        nodes.append(
            helper.make_node(
                "LSTM",
                [current, f"{p}_W", f"{p}_R", f"{p}_B", "lengths"],
                [f"{p}_Y"],
                hidden_size=hidden,
                direction="bidirectional",
            )
        )
        # (time, 2, batch, hidden) -> (time, batch, 2 * hidden): forward then backward
        nodes.append(helper.make_node("Transpose", [f"{p}_Y"], [f"{p}_T"], perm=[0, 2, 1, 3]))
        nodes.append(helper.make_node("Reshape", [f"{p}_T", "flat_shape"], [f"{p}_out"]))
        current = f"{p}_out"
    # the mean over each curve's own steps: steps past its end masked out, whatever the LSTM
    # leaves there
    inits += [
        numpy_helper.from_array(np.array(0, dtype=np.int64), "zero"),
        numpy_helper.from_array(np.array(1, dtype=np.int64), "one"),
        numpy_helper.from_array(np.array([0], dtype=np.int64), "axis0"),
        numpy_helper.from_array(np.array([1], dtype=np.int64), "axis1"),
        numpy_helper.from_array(np.array([-1], dtype=np.int64), "axis_last"),
        numpy_helper.from_array(state["output_layer.weight"].numpy(), "out_W"),
        numpy_helper.from_array(state["output_layer.bias"].numpy(), "out_B"),
    ]
    nodes += [
        helper.make_node("Shape", ["rows"], ["rows_shape"]),
        helper.make_node("Gather", ["rows_shape", "zero"], ["steps"], axis=0),
        helper.make_node("Range", ["zero", "steps", "one"], ["step"]),
        helper.make_node("Unsqueeze", ["step", "axis1"], ["step_col"]),
        helper.make_node("Cast", ["lengths"], ["lengths_i"], to=TensorProto.INT64),
        helper.make_node("Unsqueeze", ["lengths_i", "axis0"], ["lengths_row"]),
        helper.make_node("Less", ["step_col", "lengths_row"], ["inside"]),
        helper.make_node("Cast", ["inside"], ["inside_f"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["inside_f", "axis_last"], ["mask"]),
        helper.make_node("Mul", [current, "mask"], ["kept"]),
        helper.make_node("ReduceSum", ["kept", "axis0"], ["summed"], keepdims=0),
        helper.make_node("Unsqueeze", ["lengths_f", "axis_last"], ["lengths_col"]),
        helper.make_node("Div", ["summed", "lengths_col"], ["mean"]),
        helper.make_node("Gemm", ["mean", "out_W", "out_B"], ["logits"], transB=1),
        helper.make_node("Softmax", ["logits"], ["probabilities"], axis=-1),
    ]
    graph = helper.make_graph(
        nodes,
        "supernnova_vanilla_rnn",
        [
            helper.make_tensor_value_info("rows", TensorProto.FLOAT, ["time", "batch", features]),
            helper.make_tensor_value_info("lengths", TensorProto.INT32, ["batch"]),
        ],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["batch", classes])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.producer_name = "alertsieve models/training/snn_to_onnx.py"
    model.doc_string = f"SuperNNova {MODEL} (fink-science 7.4.0, Apache-2.0)"
    onnx.checker.check_model(model)
    return model


def largest_difference(model_dir: Path, graph_bytes: bytes, batches: int = 20) -> float:
    """Torch (SuperNNova's own VanillaRNN, packed batches) against the graph (padded batches
    with lengths) on random curves of 1 to 400 rows: the largest probability difference."""
    import onnxruntime
    import torch
    from supernnova.utils import training_utils
    from supernnova.validation.validate_onthefly import get_settings

    settings = get_settings(str(model_dir / "model.pt"))
    settings.use_cuda = False
    settings.random_length = False
    rnn = training_utils.get_model(settings, len(settings.training_features))
    rnn.load_state_dict(torch.load(model_dir / "model.pt", map_location="cpu"))
    rnn.eval()
    session = onnxruntime.InferenceSession(graph_bytes, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(7)
    worst = 0.0
    for _ in range(batches):
        lengths = sorted(rng.integers(1, 401, size=16).tolist(), reverse=True)
        rows = np.zeros((lengths[0], len(lengths), len(settings.training_features)), np.float32)
        for b, n in enumerate(lengths):
            rows[:n, b] = rng.normal(size=(n, rows.shape[2]))
        packed = torch.nn.utils.rnn.pack_padded_sequence(torch.from_numpy(rows), lengths)
        with torch.no_grad():
            want = torch.softmax(rnn(packed), dim=-1).numpy()
        got = session.run(None, {"rows": rows, "lengths": np.asarray(lengths, np.int32)})[0]
        worst = max(worst, float(np.abs(got - want).max()))
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "files"))
    args = parser.parse_args()
    import torch

    model_dir = fink_model_dir()
    settings = json.loads((model_dir / "cli_args.json").read_text())
    state = torch.load(model_dir / "model.pt", map_location="cpu")
    model = build_graph(state, settings["hidden_dim"], settings["num_layers"])
    out = Path(args.out) / OUT_NAME
    out.write_bytes(model.SerializeToString())
    worst = largest_difference(model_dir, model.SerializeToString())
    print(json.dumps({"written": str(out), "largest_difference_vs_torch": worst}))


if __name__ == "__main__":
    main()
