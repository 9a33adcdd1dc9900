#!/usr/bin/env python3
"""PyTorch CPU baseline for actrain's sparse CTR models (logistic regression and a factorization machine).

Reads LIBSVM files (`label id:value ...`, labels 0/1 or -1/+1, ids in [0, --id-space)) into
numpy CSR arrays, trains with mini-batches over a seeded shuffle each epoch using sparse
embedding gradients (EmbeddingBag / Embedding with sparse=True), evaluates on the test file
and prints one JSON line: samples/s of the training loop only (parsing and evaluation
excluded), test AUC (rank based, ties averaged) and test log loss.

  lr: logit = b + sum_i w[id_i] x_i                       (EmbeddingBag(id_space, 1), sum)
  fm: lr + 0.5 * sum_f ((sum_i v_if x_i)^2 - sum_i (v_if x_i)^2)   (Embedding(id_space, 1+k))

Optimizers: adagrad (torch.optim.Adagrad on every parameter), sgd (torch.optim.SGD),
sparseadam (torch.optim.SparseAdam on the embeddings + torch.optim.Adam on the bias).
Init: linear weights and bias zeros (uniform(-s, s) for the linear weights with
--init-scale-linear s > 0); fm factors uniform(-s, s), s = --init-scale, seeded by --seed.

Optional: exits 0 with a message when torch is not installed (it is not a dependency).
Usage: python3 bench/torch/torch_sparse.py --train FILE --test FILE --id-space N
           [--model lr|fm] [--dim 8] [--optim adagrad|sgd|sparseadam] [--lr 0.05]
           [--epochs 1] [--batch 256] [--threads 1] [--seed 42] [--init-scale 0.01]
"""
import argparse
import json
import sys
import time

try:
    import numpy as np
except ImportError:
    print("torch_sparse: numpy is not installed; skipping (optional baseline)")
    sys.exit(0)
try:
    import torch
except ImportError:
    print("torch_sparse: PyTorch is not installed (apt-get install python3-torch); skipping")
    sys.exit(0)


