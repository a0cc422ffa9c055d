"""Loads a hearth model artifact in PyTorch and prints its outputs for the given rows (used by artifact.rs).

usage: python3 artifact.py ARTIFACT_DIR '[[features of row 0], ...]'
Prints {"outputs": [...], "missing": [...], "unexpected": [...]} as JSON.
"""

import json
import sys

import torch
from safetensors.torch import load_file


def build(spec):
    """The nn.Sequential a hearth ModelSpec stands for, and the input shape."""
    if spec["model"] == "mlp":
        act = {"relu": "relu", "tanh": "tanh", "sigmoid": "sigmoid"}[spec.get("activation", "relu")]
        layers = []
        for units in spec["hidden"]:
            layers += [{"layer": "dense", "units": units}, {"layer": act}]
            if spec.get("dropout", 0.0) > 0.0:
                layers.append({"layer": "dropout", "rate": spec["dropout"]})
        layers.append({"layer": "dense", "units": spec["outputs"]})
        shape = [spec["inputs"]]
    elif spec["model"] == "linear":
        layers, shape = [{"layer": "dense", "units": spec["outputs"]}], [spec["inputs"]]
    else:
        layers, shape = spec["layers"], list(spec["input_shape"])
    input_shape, modules = list(shape), []
    for layer in layers:
        kind = layer["layer"]
        if kind == "dense":
            modules.append(torch.nn.Linear(shape[0], layer["units"]))
            shape = [layer["units"]]
        elif kind == "conv2d":
            k, s, p = layer["kernel"], layer.get("stride", 1), layer.get("padding", 0)
            modules.append(torch.nn.Conv2d(shape[0], layer["filters"], k, stride=s, padding=p))
            shape = [layer["filters"], (shape[1] + 2 * p - k) // s + 1, (shape[2] + 2 * p - k) // s + 1]
        elif kind == "batch_norm":
            modules.append(torch.nn.BatchNorm2d(shape[0]) if len(shape) == 3 else torch.nn.BatchNorm1d(shape[0]))
        elif kind == "max_pool2d":
            k = layer["kernel"]
            s = layer.get("stride") or k
            modules.append(torch.nn.MaxPool2d(k, s))
            shape = [shape[0], (shape[1] - k) // s + 1, (shape[2] - k) // s + 1]
        elif kind == "flatten":
            modules.append(torch.nn.Flatten())
            shape = [eval("*".join(str(d) for d in shape))]
        elif kind == "dropout":
            modules.append(torch.nn.Dropout(layer["rate"]))
        else:
            modules.append({"relu": torch.nn.ReLU(), "tanh": torch.nn.Tanh(), "sigmoid": torch.nn.Sigmoid(),
                            "softmax": torch.nn.Softmax(dim=-1)}[kind])
    return torch.nn.Sequential(*modules), input_shape


directory, rows = sys.argv[1], json.loads(sys.argv[2])
description = json.load(open(directory + "/model.json"))
model, input_shape = build(description["options"]["model"])
result = model.load_state_dict(load_file(directory + "/model.safetensors"), strict=False)
model.eval()
with torch.no_grad():
    outputs = model(torch.tensor(rows, dtype=torch.float32).view(-1, *input_shape))
print(json.dumps({"outputs": outputs.flatten().tolist(), "missing": list(result.missing_keys),
                  "unexpected": list(result.unexpected_keys)}))
