#!/usr/bin/env python3
"""PyTorch RPC parameter server baseline: 1 PS + N async trainers on loopback (1 thread each).

The pattern of PyTorch's parameter-server tutorial and of the figure peers quote: the PS
process holds the MLP 784-256-10; each trainer process, per mini-batch of 64, fetches the
current weights with rpc_sync, computes the gradient locally and sends it back with rpc_sync,
and the PS applies it at once under a lock (plain SGD, or heavy-ball momentum with --momentum;
async, no barrier). Trainers split the Fashion-MNIST training set in contiguous halves (like
actrain's workers) and shuffle inside them.

Prints one JSON line: {"job": "rpc_ps_mlp", "samples_per_s": ..., "test_accuracy": ...};
samples/s counts every trainer's samples over the wall time from the first trainer's start to
the last one's end (evaluation excluded). Optional: exits 0 with a message when torch is missing.
Usage: python3 bench/torch/torch_rpc_ps.py [--trainers 2] [--epochs 1] [--overlap] [--dir DIR]
(--overlap: job "rpc_ps_mlp_overlap", the next pull in flight during compute as actrain does.)
"""
import argparse
import json
import os
import socket
import sys
import threading
import time

try:
    import torch
    import torch.distributed.rpc as rpc
    import torch.multiprocessing as mp
except ImportError:
    print("torch_rpc_ps: PyTorch is not installed (apt-get install python3-torch); skipping")
    sys.exit(0)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_ref import load_fashion  # noqa: E402  (same reader as the 1-thread baseline)


def make_mlp():
    return torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(),
                               torch.nn.Linear(256, 10))


class ParameterServer:
    """Lives in the PS process; trainers reach it through rpc."""

    def __init__(self, lr, momentum, seed):
        torch.manual_seed(seed)
        self.model = make_mlp()
        self.lr = lr
        self.momentum = momentum
        self.velocity = [torch.zeros_like(p) for p in self.model.parameters()]
        self.lock = threading.Lock()

    def weights(self):
        with self.lock:
            return [p.detach().clone() for p in self.model.parameters()]

    def apply(self, grads):
        with self.lock, torch.no_grad():
            for p, v, g in zip(self.model.parameters(), self.velocity, grads):
                if self.momentum > 0:  # heavy ball, as torch.optim.SGD: v = mu v + g
                    v.mul_(self.momentum).add_(g)
                    g = v
                p.add_(g, alpha=-self.lr)
        return True


PS = None


def ps_weights():
    return PS.weights()


def ps_apply(grads):
    return PS.apply(grads)


def overlapped_trainer(rank, args, x, y):
    """--overlap: the next pull is in flight while a step computes and its push goes out
    asynchronously (at most one in flight), as actrain's workers do; every step uses weights one
    update staler than the tutorial form's."""
    model = make_mlp()
    params = list(model.parameters())
    gen = torch.Generator().manual_seed(args.seed + rank)
    samples = 0
    t0 = time.perf_counter()
    next_weights = rpc.rpc_async("ps", ps_weights)
    pushed = None
    for _ in range(args.epochs):
        order = torch.randperm(len(x), generator=gen)
        for i in range(0, len(x), args.batch):
            idx = order[i:i + args.batch]
            with torch.no_grad():
                for p, w in zip(params, next_weights.wait()):
                    p.copy_(w)
            next_weights = rpc.rpc_async("ps", ps_weights)
            for p in params:
                p.grad = None
            loss = torch.nn.functional.cross_entropy(model(x[idx]), y[idx])
            loss.backward()
            if pushed is not None:
                pushed.wait()
            pushed = rpc.rpc_async("ps", ps_apply, args=([p.grad for p in params],))
            samples += len(idx)
    if pushed is not None:
        pushed.wait()
    next_weights.wait()
    return t0, time.perf_counter(), samples


def trainer(rank, args, x, y):
    if args.overlap:
        return overlapped_trainer(rank, args, x, y)
    model = make_mlp()
    params = list(model.parameters())
    gen = torch.Generator().manual_seed(args.seed + rank)
    samples = 0
    t0 = time.perf_counter()
    for _ in range(args.epochs):
        order = torch.randperm(len(x), generator=gen)
        for i in range(0, len(x), args.batch):
            idx = order[i:i + args.batch]
            with torch.no_grad():
                for p, w in zip(params, rpc.rpc_sync("ps", ps_weights)):
                    p.copy_(w)
            for p in params:
                p.grad = None
            loss = torch.nn.functional.cross_entropy(model(x[idx]), y[idx])
            loss.backward()
            rpc.rpc_sync("ps", ps_apply, args=([p.grad for p in params],))
            samples += len(idx)
    return t0, time.perf_counter(), samples


def run(rank, world, args, port, out):
    torch.set_num_threads(1)  # 2 threads are 4-5x slower on 2 cores
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    opts = rpc.TensorPipeRpcBackendOptions(num_worker_threads=4, rpc_timeout=300)
    if rank == 0:
        global PS
        PS = ParameterServer(args.lr, args.momentum, args.seed)
        rpc.init_rpc("ps", rank=0, world_size=world, rpc_backend_options=opts)
        rpc.shutdown()  # waits for every trainer
        # numpy, pickled by value: a torch tensor would go through shared memory that this
        # process takes away when it exits.
        out.put(("ps", [p.detach().numpy().copy() for p in PS.model.parameters()]))
        return
    (x, y), _ = load_fashion(args.dir)
    n = len(x) // (world - 1)
    lo = (rank - 1) * n
    rpc.init_rpc(f"trainer{rank}", rank=rank, world_size=world, rpc_backend_options=opts)
    t0, t1, samples = trainer(rank, args, x[lo:lo + n], y[lo:lo + n])
    rpc.shutdown()
    out.put(("trainer", (t0, t1, samples)))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dir", default=os.environ.get("ACTRAIN_FASHION_MNIST",
                                                   "/usr/share/datasets/fashion-mnist"))
    p.add_argument("--trainers", type=int, default=2)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--momentum", type=float, default=0.0)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--overlap", action="store_true",
                   help="next pull in flight during compute, pushes asynchronous")
    args = p.parse_args()
    world = args.trainers + 1
    ctx = mp.get_context("spawn")
    out = ctx.SimpleQueue()
    port = free_port()
    procs = [ctx.Process(target=run, args=(r, world, args, port, out)) for r in range(world)]
    for pr in procs:
        pr.start()
    results = [out.get() for _ in range(world)]  # before join: a full pipe would block a child
    for pr in procs:
        pr.join(timeout=120)
        if pr.is_alive():
            pr.kill()
    spans = [r[1] for r in results if r[0] == "trainer"]
    weights = next(r[1] for r in results if r[0] == "ps")
    start, end = min(s[0] for s in spans), max(s[1] for s in spans)
    samples = sum(s[2] for s in spans)
    torch.set_num_threads(1)
    _, (xt, yt) = load_fashion(args.dir)
    model = make_mlp()
    with torch.no_grad():
        for prm, w in zip(model.parameters(), weights):
            prm.copy_(torch.from_numpy(w))
        acc = float((model(xt).argmax(1) == yt).float().mean())
    print(json.dumps({"job": "rpc_ps_mlp_overlap" if args.overlap else "rpc_ps_mlp", "trainers": args.trainers, "epochs": args.epochs,
                      "samples": samples, "seconds": round(end - start, 3),
                      "samples_per_s": round(samples / (end - start), 1),
                      "test_accuracy": round(acc, 4)}), flush=True)


if __name__ == "__main__":
    main()
