#!/usr/bin/env python3
"""PyTorch baseline for actrain's GPU MLP benchmark.

Trains the same MLPs actrain does (784-256-10 and 784-4096-4096-10, ReLU, softmax
cross-entropy averaged over the batch, plain SGD lr 0.1) on random Fashion-MNIST-sized data
(784 features in [0, 1), 10 classes) for --steps steps per configuration, and prints one JSON
line: {"bench": "torch_mlp", ..., "results": [{"model", "batch", "samples_per_s", ...}]}.

Data lives on the GPU by default (PyTorch's best case); --host-data instead copies each batch
from pinned host memory, as an actrain GPU worker does. --graph captures one whole training step
(forward, loss, backward, SGD step) in a CUDA graph and replays it, so no Python or launch
overhead is left per step: PyTorch's strongest plain baseline for small models. TF32 is off
unless --tf32 (torch.set_float32_matmul_precision), matching actrain's default fp32 sgemm.
Timing: CUDA events around the timed steps after --warmup steps.
If torch or a GPU is missing it prints {"bench": "torch_mlp", "skipped": "<why>"} and exits 0.
"""
import argparse
import json
import sys

MODELS = {"784-256-10": [784, 256, 10], "784-4096-4096-10": [784, 4096, 4096, 10]}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=200, help="timed SGD steps per configuration")
    p.add_argument("--warmup", type=int, default=20, help="untimed steps first")
    p.add_argument("--models", default=",".join(MODELS), help="comma list of " + ", ".join(MODELS))
    p.add_argument("--batches", default="64,512", help="comma list of batch sizes")
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--tf32", action="store_true", help="allow TF32 tensor cores in matmuls")
    p.add_argument("--host-data", action="store_true", help="upload every batch from pinned host memory")
    p.add_argument("--graph", action="store_true", help="replay the whole step as one CUDA graph")
    p.add_argument("--device", default="cuda", help="torch device (cuda, cuda:N; cpu only for testing)")
    p.add_argument("--seed", type=int, default=1)
    return p.parse_args()


def skip(why):
    print(json.dumps({"bench": "torch_mlp", "skipped": why}))
    sys.exit(0)


def build(torch, dims):
    layers = []
    for i in range(len(dims) - 1):
        layers.append(torch.nn.Linear(dims[i], dims[i + 1]))
        if i + 2 < len(dims):
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


def run_one(torch, args, name, batch):
    dev = torch.device(args.device)
    torch.manual_seed(args.seed)
    model = build(torch, MODELS[name]).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    loss_fn = torch.nn.CrossEntropyLoss()
    pool = 16  # distinct batches, cycled, so no step sees a cached result
    gen = torch.Generator().manual_seed(args.seed)
    x = torch.rand(pool, batch, 784, generator=gen)
    y = torch.randint(0, 10, (pool, batch), generator=gen)
    if args.host_data and dev.type == "cuda":
        x, y = x.pin_memory(), y.pin_memory()
    else:
        x, y = x.to(dev), y.to(dev)

    def step(i):
        xb, yb = x[i % pool], y[i % pool]
        if args.host_data:
            xb, yb = xb.to(dev, non_blocking=True), yb.to(dev, non_blocking=True)
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(xb), yb)
        loss.backward()
        opt.step()
        return loss

    if args.graph:
        # Whole-network capture as PyTorch's CUDA graph notes show it: warm up on a side stream,
        # capture with the gradients unset (backward then writes, not accumulates, them), and
        # feed each step by copying its batch into the captured input tensors.
        static_x, static_y = x[0].to(dev).clone(), y[0].to(dev).clone()
        side = torch.cuda.Stream(dev)
        side.wait_stream(torch.cuda.current_stream(dev))
        with torch.cuda.stream(side):
            for _ in range(3):
                opt.zero_grad(set_to_none=True)
                loss_fn(model(static_x), static_y).backward()
                opt.step()
        torch.cuda.current_stream(dev).wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(graph):
            static_loss = loss_fn(model(static_x), static_y)
            static_loss.backward()
            opt.step()

        def step(i):  # noqa: F811 (the graph replaces the eager step)
            xb, yb = x[i % pool], y[i % pool]
            static_x.copy_(xb, non_blocking=True)
            static_y.copy_(yb, non_blocking=True)
            graph.replay()
            return static_loss

    for i in range(args.warmup):
        loss = step(i)
    if dev.type == "cuda":
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize(dev)
        start.record()
        for i in range(args.steps):
            loss = step(i)
        stop.record()
        stop.synchronize()
        seconds = start.elapsed_time(stop) / 1e3
    else:
        import time
        t0 = time.perf_counter()
        for i in range(args.steps):
            loss = step(i)
        seconds = time.perf_counter() - t0
    return {
        "model": name,
        "batch": batch,
        "steps": args.steps,
        "seconds": round(seconds, 6),
        "samples_per_s": round(args.steps * batch / seconds, 1),
        "final_loss": round(float(loss.detach()), 5),
    }


def main():
    args = parse_args()
    for name in args.models.split(","):
        if name not in MODELS:
            sys.exit("--models: unknown model %r (known: %s)" % (name, ", ".join(MODELS)))
    try:
        import torch
    except ImportError as e:
        skip("torch is not installed: %s" % e)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        skip("torch %s sees no CUDA device" % torch.__version__)
    if args.graph and not args.device.startswith("cuda"):
        sys.exit("--graph needs a CUDA device")
    torch.set_float32_matmul_precision("high" if args.tf32 else "highest")
    results = []
    for name in args.models.split(","):
        for b in args.batches.split(","):
            try:
                results.append(run_one(torch, args, name, int(b)))
            except Exception as e:  # one failed configuration must not hide the others
                results.append({"model": name, "batch": int(b), "error": "%s: %s" % (type(e).__name__, e)})
    dev = torch.device(args.device)
    print(json.dumps({
        "bench": "torch_mlp",
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu",
        "tf32": args.tf32,
        "host_data": args.host_data,
        "graph": args.graph,
        "optimizer": "sgd lr %g" % args.lr,
        "results": results,
    }))


if __name__ == "__main__":
    main()
