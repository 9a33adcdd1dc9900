#!/usr/bin/env python3
"""PyTorch CPU baseline for actrain's reference trainer (1 thread, batch 64, data in memory).

Trains linear regression on 100,000 x 100 synthetic rows, softmax regression and an MLP
784-256-10 on Fashion-MNIST (read from the gzipped IDX files with gzip + numpy), and prints one
JSON line per job: samples/s (training only, evaluation excluded) and the test metric.
The hyper-parameters match the PyTorch reference table by default.

Optional: exits 0 with a message when torch is not installed (it is not a dependency).
Usage: python3 bench/torch/torch_ref.py [--dir DIR] [--epochs-softmax 5] [--epochs-mlp 10] ...
"""
import argparse
import gzip
import json
import os
import struct
import sys
import time

try:
    import numpy as np
except ImportError:
    print("torch_ref: numpy is not installed; skipping (optional baseline)")
    sys.exit(0)
try:
    import torch
except ImportError:
    print("torch_ref: PyTorch is not installed (apt-get install python3-torch); skipping")
    sys.exit(0)


def read_idx(path):
    """An IDX file (gzipped or not) as a numpy array; raises ValueError naming the file."""
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] != 0x08:
        raise ValueError(f"{path}: not an unsigned-byte IDX file")
    ndim = raw[3]
    dims = struct.unpack(">" + "I" * ndim, raw[4:4 + 4 * ndim])
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    if data.size != int(np.prod(dims)):
        raise ValueError(f"{path}: {data.size} bytes of data, header says {dims}")
    return data.reshape(dims)


def find(directory, stem):
    for name in (stem + ".gz", stem):
        p = os.path.join(directory, name)
        if os.path.exists(p):
            return p
    raise FileNotFoundError(f"{directory}: no {stem}[.gz]")


def load_fashion(directory):
    def part(prefix):
        x = read_idx(find(directory, f"{prefix}-images-idx3-ubyte")).astype(np.float32) / 255.0
        y = read_idx(find(directory, f"{prefix}-labels-idx1-ubyte")).astype(np.int64)
        return torch.from_numpy(x.reshape(len(x), -1)), torch.from_numpy(y)
    return part("train"), part("t10k")


def train(model, loss_fn, x, y, epochs, lr, momentum, batch, seed):
    """Plain mini-batch SGD over shuffled in-memory data; returns training seconds."""
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum)
    gen = torch.Generator().manual_seed(seed)
    seconds = 0.0
    for _ in range(epochs):
        t0 = time.perf_counter()
        order = torch.randperm(len(x), generator=gen)
        for i in range(0, len(x), batch):
            idx = order[i:i + batch]
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(x[idx]), y[idx])
            loss.backward()
            opt.step()
        seconds += time.perf_counter() - t0
    return seconds


def report(job, samples, seconds, **metrics):
    line = {"job": job, "samples": samples, "seconds": round(seconds, 3),
            "samples_per_s": round(samples / seconds, 1), "threads": torch.get_num_threads()}
    line.update(metrics)
    print(json.dumps(line), flush=True)


def linear_job(args):
    g = np.random.default_rng(args.seed)
    rows, feats = args.linear_rows, 100
    x = g.standard_normal((rows + 10000, feats)).astype(np.float32)
    w = g.standard_normal(feats).astype(np.float32)
    y = (x @ w + 0.5 + 0.01 * g.standard_normal(rows + 10000)).astype(np.float32)
    xt, yt = torch.from_numpy(x[:rows]), torch.from_numpy(y[:rows]).unsqueeze(1)
    model = torch.nn.Linear(feats, 1)
    torch.nn.init.zeros_(model.weight)
    torch.nn.init.zeros_(model.bias)
    sec = train(model, torch.nn.functional.mse_loss, xt, yt, args.epochs_linear, 0.01, 0,
                args.batch, args.seed)
    # closed form with intercept, in float64
    a = np.hstack([x[:rows].astype(np.float64), np.ones((rows, 1))])
    sol, *_ = np.linalg.lstsq(a, y[:rows].astype(np.float64), rcond=None)
    best = float(np.mean((a @ sol - y[:rows]) ** 2))
    with torch.no_grad():
        mse = float(torch.nn.functional.mse_loss(model(xt), yt))
    report("linear", rows * args.epochs_linear, sec, train_mse=mse, closed_form_mse=best,
           relative_gap=(mse - best) / best, lr=0.01, epochs=args.epochs_linear)


def classify_job(name, model, data, epochs, lr, args):
    (x, y), (xt, yt) = data
    sec = train(model, torch.nn.functional.cross_entropy, x, y, epochs, lr, 0, args.batch, args.seed)
    with torch.no_grad():
        acc = float((model(xt).argmax(1) == yt).float().mean())
    report(name, len(x) * epochs, sec, test_accuracy=round(acc, 4), lr=lr, epochs=epochs)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dir", default=os.environ.get("ACTRAIN_FASHION_MNIST",
                                                   "/usr/share/datasets/fashion-mnist"))
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--linear-rows", type=int, default=100000)
    p.add_argument("--epochs-linear", type=int, default=3)
    p.add_argument("--epochs-softmax", type=int, default=5)
    p.add_argument("--epochs-mlp", type=int, default=10)
    p.add_argument("--jobs", default="linear,softmax,mlp")
    args = p.parse_args()
    torch.set_num_threads(args.threads)  # 2 threads are 4-5x slower on 2 cores
    torch.manual_seed(args.seed)
    jobs = args.jobs.split(",")
    if "linear" in jobs:
        linear_job(args)
    if "softmax" in jobs or "mlp" in jobs:
        data = load_fashion(args.dir)
        if "softmax" in jobs:
            classify_job("softmax", torch.nn.Linear(784, 10), data, args.epochs_softmax, 0.1, args)
        if "mlp" in jobs:
            mlp = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(),
                                      torch.nn.Linear(256, 10))
            classify_job("mlp", mlp, data, args.epochs_mlp, 0.1, args)


if __name__ == "__main__":
    main()
