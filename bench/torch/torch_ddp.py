"""PyTorch DistributedDataParallel over gloo: N ranks on loopback (1 thread each), synchronous.

The peer of actrain's sync mode across processes: each rank trains the MLP 784-256-10 on its
contiguous share of the Fashion-MNIST training set (shuffled inside it) with a local batch of 64
(global batch 64 x N, like N actrain sync workers), plain SGD; DDP all-reduces (averages) the
gradients every step over gloo, so every rank applies the same mean.

Prints one JSON line: {"job": "ddp_mlp", "ranks": N, "samples_per_s": ..., "test_accuracy": ...};
samples/s counts every rank's samples over the wall time from the first rank's start to the last
one's end (evaluation excluded). Optional: exits 0 with a message when torch is missing.
Usage: python3 bench/torch/torch_ddp.py [--ranks 2] [--epochs 1] [--dir DIR]
"""
import argparse
import json
import os
import sys
import time

try:
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp
    from torch.nn.parallel import DistributedDataParallel
except ImportError:
    print("torch_ddp: PyTorch is not installed (apt-get install python3-torch); skipping")
    sys.exit(0)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_ref import load_fashion  # noqa: E402  (same reader as the 1-thread baseline)
from torch_rpc_ps import free_port, make_mlp  # noqa: E402  (the same model)


def run(rank, args, port, out):
    torch.set_num_threads(1)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=args.ranks)
    torch.manual_seed(args.seed)  # every rank starts from the same weights
    model = DistributedDataParallel(make_mlp())
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    (x, y), (xt, yt) = load_fashion(args.dir)
    n = len(x) // args.ranks
    x, y = x[rank * n:(rank + 1) * n], y[rank * n:(rank + 1) * n]
    gen = torch.Generator().manual_seed(args.seed + rank)
    steps = (n + args.batch - 1) // args.batch
    dist.barrier()
    t0 = time.perf_counter()
    samples = 0
    for _ in range(args.epochs):
        order = torch.randperm(n, generator=gen)
        for s in range(steps):  # every rank takes the same number of steps
            idx = order[s * args.batch:(s + 1) * args.batch]
            opt.zero_grad(set_to_none=True)
            torch.nn.functional.cross_entropy(model(x[idx]), y[idx]).backward()
            opt.step()
            samples += len(idx)
    t1 = time.perf_counter()
    acc = None
    if rank == 0:
        with torch.no_grad():
            acc = float((model.module(xt).argmax(1) == yt).float().mean())
    out.put((t0, t1, samples, acc))
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dir", default=os.environ.get("ACTRAIN_FASHION_MNIST",
                                                   "/usr/share/datasets/fashion-mnist"))
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--seed", type=int, default=42)
    args = p.parse_args()
    ctx = mp.get_context("spawn")
    out = ctx.SimpleQueue()
    port = free_port()
    procs = [ctx.Process(target=run, args=(r, args, port, out)) for r in range(args.ranks)]
    for pr in procs:
        pr.start()
    results = [out.get() for _ in procs]
    for pr in procs:
        pr.join()
    start = min(r[0] for r in results)
    end = max(r[1] for r in results)
    samples = sum(r[2] for r in results)
    acc = next(r[3] for r in results if r[3] is not None)
    print(json.dumps({"job": "ddp_mlp", "ranks": args.ranks, "epochs": args.epochs,
                      "samples": samples, "seconds": round(end - start, 3),
                      "samples_per_s": round(samples / (end - start), 1),
                      "test_accuracy": round(acc, 4)}))


if __name__ == "__main__":
    main()
