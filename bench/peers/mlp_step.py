#!/usr/bin/env python3
"""PyTorch peer of dainx's MLP training step (bench/peers).

The same model and step as nn.MLP + nn.Train: one embedding table per mode
(N(0,1)), concatenated, Linear+ReLU hidden layers, Linear(·,1), batch-mean MSE,
Adam (β₁ .9, β₂ .999, ε 1e-8, lr 1e-3), batch 1024, float32, on the CPU with
torch.set_num_threads(threads), or on a GPU with --device cuda (same model,
data generated on the host and moved to the device before timing; the timer
starts and stops after torch.cuda.synchronize()). It times whole steps after
a warm-up and prints one JSON object: steps/s, cells/s, ms per step, and the
loss of the last timed step (seeds fix the data and the initialisation, so
two runs with the same flags train on the same batches from the same
weights: their losses differ only by rounding).

GPU options, each a way to give PyTorch its best:

  --precision fp32|tf32  sets torch.backends.cuda.matmul.allow_tf32 and
                         torch.backends.cudnn.allow_tf32 (False for fp32, True
                         for tf32), explicitly in both modes.
  --fused                torch.optim.Adam(fused=True): one kernel for the
                         whole optimiser step.
  --graph                the whole training step (forward, loss, backward,
                         Adam) captured once in a torch.cuda.CUDAGraph and
                         replayed, as the PyTorch notes on whole-network
                         capture show: warm-up on a side stream, gradients
                         set to None before capture (so backward allocates
                         them from the graph's pool and every replay
                         overwrites them), Adam with capturable=True, and
                         static input tensors into which each step copies its
                         batch before the replay.

--serve: after the warm-up, print {"ready": true, ...} and then, for each
line N read from stdin, time N more steps (cycling over the --steps batches)
and print one JSON line; exit at end of input. benchrun uses it for
interleaved rounds against a warm peer.

Usage: mlp_step.py [--dims 1000,1000,1000] [--layers 150,1024,1024,128]
                   [--batch 1024] [--warmup 5] [--steps 30] [--threads 2]
                   [--device cpu|cuda] [--precision fp32|tf32] [--fused]
                   [--graph] [--serve]
"""
import argparse
import json
import re
import sys
import time
import warnings

import torch


class MLP(torch.nn.Module):
    def __init__(self, dims, layers):
        super().__init__()
        order = len(dims)
        width = layers[0] // order
        self.emb = torch.nn.ModuleList(torch.nn.Embedding(d, width) for d in dims)
        mods = []
        for i in range(1, len(layers)):
            mods += [torch.nn.Linear(layers[i - 1], layers[i]), torch.nn.ReLU()]
        mods.append(torch.nn.Linear(layers[-1], 1))
        self.mlp = torch.nn.Sequential(*mods)

    def forward(self, idx):
        x = torch.cat([e(idx[:, n]) for n, e in enumerate(self.emb)], dim=1)
        return self.mlp(x).squeeze(1)


