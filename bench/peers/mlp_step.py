#!/usr/bin/env python3
"""PyTorch peer of dainx's MLP training step (bench/peers).

The same model and step as nn.MLP + nn.Train: one embedding table per mode
(N(0,1)), concatenated, Linear+ReLU hidden layers, Linear(·,1), batch-mean MSE,
Adam (β₁ .9, β₂ .999, ε 1e-8, lr 1e-3), batch 1024, float32, on the CPU with
torch.set_num_threads(threads), or on a GPU with --device cuda (same model,
data generated on the host and moved to the device before timing; the timer
stops after torch.cuda.synchronize()). It times whole steps after a warm-up
and prints one JSON object: steps/s, cells/s, ms per step.

Usage: mlp_step.py [--dims 1000,1000,1000] [--layers 150,1024,1024,128]
                   [--batch 1024] [--warmup 5] [--steps 30] [--threads 2]
                   [--device cpu|cuda]
"""
import argparse
import json
import sys
import time

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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dims", default="1000,1000,1000")
    ap.add_argument("--layers", default="150,1024,1024,128")
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    a = ap.parse_args()
    dims = [int(v) for v in a.dims.split(",")]
    layers = [int(v) for v in a.layers.split(",")]
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    if a.device == "cuda" and not torch.cuda.is_available():
        print("mlp_step.py: --device cuda: torch sees no CUDA device", file=sys.stderr)
        return 1
    dev = torch.device(a.device)
    model = MLP(dims, layers).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8)
    loss_fn = torch.nn.MSELoss()
    n = a.warmup + a.steps
    idx = torch.stack([torch.randint(0, d, (n, a.batch)) for d in dims], dim=2).to(dev)
    vals = torch.randn(n, a.batch).to(dev)

    def sync():
        if a.device == "cuda":
            torch.cuda.synchronize()

    def step(i):
        opt.zero_grad()
        loss = loss_fn(model(idx[i]), vals[i])
        loss.backward()
        opt.step()
        return loss

    for i in range(a.warmup):
        step(i)
    sync()
    t0 = time.perf_counter()
    for i in range(a.warmup, n):
        step(i)
    sync()
    sec = time.perf_counter() - t0
    print(json.dumps({
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "device": torch.cuda.get_device_name(0) if a.device == "cuda" else "cpu",
        "dims": dims,
        "layers": layers,
        "batch": a.batch,
        "steps": a.steps,
        "seconds": sec,
        "ms_per_step": 1e3 * sec / a.steps,
        "steps_per_s": a.steps / sec,
        "cells_per_s": a.steps * a.batch / sec,
    }))


if __name__ == "__main__":
    sys.exit(main())
