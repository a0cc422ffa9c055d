"""PyTorch's side of the training-parity benchmark (benches/parity.rs) and test: the same network, optimizer,
batch, epochs and rows as hearth's trainer, trained by a plain PyTorch loop (one process) or by DDP over gloo
(two processes, rows dealt round robin as hearth deals them), with test accuracy after every epoch.

usage: python3 benches/parity_torch.py CONFIG.json

CONFIG holds:
  train, test    files of float32 rows (DIM features, then the label), little-endian
  dim            features per row
  model          hearth's ModelSpec as JSON ({"model": "mlp" | "linear" | "sequential", ...})
  batch, epochs  rows per step on each process, passes over the data
  world          1 (a plain loop) or 2 (DDP over gloo)
  threads        torch threads per process
  runs           [{"optimizer": hearth's OptimizerSpec as JSON, "seed": N}, ...]
  shuffle        optional, default true: each epoch in a new random order (else the rows' own order)
  precision      optional, default "fp32"; "bf16": forward and loss under torch.autocast in bfloat16
  device         optional, default "cpu": where a plain loop trains ("cuda": the model, the rows and each epoch's
                 order moved to the GPU once, batches indexed there; epoch seconds end after the GPU finishes)
  tensors        optional, default false: also print every run's final tensors (small models)

Prints one JSON list: per run, its optimizer name and seed, the test accuracy after each epoch and each epoch's
training seconds (the slowest process's; evaluation excluded), and with `tensors` the final state_dict as
{name: flat list} (no epochs: the initial one).
"""

import json
import math
import os
import socket
import sys
import time
from datetime import timedelta
from queue import Empty

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn


def layers_of(spec):
    """hearth's layers of a ModelSpec, with the input shape (an MLP and a linear model expanded)."""
    kind = spec["model"]
    if kind == "linear":
        return [spec["inputs"]], [{"layer": "dense", "units": spec["outputs"]}]
    if kind == "mlp":
        layers = []
        for units in spec["hidden"]:
            layers.append({"layer": "dense", "units": units})
            layers.append({"layer": spec.get("activation", "relu")})
            if spec.get("dropout", 0.0) > 0.0:
                layers.append({"layer": "dropout", "rate": spec["dropout"]})
        layers.append({"layer": "dense", "units": spec["outputs"]})
        return [spec["inputs"]], layers
    return spec["input_shape"], spec["layers"]


