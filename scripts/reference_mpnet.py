"""MPNet's reference forward for scripts/reference-encoders.py, in plain torch after transformers' MPNetModel
(modeling_mpnet.py): MPNetEmbeddings (word + position from padding_idx + 1, no token types, LayerNorm),
MPNetEncoder.compute_position_bias / relative_position_bucket (one table for every layer, bidirectional, 32
buckets, max_distance 128), MPNetSelfAttention (q, k, v, o; the bias added to the scaled scores), and
BERT's post-LN layer under MPNet's names. Development time only; CI runs no Python.
"""
import math

import torch


def relative_position_bucket(relative_position, num_buckets=32, max_distance=128):
    # MPNetEncoder.relative_position_bucket, line for line (the logarithm of a float32 tensor).
    ret = 0
    n = -relative_position
    num_buckets //= 2
    ret += (n < 0).to(torch.long) * num_buckets
    n = torch.abs(n)
    max_exact = num_buckets // 2
    is_small = n < max_exact
    val_if_large = max_exact + (
        torch.log(n.float() / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact)
    ).to(torch.long)
    val_if_large = torch.min(val_if_large, torch.full_like(val_if_large, num_buckets - 1))
    ret += torch.where(is_small, n, val_if_large)
    return ret


def compute_position_bias(table, n):
    # MPNetEncoder.compute_position_bias without position_ids: positions 0..n-1, num_buckets 32 whatever
    # config.json says; [heads, n, n].
    context = torch.arange(n, dtype=torch.long)[:, None]
    memory = torch.arange(n, dtype=torch.long)[None, :]
    bucket = relative_position_bucket(memory - context, num_buckets=32)
    return table[bucket].permute(2, 0, 1)


def layer_norm(x, w, b, eps):
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, eps)


def linear(x, w, name):
    return x @ w[name + ".weight"].T + w[name + ".bias"]


def mpnet_forward(config, w, ids):
    """MPNetModel over one unpadded text: the last hidden states [len, hidden]."""
    eps = config["layer_norm_eps"]
    heads = config["num_attention_heads"]
    hidden = config["hidden_size"]
    dh = hidden // heads
    pad = config.get("pad_token_id", 1)
    # MPNetEmbeddings.create_position_ids_from_input_ids: from padding_idx + 1 over the non-pad tokens.
    mask = (ids != pad).long()
    pos = torch.cumsum(mask, 0) * mask + pad
    x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][pos]
    x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
    n = len(ids)
    bias = compute_position_bias(w["encoder.relative_attention_bias.weight"], n)
    for layer in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{layer}."
        q = linear(x, w, p + "attention.attn.q").view(n, heads, dh).transpose(0, 1)
        k = linear(x, w, p + "attention.attn.k").view(n, heads, dh).transpose(0, 1)
        v = linear(x, w, p + "attention.attn.v").view(n, heads, dh).transpose(0, 1)
        scores = q @ k.transpose(-1, -2) / math.sqrt(dh) + bias
        ctx = (torch.softmax(scores, dim=-1) @ v).transpose(0, 1).reshape(n, hidden)
        attn = linear(ctx, w, p + "attention.attn.o")
        x = layer_norm(attn + x, w[p + "attention.LayerNorm.weight"], w[p + "attention.LayerNorm.bias"], eps)
        inter = torch.nn.functional.gelu(linear(x, w, p + "intermediate.dense"))  # erf GELU, hidden_act "gelu"
        out = linear(inter, w, p + "output.dense")
        x = layer_norm(out + x, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], eps)
    return x