def set_precision(precision):
    """Sets the TF32 flags for precision and returns the state read back."""
    on = precision == "tf32"
    with warnings.catch_warnings():
        # PyTorch ≥ 2.9 warns that these flags will give way to
        # fp32_precision; they still set it.
        warnings.simplefilter("ignore")
        torch.backends.cuda.matmul.allow_tf32 = on
        torch.backends.cudnn.allow_tf32 = on
        state = {
            "cuda.matmul.allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
            "cudnn.allow_tf32": bool(torch.backends.cudnn.allow_tf32),
        }
        try:
            state["float32_matmul_precision"] = torch.get_float32_matmul_precision()
        except Exception as e:  # noqa: BLE001 (report, do not fail)
            state["float32_matmul_precision"] = "error: %s" % e
        try:
            fp = getattr(torch.backends.cuda.matmul, "fp32_precision", None)
            if fp is not None:
                state["cuda.matmul.fp32_precision"] = str(fp)
        except Exception as e:  # noqa: BLE001
            state["cuda.matmul.fp32_precision"] = "error: %s" % e
    if state["cuda.matmul.allow_tf32"] != on:
        raise SystemExit("mlp_step.py: --precision %s: allow_tf32 reads back %s" % (precision, state["cuda.matmul.allow_tf32"]))
    return state


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dims", default="1000,1000,1000")
    ap.add_argument("--layers", default="150,1024,1024,128")
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--precision", default="fp32", choices=["fp32", "tf32"])
    ap.add_argument("--fused", action="store_true")
    ap.add_argument("--graph", action="store_true")
    ap.add_argument("--serve", action="store_true")
    a = ap.parse_args()
    dims = [int(v) for v in a.dims.split(",")]
    layers = [int(v) for v in a.layers.split(",")]
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    cuda = a.device == "cuda"
    if cuda and not torch.cuda.is_available():
        print("mlp_step.py: --device cuda: torch sees no CUDA device", file=sys.stderr)
        return 1
    if a.graph and not cuda:
        print("mlp_step.py: --graph needs --device cuda", file=sys.stderr)
        return 2
    if a.graph and a.warmup < 2:
        print("mlp_step.py: --graph needs --warmup 2 or more", file=sys.stderr)
        return 2
    if a.steps < 1:
        print("mlp_step.py: --steps must be at least 1", file=sys.stderr)
        return 2
    tf32 = set_precision(a.precision)
    variant = "+".join(v for v, on in (("fused", a.fused), ("graph", a.graph)) if on) or "plain"
    dev = torch.device(a.device)
    model = MLP(dims, layers).to(dev)
    kw = {}
    if a.fused:
        kw["fused"] = True
    if a.graph:
        kw["capturable"] = True
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8, **kw)
    loss_fn = torch.nn.MSELoss()
    n = a.warmup + a.steps
    idx = torch.stack([torch.randint(0, d, (n, a.batch)) for d in dims], dim=2).to(dev)
    vals = torch.randn(n, a.batch).to(dev)

    def sync():
        if cuda:
            torch.cuda.synchronize()

    def eager(i):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(idx[i]), vals[i])
        loss.backward()
        opt.step()
        return loss

    if a.graph:
        # Warm-up on a side stream (every step but the last), then capture
        # one whole step; the last warm-up step is the graph's first replay,
        # so the weights see the same batches as in the eager variants.
        static_idx = idx[0].clone()
        static_vals = vals[0].clone()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for i in range(a.warmup - 1):
                eager(i)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(graph):
            static_loss = loss_fn(model(static_idx), static_vals)
            static_loss.backward()
            opt.step()

        def step(i):
            static_idx.copy_(idx[i])
            static_vals.copy_(vals[i])
            graph.replay()
            return static_loss

        step(a.warmup - 1)
    else:
        step = eager
        for i in range(a.warmup):
            step(i)
    sync()

    # The BLAS torch was built against: "generic" means the system's
    # libblas.so.3 (Debian's python3-torch), else torch's own (pip: mkl).
    blas_info = re.findall(r"BLAS_INFO=([^,\s]+)", torch.__config__.show())
    meta = {
        "torch": torch.__version__,
        "blas_info": blas_info[0] if blas_info else "",
        "threads": torch.get_num_threads(),
        "device": torch.cuda.get_device_name(0) if cuda else "cpu",
        "precision": a.precision,
        "tf32": tf32,
        "fused": a.fused,
        "graph": a.graph,
        "variant": variant,
        "dims": dims,
        "layers": layers,
        "batch": a.batch,
        "warmup": a.warmup,
    }

    def timed(first, count):
        """Times count steps from batch first on (cycling over the timed
        batches) and returns seconds and the loss of the last step."""
        sync()
        t0 = time.perf_counter()
        loss = None
        for k in range(first, first + count):
            loss = step(a.warmup + k % a.steps)
        sync()
        sec = time.perf_counter() - t0
        return sec, float(loss.item())

    if a.serve:
        print(json.dumps(dict(meta, ready=True)), flush=True)
        done = 0
        for line in sys.stdin:
            line = line.strip()
            if not line:
                continue
            count = int(line)
            sec, loss = timed(done, count)
            done += count
            print(json.dumps({
                "steps": count,
                "seconds": sec,
                "ms_per_step": 1e3 * sec / count,
                "cells_per_s": count * a.batch / sec,
                "loss": loss,
            }), flush=True)
        return 0

    sec, loss = timed(0, a.steps)
    print(json.dumps(dict(meta, **{
        "steps": a.steps,
        "seconds": sec,
        "ms_per_step": 1e3 * sec / a.steps,
        "steps_per_s": a.steps / sec,
        "cells_per_s": a.steps * a.batch / sec,
        "loss": loss,
    })))
    return 0


if __name__ == "__main__":
    sys.exit(main())