def network(spec):
    """The nn.Sequential hearth builds for `spec`, with PyTorch's own initialisation, and the shape a batch of
    flat rows takes for it."""
    input_shape, layers = layers_of(spec)
    shape = list(input_shape)
    modules = []
    for layer in layers:
        kind = layer["layer"]
        if kind == "dense":
            modules.append(nn.Linear(shape[0], layer["units"]))
            shape = [layer["units"]]
        elif kind == "conv2d":
            k, s, p = layer["kernel"], layer.get("stride", 1), layer.get("padding", 0)
            modules.append(nn.Conv2d(shape[0], layer["filters"], k, stride=s, padding=p))
            shape = [layer["filters"], (shape[1] + 2 * p - k) // s + 1, (shape[2] + 2 * p - k) // s + 1]
        elif kind == "max_pool2d":
            k = layer["kernel"]
            s = layer.get("stride") or k
            modules.append(nn.MaxPool2d(k, s))
            shape = [shape[0], (shape[1] - k) // s + 1, (shape[2] - k) // s + 1]
        elif kind == "batch_norm":
            modules.append(nn.BatchNorm2d(shape[0]) if len(shape) == 3 else nn.BatchNorm1d(shape[0]))
        elif kind == "flatten":
            modules.append(nn.Flatten())
            shape = [math.prod(shape)]
        elif kind == "dropout":
            modules.append(nn.Dropout(layer["rate"]))
        elif kind == "relu":
            modules.append(nn.ReLU())
        elif kind == "tanh":
            modules.append(nn.Tanh())
        elif kind == "sigmoid":
            modules.append(nn.Sigmoid())
        else:
            raise ValueError(f"layer {kind!r} has no PyTorch counterpart here")
    return nn.Sequential(*modules), [-1, *input_shape]


def optimizer(spec, parameters):
    """torch.optim's optimizer for hearth's OptimizerSpec."""
    kind, lr, decay = spec["optimizer"], spec["learning_rate"], spec.get("weight_decay", 0.0)
    if kind == "sgd":
        return torch.optim.SGD(parameters, lr=lr, momentum=spec.get("momentum", 0.0),
                               nesterov=spec.get("nesterov", False), weight_decay=decay)
    if kind == "adam":
        return torch.optim.Adam(parameters, lr=lr, betas=(spec.get("beta1", 0.9), spec.get("beta2", 0.999)),
                                eps=spec.get("eps", 1e-8), weight_decay=decay)
    if kind == "adagrad":
        return torch.optim.Adagrad(parameters, lr=lr, eps=spec.get("eps", 1e-10), weight_decay=decay,
                                   initial_accumulator_value=spec.get("initial_accumulator_value", 0.0))
    if kind == "adadelta":
        return torch.optim.Adadelta(parameters, lr=lr, rho=spec.get("rho", 0.9), eps=spec.get("eps", 1e-6),
                                    weight_decay=decay)
    raise ValueError(f"optimizer {kind!r} has no PyTorch counterpart here")


def load(path, dim):
    rows = torch.from_file(path, shared=False, size=os.path.getsize(path) // 4, dtype=torch.float32)
    rows = rows.view(-1, dim + 1)
    return rows[:, :dim].contiguous(), rows[:, dim].long().contiguous()


def accuracy(model, shape, features, labels):
    model.eval()
    with torch.no_grad():
        hits = sum((model(x.view(shape)).argmax(1) == y).sum().item()
                   for x, y in zip(features.split(4096), labels.split(4096)))
    model.train()
    return hits / labels.shape[0]


def train(config, rank, world):
    """Every run of `config` on this process: per run, the test accuracy (rank 0) and seconds of each epoch."""
    torch.set_num_threads(config["threads"])
    features, labels = load(config["train"], config["dim"])
    steps = {-(-labels[r::world].shape[0] // config["batch"]) for r in range(world)}
    if len(steps) > 1:
        raise SystemExit(f"the ranks' shards take {sorted(steps)} steps: DDP needs the same number on every rank")
    features, labels = features[rank::world].contiguous(), labels[rank::world].contiguous()
    test_features, test_labels = load(config["test"], config["dim"])
    device = torch.device(config.get("device", "cpu"))
    bf16 = config.get("precision", "fp32") == "bf16"
    features, labels = features.to(device), labels.to(device)
    test_features, test_labels = test_features.to(device), test_labels.to(device)
    batch, epochs = config["batch"], config["epochs"]
    loss_of = nn.CrossEntropyLoss()
    results = []
    for run in config["runs"]:
        torch.manual_seed(run["seed"])
        model, shape = network(config["model"])
        model = model.to(device)
        if world > 1:
            model = nn.parallel.DistributedDataParallel(model)
        opt = optimizer(run["optimizer"], model.parameters())
        accuracies, seconds = [], []
        for epoch in range(epochs):
            generator = torch.Generator().manual_seed(run["seed"] * 1000 + epoch * world + rank)
            if config.get("shuffle", True):
                order = torch.randperm(labels.shape[0], generator=generator)
            else:
                order = torch.arange(labels.shape[0])
            order = order.to(device)
            if world > 1:
                dist.barrier()
            started = time.perf_counter()
            for start in range(0, labels.shape[0], batch):
                index = order[start:start + batch]
                opt.zero_grad()
                with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
                    loss = loss_of(model(features[index].view(shape)), labels[index])
                loss.backward()
                opt.step()
            if world > 1:
                dist.barrier()
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            seconds.append(time.perf_counter() - started)
            if rank == 0:
                # The network itself, not DDP's wrapper: its forward would wait for the other rank.
                network_only = model.module if world > 1 else model
                accuracies.append(accuracy(network_only, shape, test_features, test_labels))
        result = {"optimizer": run["optimizer"]["optimizer"], "seed": run["seed"],
                  "accuracy": accuracies, "seconds": seconds}
        if config.get("tensors", False):
            state = (model.module if world > 1 else model).state_dict()
            result["tensors"] = {name: t.reshape(-1).tolist() for name, t in state.items()
                                 if t.is_floating_point()}
        results.append(result)
    return results


def rank_main(rank, port, config, queue):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    # Every collective gives up after 10 minutes: a rank left waiting ends instead of hanging.
    dist.init_process_group("gloo", rank=rank, world_size=config["world"], timeout=timedelta(minutes=10))
    results = train(config, rank, config["world"])
    queue.put((rank, results))
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    with open(sys.argv[1]) as f:
        config = json.load(f)
    world = config["world"]
    if world == 1:
        print(json.dumps(train(config, 0, 1)))
        return
    context = mp.get_context("spawn")
    queue = context.Queue()
    port = free_port()
    processes = [context.Process(target=rank_main, args=(rank, port, config, queue)) for rank in range(world)]
    for p in processes:
        p.start()
    by_rank = {}
    while len(by_rank) < world:
        try:
            rank, results = queue.get(timeout=5)
            by_rank[rank] = results
        except Empty:
            failed = [(rank, p.exitcode) for rank, p in enumerate(processes) if p.exitcode not in (None, 0)]
            if failed:
                for p in processes:
                    p.kill()
                raise SystemExit(f"DDP rank {failed[0][0]} exited with status {failed[0][1]}")
    for p in processes:
        p.join(timeout=60)
    # Rank 0's accuracies; each epoch's seconds, the slower rank's.
    results = by_rank[0]
    for i, run in enumerate(results):
        run["seconds"] = [max(by_rank[r][i]["seconds"][e] for r in range(world)) for e in range(len(run["seconds"]))]
    print(json.dumps(results))


if __name__ == "__main__":
    main()