class Csr:
    """Rows of a LIBSVM file: labels (n,) float32 0/1, offsets (n+1,) int64, ids int64, vals float32."""

    def __init__(self, labels, offsets, ids, vals):
        self.labels, self.offsets, self.ids, self.vals = labels, offsets, ids, vals

    def __len__(self):
        return len(self.labels)

    def permuted(self, perm):
        """The rows in the order perm, as a new Csr (vectorized gather, no Python loop)."""
        counts = np.diff(self.offsets)[perm]
        offsets = np.zeros(len(perm) + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        # entry j of new row r comes from old entry old_start[perm[r]] + (j - new_start[r])
        shift = np.repeat(self.offsets[:-1][perm] - offsets[:-1], counts)
        src = np.arange(offsets[-1], dtype=np.int64) + shift
        return Csr(self.labels[perm], offsets, self.ids[src], self.vals[src])


def read_libsvm(path, id_space):
    """A LIBSVM file as a Csr; raises ValueError naming the file and line on bad input."""
    with open(path, "rb") as f:
        data = f.read()
    lines = data.split(b"\n")
    # entries per non-blank line; blank (whitespace-only) lines are skipped by the number parse too
    counts = np.fromiter((ln.count(b":") for ln in lines if not ln.isspace() and ln),
                         dtype=np.int64)
    text = data.replace(b":", b" ")
    # integer-only files (values all 1, say) parse ~4x faster as int64 than through strtod
    integral = not text.translate(None, b"0123456789+- \t\r\n")
    nums = np.fromstring(text, dtype=np.int64 if integral else np.float64, sep=" ")
    del text
    expected = int(len(counts) + 2 * counts.sum())
    if nums.size != expected:
        # find the first line that does not parse as `label id:value ...` to name it
        for no, ln in enumerate(lines, 1):
            toks = ln.split()
            try:
                if toks:
                    float(toks[0])
                    for t in toks[1:]:
                        i, v = t.split(b":")
                        int(i), float(v)
            except ValueError:
                raise ValueError(f"{path}:{no}: not `label id:value ...`: {ln[:80]!r}") from None
        raise ValueError(f"{path}: parsed {nums.size} numbers, expected {expected}")
    row_len = 1 + 2 * counts
    starts = np.zeros(len(counts), dtype=np.int64)
    np.cumsum(row_len[:-1], out=starts[1:])
    is_label = np.zeros(nums.size, dtype=bool)
    is_label[starts] = True
    pairs = nums[~is_label]
    ids_n = pairs[0::2]
    ids = np.ascontiguousarray(ids_n, dtype=np.int64)
    if ids.size and (ids.min() < 0 or ids.max() >= id_space or
                     (not integral and np.any(ids != ids_n))):
        raise ValueError(f"{path}: ids must be integers in [0, {id_space}); saw "
                         f"min {ids_n.min()} max {ids_n.max()}")
    labels = (nums[starts] > 0).astype(np.float32)
    offsets = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return Csr(labels, offsets, ids, pairs[1::2].astype(np.float32))


class SparseLR(torch.nn.Module):
    def __init__(self, id_space, init_scale_linear):
        super().__init__()
        self.w = torch.nn.EmbeddingBag(id_space, 1, mode="sum", sparse=True)
        init_linear(self.w.weight, init_scale_linear)
        self.bias = torch.nn.Parameter(torch.zeros(1))

    def embeddings(self):
        return [self.w.weight]

    def forward(self, ids, vals, offsets, seg, rows):
        return self.w(ids, offsets, per_sample_weights=vals).squeeze(1) + self.bias


class SparseFM(torch.nn.Module):
    """Column 0 of the table is the linear weight, columns 1..k the factors: one lookup, one
    sparse gradient per step (the optimizers here are elementwise, so this is the same model
    as separate linear and factor tables)."""

    def __init__(self, id_space, dim, init_scale, init_scale_linear):
        super().__init__()
        self.v = torch.nn.Embedding(id_space, 1 + dim, sparse=True)
        with torch.no_grad():
            self.v.weight[:, 1:].uniform_(-init_scale, init_scale)
            init_linear(self.v.weight[:, :1], init_scale_linear)
        self.bias = torch.nn.Parameter(torch.zeros(1))

    def embeddings(self):
        return [self.v.weight]

    def forward(self, ids, vals, offsets, seg, rows):
        ex = self.v(ids) * vals.unsqueeze(1)                        # (nnz, 1+k): w x | v x
        sums = torch.zeros(rows, ex.shape[1]).index_add_(0, seg, ex)  # (B, 1+k)
        f = ex[:, 1:]
        sq = torch.zeros(rows).index_add_(0, seg, (f * f).sum(1))   # sum_i |v_i x_i|^2
        s = sums[:, 1:]
        return self.bias + sums[:, 0] + 0.5 * ((s * s).sum(1) - sq)


def init_linear(weight, scale):
    with torch.no_grad():
        if scale > 0:
            weight.uniform_(-scale, scale)
        else:
            weight.zero_()


def make_optimizers(model, name, lr):
    emb = model.embeddings()
    if name == "adagrad":
        return [torch.optim.Adagrad(emb + [model.bias], lr=lr)]
    if name == "sgd":
        return [torch.optim.SGD(emb + [model.bias], lr=lr)]
    if name == "sparseadam":
        return [torch.optim.SparseAdam(emb, lr=lr), torch.optim.Adam([model.bias], lr=lr)]
    raise ValueError(f"unknown optimizer {name}")


def batch_tensors(t, lo, hi):
    """ids, vals, offsets (relative), per-entry row index and row count of rows [lo, hi)."""
    a, b = int(t["offsets"][lo]), int(t["offsets"][hi])
    seg = t["seg"][a:b] - lo if t["seg"] is not None else None
    return t["ids"][a:b], t["vals"][a:b], t["offsets"][lo:hi] - a, seg, hi - lo


def to_tensors(csr, need_seg):
    t = {"ids": torch.from_numpy(csr.ids), "vals": torch.from_numpy(csr.vals),
         "offsets": torch.from_numpy(csr.offsets), "labels": torch.from_numpy(csr.labels)}
    counts = np.diff(csr.offsets)
    t["seg"] = (torch.from_numpy(np.repeat(np.arange(len(csr), dtype=np.int64), counts))
                if need_seg else None)
    return t


def train(model, opts, data, epochs, batch, seed, need_seg):
    """Mini-batch training over a seeded shuffle per epoch; returns training seconds."""
    loss_fn = torch.nn.BCEWithLogitsLoss()
    g = np.random.default_rng(seed)
    seconds = 0.0
    for _ in range(epochs):
        t0 = time.perf_counter()
        t = to_tensors(data.permuted(g.permutation(len(data))), need_seg)
        for lo in range(0, len(data), batch):
            hi = min(lo + batch, len(data))
            for o in opts:
                o.zero_grad(set_to_none=True)
            loss = loss_fn(model(*batch_tensors(t, lo, hi)), t["labels"][lo:hi])
            loss.backward()
            for o in opts:
                o.step()
        seconds += time.perf_counter() - t0
    return seconds


def predict(model, data, need_seg, batch=8192):
    t = to_tensors(data, need_seg)
    out = []
    with torch.no_grad():
        for lo in range(0, len(data), batch):
            out.append(model(*batch_tensors(t, lo, min(lo + batch, len(data)))))
    return torch.cat(out).double().numpy() if out else np.zeros(0)


def auc(scores, labels):
    """Area under the ROC curve from ranks, tied scores sharing their average rank."""
    order = np.argsort(scores, kind="mergesort")
    s = scores[order]
    n = len(s)
    # tie groups [first, last) in sorted order; average 1-based rank = (first + last + 1) / 2
    first = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])
    last = np.r_[first[1:], n]
    ranks = np.empty(n, dtype=np.float64)
    ranks[order] = np.repeat((first + last + 1) / 2.0, last - first)
    pos = labels > 0.5
    p, q = int(pos.sum()), int(n - pos.sum())
    if p == 0 or q == 0:
        return float("nan")
    return float((ranks[pos].sum() - p * (p + 1) / 2.0) / (p * q))


