"""Trains the dist-keras Higgs MLP (30 -> 600 -> 600 -> 2, ReLU, dropout 0.2) with PyTorch DDP over the gloo
backend on 2 local processes, for the strategies benchmark's comparison with hearth's synchronous trainer: the
same rows, batch per rank, epochs, Adam(1e-3) and one thread per rank. Prints {"seconds": ..., "samples": ...}
as JSON, the seconds being the slower rank's training time (process start and data loading excluded).

usage: python3 benches/ddp_higgs.py ROWS_FILE DIM BATCH EPOCHS

ROWS_FILE holds float32 rows of DIM features followed by the label, little-endian.
"""

import json
import os
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn

WORLD = 2


def network(dim):
    return nn.Sequential(
        nn.Linear(dim, 600), nn.ReLU(), nn.Dropout(0.2),
        nn.Linear(600, 600), nn.ReLU(), nn.Dropout(0.2),
        nn.Linear(600, 2),
    )


def rank_main(rank, port, path, dim, batch, epochs, queue):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    rows = torch.from_file(path, shared=False, size=os.path.getsize(path) // 4, dtype=torch.float32)
    rows = rows.view(-1, dim + 1)
    # Round robin, as hearth's shards; every rank the same count, or DDP's last step would wait forever.
    rows = rows[rank::WORLD][: rows.shape[0] // WORLD]
    features, labels = rows[:, :dim].contiguous(), rows[:, dim].long()
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(network(dim))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_of = nn.CrossEntropyLoss()
    dist.barrier()
    started = time.perf_counter()
    for epoch in range(epochs):
        generator = torch.Generator().manual_seed(epoch * WORLD + rank)
        order = torch.randperm(features.shape[0], generator=generator)
        for start in range(0, features.shape[0], batch):
            index = order[start:start + batch]
            optimizer.zero_grad()
            loss_of(model(features[index]), labels[index]).backward()
            optimizer.step()
    dist.barrier()
    seconds = time.perf_counter() - started
    queue.put((rank, seconds, features.shape[0] * epochs))
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    path, dim, batch, epochs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    context = mp.get_context("spawn")
    queue = context.Queue()
    port = free_port()
    processes = [
        context.Process(target=rank_main, args=(rank, port, path, dim, batch, epochs, queue))
        for rank in range(WORLD)
    ]
    for p in processes:
        p.start()
    results = [queue.get(timeout=3600) for _ in range(WORLD)]
    for p in processes:
        p.join(timeout=60)
    print(json.dumps({
        "seconds": max(seconds for _, seconds, _ in results),
        "samples": sum(samples for _, _, samples in results),
    }))


if __name__ == "__main__":
    main()
