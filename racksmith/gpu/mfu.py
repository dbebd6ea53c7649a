"""Model FLOPs utilisation, counted the way nanoGPT and the PaLM paper count it.

FLOPs per token = 6 N + 12 L H Q T: 6 N for the forward and backward matrix products over
N parameters (position embeddings excluded: they are a lookup, not a product; the token
embedding is counted because, tied, it is also the output projection), and 12 L H Q T for
attention scores and values (L layers, H heads of size Q, sequence length T; the full square
is counted even with a causal mask). MFU = FLOPs per token x tokens per second / (GPUs x
dense bf16 peak). Recompute is not counted (that would be HFU).
"""

from __future__ import annotations


def gpt_params(vocab: int, d_model: int, n_layers: int, *, mlp_ratio: int = 4) -> int:
    """Parameters of the smoke test's GPT, position embeddings excluded: tied token
    embedding, per layer attention (4 d^2) + MLP (2 ratio d^2) + two LayerNorm weights, and
    the final LayerNorm. No biases."""
    per_layer = 4 * d_model * d_model + 2 * mlp_ratio * d_model * d_model + 2 * d_model
    return vocab * d_model + n_layers * per_layer + d_model


def flops_per_token(
    n_params: int, n_layers: int, n_heads: int, head_dim: int, seq_len: int
) -> float:
    return 6.0 * n_params + 12.0 * n_layers * n_heads * head_dim * seq_len


def mfu(flops_token: float, tokens_per_s: float, gpus: int, peak_tflops: float) -> float:
    if gpus <= 0 or peak_tflops <= 0:
        raise ValueError("gpus and peak must be positive")
    return flops_token * tokens_per_s / (gpus * peak_tflops * 1e12)
