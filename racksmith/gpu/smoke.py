"""Training smoke test: a small GPT trained with DDP on every local GPU (torchrun), on
deterministic synthetic data, for a few hundred steps. It prints loss, step time, tokens/s
and MFU for every batch (per-batch figures show a stall or a slow rank that an average
hides); rank 0 writes all steps to a JSON file that ``rules.smoke`` judges.

The data: token sequences x[t+1] = x[t] + c + noise (mod D), noise uniform in 0..3, drawn
from a generator seeded by (seed, step, rank); D (``data_vocab``, 1024) is smaller than the
model's vocabulary, which stays large because the output layer is a real share of the work.
Same seed, same batches, on any host. The loss falls from ln(vocab) (10.4) to ln(D) (6.9)
within tens of steps as the model learns which tokens occur, then towards ln(4) (1.4) as it
learns the rule; it cannot fall to zero. (With D = vocab, 300 steps see each token too few
times to learn the rule: measured on an H200, the loss only fell from 10.6 to 8.2.)

torch is imported only inside the functions that need it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from . import mfu as mfu_math
from . import torchrun


@dataclass(frozen=True)
class Config:
    vocab: int = 32768
    d_model: int = 1024
    n_layers: int = 12
    n_heads: int = 16
    seq_len: int = 1024
    batch: int = 16  # sequences per GPU per step
    steps: int = 300
    warmup: int = 10  # steps left out of the timing figures
    lr: float = 6e-4
    seed: int = 1234
    compile: bool = True
    increment: int = 7919  # c in x[t+1] = x[t] + c + noise
    data_vocab: int = 1024  # D: tokens the data uses (see the module docstring)

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    def flops_per_token(self) -> float:
        n = mfu_math.gpt_params(self.vocab, self.d_model, self.n_layers)
        return mfu_math.flops_per_token(n, self.n_layers, self.n_heads, self.head_dim, self.seq_len)


def build_model(cfg: Config):
    import torch
    from torch import nn
    from torch.nn import functional as F

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1 = nn.LayerNorm(cfg.d_model, bias=False)
            self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model, bias=False)
            self.proj = nn.Linear(cfg.d_model, cfg.d_model, bias=False)
            self.ln2 = nn.LayerNorm(cfg.d_model, bias=False)
            self.up = nn.Linear(cfg.d_model, 4 * cfg.d_model, bias=False)
            self.down = nn.Linear(4 * cfg.d_model, cfg.d_model, bias=False)

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
            shape = (b, t, cfg.n_heads, cfg.head_dim)
            q, k, v = (z.view(shape).transpose(1, 2) for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
            return x + self.down(F.gelu(self.up(self.ln2(x))))

    class GPT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tok = nn.Embedding(cfg.vocab, cfg.d_model)
            self.pos = nn.Embedding(cfg.seq_len, cfg.d_model)
            self.blocks = nn.ModuleList(Block() for _ in range(cfg.n_layers))
            self.ln = nn.LayerNorm(cfg.d_model, bias=False)
            self.head = nn.Linear(cfg.d_model, cfg.vocab, bias=False)
            self.head.weight = self.tok.weight  # tied: counted once in N
            for name, p in self.named_parameters():
                if p.dim() == 2:
                    std = (
                        0.02 / math.sqrt(2 * cfg.n_layers)
                        if name.endswith(("proj.weight", "down.weight"))
                        else 0.02
                    )
                    nn.init.normal_(p, mean=0.0, std=std)

        def forward(self, idx, targets):
            pos = torch.arange(idx.shape[1], device=idx.device)
            x = self.tok(idx) + self.pos(pos)
            for block in self.blocks:
                x = block(x)
            logits = self.head(self.ln(x))
            return F.cross_entropy(logits.float().view(-1, cfg.vocab), targets.view(-1))

    return GPT()


def batch(cfg: Config, step: int, rank: int, device):
    """Deterministic synthetic batch (inputs, targets) for this step and rank."""
    import torch

    gen = torch.Generator(device=device).manual_seed(cfg.seed * 1_000_003 + step * 8191 + rank)
    start = torch.randint(cfg.data_vocab, (cfg.batch, 1), device=device, generator=gen)
    noise = torch.randint(4, (cfg.batch, cfg.seq_len), device=device, generator=gen)
    seq = (start + torch.cumsum(noise + cfg.increment, dim=1)) % cfg.data_vocab
    seq = torch.cat([start, seq], dim=1)
    return seq[:, :-1].contiguous(), seq[:, 1:].contiguous()


def worker(cfg: Config, out: str) -> None:
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    from .sku import lookup

    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    device = torch.device("cuda", local)
    dist.init_process_group("nccl", device_id=device)
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(cfg.seed)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True

    model = build_model(cfg).to(device)
    n_params = sum(p.numel() for p in model.parameters()) - model.pos.weight.numel()
    expected = mfu_math.gpt_params(cfg.vocab, cfg.d_model, cfg.n_layers)
    if n_params != expected:
        raise RuntimeError(f"model has {n_params} parameters, the MFU formula assumes {expected}")
    ddp = DDP(model, device_ids=[local])
    step_fn = torch.compile(ddp) if cfg.compile else ddp
    opt = torch.optim.AdamW(
        model.parameters(), lr=cfg.lr, betas=(0.9, 0.95), weight_decay=0.1, fused=True
    )
    peak = lookup(torch.cuda.get_device_name(local)).peak_bf16_tflops
    flops_token = cfg.flops_per_token()
    tokens_step = cfg.batch * cfg.seq_len * world

    steps = []
    for step in range(cfg.steps):
        x, y = batch(cfg, step, rank, device)
        torch.cuda.synchronize()
        start = time.perf_counter()
        for group in opt.param_groups:
            group["lr"] = cfg.lr * min(1.0, (step + 1) / 20)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = step_fn(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        loss_value = loss.detach()
        dist.all_reduce(loss_value, op=dist.ReduceOp.AVG)
        value = float(loss_value.item())  # synchronises: the step is done on this rank
        seconds = time.perf_counter() - start
        took = torch.tensor([seconds], device=device)
        dist.all_reduce(took, op=dist.ReduceOp.MAX)  # the slowest rank sets the pace
        seconds = float(took.item())
        mfu = flops_token * tokens_step / seconds / (world * peak * 1e12)
        steps.append({"step": step, "loss": value, "seconds": seconds})
        if rank == 0:
            print(
                f"step {step:4d} loss {value:8.4f} dt {1000 * seconds:8.2f} ms "
                f"tok/s {tokens_step / seconds / 1000:7.1f}k MFU {100 * mfu:5.1f}%",
                flush=True,
            )
    if rank == 0:
        Path(out).write_text(
            json.dumps(
                {
                    "config": asdict(cfg),
                    "gpus": world,
                    "device": torch.cuda.get_device_name(local),
                    "n_params": n_params,
                    "flops_per_token": flops_token,
                    "tokens_per_step": tokens_step,
                    "peak_tflops": peak,
                    "torch": torch.__version__,
                    "steps": steps,
                },
                indent=1,
            )
        )
    dist.destroy_process_group()


def launch(gpus: int, workdir: Path, cfg: Config, *, timeout_s: float = 1200, echo=None):
    """Run the worker under torchrun on ``gpus`` GPUs; return the parsed result JSON. Its
    output (per-batch MFU, torchrun's and torch.compile's messages) goes to
    ``smoke-<gpus>gpu.log`` in ``workdir``, and each line to ``echo`` when given."""
    workdir.mkdir(parents=True, exist_ok=True)
    out = workdir / f"smoke-{gpus}gpu.json"
    out.unlink(missing_ok=True)
    argv, env = torchrun.command(
        gpus, "racksmith.gpu.smoke", "--out", str(out), "--config", json.dumps(asdict(cfg))
    )
    log_path = workdir / f"smoke-{gpus}gpu.log"
    rc = torchrun.run_logged(
        argv, env, log_path, timeout_s, what=f"smoke test on {gpus} GPUs", echo=echo
    )
    if rc != 0 or not out.is_file():
        raise RuntimeError(
            f"smoke test on {gpus} GPUs exited with {rc} (log {log_path}): "
            f"{torchrun.tail(log_path)}"
        )
    return json.loads(out.read_text())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="training smoke-test worker (run under torchrun)")
    parser.add_argument("--out", required=True)
    parser.add_argument("--config", default="{}", help="JSON overrides of Config fields")
    args = parser.parse_args(argv)
    worker(Config(**json.loads(args.config)), args.out)


if __name__ == "__main__":
    main()
