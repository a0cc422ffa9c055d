"""Times torch.distributed's gloo allreduce (sum, float32) on 2 local processes over loopback, for the allreduce
benchmark's comparison. Prints {"size in bytes": seconds, ...} as JSON: the best of the repetitions, as seen by
the slower rank.

usage: python3 benches/gloo_allreduce.py SIZE_IN_BYTES...
"""

import json
import os
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

WORLD = 2


def repetitions(size):
    return max(3, min(2000, 256 * 1024 * 1024 // max(size, 1)))


def rank_main(rank, port, sizes, queue):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    results = {}
    for size in sizes:
        values = torch.ones(size // 4, dtype=torch.float32)
        times = []
        for _ in range(repetitions(size)):
            dist.barrier()
            started = time.perf_counter()
            dist.all_reduce(values)
            times.append(time.perf_counter() - started)
        slowest = torch.tensor(times, dtype=torch.float64)
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
        results[str(size)] = float(slowest.min())
    if rank == 0:
        queue.put(results)
    dist.destroy_process_group()


if __name__ == "__main__":
    sizes = [int(s) for s in sys.argv[1:]]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    context = mp.get_context("spawn")
    queue = context.Queue()
    ranks = [context.Process(target=rank_main, args=(r, port, sizes, queue)) for r in range(WORLD)]
    for p in ranks:
        p.start()
    results = queue.get(timeout=600)
    for p in ranks:
        p.join(timeout=60)
    print(json.dumps(results))