def log_loss(logits, labels):
    """Mean binary cross-entropy of logits, computed stably."""
    return float(np.mean(np.logaddexp(0.0, logits) - labels * logits))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--train", required=True, help="LIBSVM training file")
    p.add_argument("--test", required=True, help="LIBSVM test file")
    p.add_argument("--id-space", type=int, default=0,
                   help="ids are in [0, N); 0: the largest id in either file + 1")
    p.add_argument("--model", choices=["lr", "fm"], default="lr")
    p.add_argument("--dim", type=int, default=8, help="fm factor dimension k")
    p.add_argument("--optim", choices=["adagrad", "sgd", "sparseadam"], default="adagrad")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--init-scale", type=float, default=0.01,
                   help="fm factors start uniform(-s, s)")
    p.add_argument("--init-scale-linear", type=float, default=0.0,
                   help="linear weights start uniform(-s, s); 0: zeros")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)

    t0 = time.perf_counter()
    id_space = args.id_space if args.id_space > 0 else 1 << 62
    try:
        tr, te = read_libsvm(args.train, id_space), read_libsvm(args.test, id_space)
    except (OSError, ValueError) as e:
        raise SystemExit(f"torch_sparse: {e}") from None
    if args.id_space <= 0:
        id_space = int(max(tr.ids.max(initial=-1), te.ids.max(initial=-1))) + 1
    parse_seconds = time.perf_counter() - t0
    if len(tr) == 0:
        raise SystemExit(f"torch_sparse: {args.train}: no rows")

    fm = args.model == "fm"
    model = (SparseFM(id_space, args.dim, args.init_scale, args.init_scale_linear) if fm
             else SparseLR(id_space, args.init_scale_linear))
    opts = make_optimizers(model, args.optim, args.lr)
    sec = train(model, opts, tr, args.epochs, args.batch, args.seed, fm)
    z = predict(model, te, fm)
    y = te.labels.astype(np.float64)
    line = {"peer": "pytorch", "model": args.model, "optim": args.optim,
            "threads": torch.get_num_threads(), "batch": args.batch, "epochs": args.epochs,
            "train_rows": len(tr), "samples_per_s": round(len(tr) * args.epochs / sec, 1),
            "train_seconds": round(sec, 3), "test_auc": round(auc(z, y), 6),
            "test_log_loss": round(log_loss(z, y), 6), "torch": torch.__version__,
            "lr": args.lr, "id_space": id_space, "test_rows": len(te),
            "parse_seconds": round(parse_seconds, 3)}
    if fm:
        line["dim"] = args.dim
    print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
