"""Reference outputs of the seeded tiny base models, computed with plain torch.

Follows the upstream modeling code of transformers (BertModel, XLMRobertaModel: embeddings, post-LN layers,
GELU erf; MPNetModel in reference_mpnet.py) and sentence-transformers (Pooling mean/CLS, Normalize), which is not ours: CI compares our engine,
our trainer's forward and our ONNX export with these outputs. Development time only (CI runs no Python):

    npx tsx scripts/write-tiny-models.ts /tmp/tiny-models
    /usr/bin/python3 scripts/reference-encoders.py /tmp/tiny-models test/fixtures/encoders
"""
import json
import math
import os
import struct
import sys

import torch

torch.set_default_dtype(torch.float64)  # the reference in float64; our fp32 is compared within a bound


def read_safetensors(path):
    with open(path, "rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(length))
        data = f.read()
    tensors = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        assert meta["dtype"] == "F32", name
        start, end = meta["data_offsets"]
        values = torch.frombuffer(bytearray(data[start:end]), dtype=torch.float32)
        tensors[name] = values.reshape(meta["shape"]).to(torch.float64)
    return tensors


def strip_prefix(tensors):
    # sentence-transformers saves the bare model; a task head's save adds bert., roberta. or mpnet.
    for prefix in ("bert.", "roberta.", "mpnet."):
        if any(k.startswith(prefix) for k in tensors):
            return {k[len(prefix):]: v for k, v in tensors.items() if k.startswith(prefix)}
    return tensors


def layer_norm(x, w, b, eps):
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, eps)


def linear(x, w, name):
    return x @ w[name + ".weight"].T + w[name + ".bias"]


def position_ids(family, ids, pad_token_id):
    if family == "bert":
        return torch.arange(len(ids))
    # XLMRobertaEmbeddings.create_position_ids_from_input_ids: positions count from padding_idx + 1 over
    # the non-pad tokens (a text has no pad inside it here).
    mask = (ids != pad_token_id).long()
    return torch.cumsum(mask, 0) * mask + pad_token_id


def bert_forward(config, w, ids):
    """BertModel / XLMRobertaModel over one unpadded text: the last hidden states [len, hidden]."""
    family = config["model_type"]
    eps = config["layer_norm_eps"]
    heads = config["num_attention_heads"]
    hidden = config["hidden_size"]
    dh = hidden // heads
    pos = position_ids(family, ids, config.get("pad_token_id", 0))
    x = (
        w["embeddings.word_embeddings.weight"][ids]
        + w["embeddings.position_embeddings.weight"][pos]
        + w["embeddings.token_type_embeddings.weight"][torch.zeros_like(ids)]
    )
    x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
    n = len(ids)
    for layer in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{layer}."
        q = linear(x, w, p + "attention.self.query").view(n, heads, dh).transpose(0, 1)
        k = linear(x, w, p + "attention.self.key").view(n, heads, dh).transpose(0, 1)
        v = linear(x, w, p + "attention.self.value").view(n, heads, dh).transpose(0, 1)
        scores = q @ k.transpose(-1, -2) / math.sqrt(dh)
        ctx = (torch.softmax(scores, dim=-1) @ v).transpose(0, 1).reshape(n, hidden)
        attn = linear(ctx, w, p + "attention.output.dense")
        x = layer_norm(attn + x, w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"], eps)
        inter = torch.nn.functional.gelu(linear(x, w, p + "intermediate.dense"))  # erf GELU, hidden_act "gelu"
        out = linear(inter, w, p + "output.dense")
        x = layer_norm(out + x, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], eps)
    return x


def read_pooling(folder):
    with open(os.path.join(folder, "1_Pooling", "config.json")) as f:
        pooling = json.load(f)
    with open(os.path.join(folder, "modules.json")) as f:
        modules = json.load(f)
    mode = "cls" if pooling["pooling_mode_cls_token"] else "mean"
    normalize = any(m["type"].endswith("Normalize") for m in modules)
    return mode, normalize


def pool(states, mode, normalize):
    out = states[0] if mode == "cls" else states.mean(0)
    if normalize:
        out = torch.nn.functional.normalize(out, p=2, dim=0)  # x / max(||x||, 1e-12)
    return out


def reference(folder, forwards):
    with open(os.path.join(folder, "config.json")) as f:
        config = json.load(f)
    with open(os.path.join(folder, "ids.json")) as f:
        case = json.load(f)
    forward = forwards.get(config["model_type"])
    if forward is None:
        raise SystemExit(f"{folder}: model_type {config['model_type']} has no reference forward")
    w = strip_prefix(read_safetensors(os.path.join(folder, "model.safetensors")))
    mode, normalize = read_pooling(folder)
    ids = torch.tensor(case["ids"], dtype=torch.long)
    pooled, hidden, start = [], [], 0
    for length in case["lengths"]:
        states = forward(config, w, ids[start : start + length])
        pooled.append([round(float(v), 7) for v in pool(states, mode, normalize)])
        # A few rows of the last hidden states: the first, the last and one between of each text.
        for row in sorted({0, length // 2, length - 1}):
            hidden.append([start + row, [round(float(v), 7) for v in states[row]]])
        start += length
    return {"name": case["name"], "lengths": case["lengths"], "ids": case["ids"], "pooled": pooled, "hidden": hidden}


def main():
    source, target = sys.argv[1], sys.argv[2]
    forwards = {"bert": bert_forward, "xlm-roberta": bert_forward}
    try:  # MPNet's forward lives in its own file beside this one
        from reference_mpnet import mpnet_forward  # type: ignore

        forwards["mpnet"] = mpnet_forward
    except ImportError:
        pass
    os.makedirs(target, exist_ok=True)
    for name in sorted(os.listdir(source)):
        folder = os.path.join(source, name)
        if not os.path.isfile(os.path.join(folder, "ids.json")):
            continue
        out = reference(folder, forwards)
        with open(os.path.join(target, name + ".json"), "w") as f:
            json.dump(out, f, separators=(",", ":"))
            f.write("\n")
        print(name, len(out["pooled"]), "texts")


if __name__ == "__main__":
    main()
