#!/usr/bin/env python3
"""Writes the SentencePiece Unigram tokenizer.json fixtures of test/fixtures/tokenizers/.

    /usr/bin/python3 scripts/make-unigram-fixtures.py

Needs Debian's python3-sentencepiece. The corpus is the error messages of zod's
locales and yargs' locales (node_modules): some forty languages in Latin,
Cyrillic, Greek, Arabic, Hebrew, Armenian, Georgian, Devanagari, Bengali,
Gujarati, Tamil, Thai, Hangul and CJK scripts. Each model is trained here and
converted to the tokenizer.json layout Hugging Face's XLM-RoBERTa conversion
writes (convert_slow_tokenizer.py): `<s> <pad> </s> <unk>` first, then the
SentencePiece pieces after its own three control pieces, then `<mask>`; the
Precompiled normalizer carries the model's precompiled_charsmap; Metaspace
with '▁' and prepend_scheme "always".

- unigram-xlmr.json: nmt_nfkc charsmap, Metaspace alone, TemplateProcessing
  `<s> $A </s>`, no byte fallback (unknown characters become `<unk>`).
- unigram-byte-fallback.json: nmt_nfkc_cf charsmap (case folded) followed by
  Replace(" {2,}" -> " "), WhitespaceSplit then Metaspace, RobertaProcessing,
  byte_fallback (unknown characters become their UTF-8 bytes, `<0xXX>`).

Training is deterministic for a given corpus and sentencepiece version, so
rerunning reproduces the committed files.
"""
import base64
import glob
import json
import os
import re
import tempfile

import struct

import sentencepiece as spm

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "test", "fixtures", "tokenizers")


def corpus_lines():
    lines = []
    string_literal = re.compile(r"""(["'`])((?:\\.|(?!\1).)*)\1""")
    for path in sorted(glob.glob(os.path.join(ROOT, "node_modules/zod/v4/locales/*.js"))):
        with open(path, encoding="utf-8") as f:
            for match in string_literal.finditer(f.read()):
                text = match.group(2).replace("\\n", " ").replace("\\", "")
                if len(text) >= 3 and not text.startswith(("./", "../")):
                    lines.append(text)
    for path in sorted(glob.glob(os.path.join(ROOT, "node_modules/yargs/locales/*.json"))):
        with open(path, encoding="utf-8") as f:
            for value in json.load(f).values():
                for text in value.values() if isinstance(value, dict) else [value]:
                    lines.append(text.replace("%s", "x"))
    # Unique, in a fixed order.
    return sorted(set(lines))


def train(corpus_path, prefix, rule, byte_fallback, vocab_size):
    spm.SentencePieceTrainer.train(
        input=corpus_path,
        model_prefix=prefix,
        model_type="unigram",
        vocab_size=vocab_size,
        hard_vocab_limit=False,
        normalization_rule_name=rule,
        byte_fallback=byte_fallback,
        character_coverage=0.995,
        num_threads=1,
        seed_sentencepiece_size=200000,
        minloglevel=2,
    )
    with open(prefix + ".model", "rb") as f:
        return read_model_proto(f.read())


def protobuf_fields(data):
    """(field number, wire type, value) of one protobuf message: varints as ints, the rest as bytes."""
    at = 0

    def varint():
        nonlocal at
        value, shift = 0, 0
        while True:
            byte = data[at]
            at += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                return value

    while at < len(data):
        key = varint()
        number, wire = key >> 3, key & 7
        if wire == 0:
            yield number, wire, varint()
        elif wire == 1:
            yield number, wire, data[at:at + 8]
            at += 8
        elif wire == 2:
            size = varint()
            yield number, wire, data[at:at + size]
            at += size
        elif wire == 5:
            yield number, wire, data[at:at + 4]
            at += 4
        else:
            raise ValueError(f"protobuf wire type {wire}")


class Piece:
    def __init__(self, piece, score):
        self.piece = piece
        self.score = score


class ModelProto:
    """The two parts of sentencepiece_model.proto a conversion reads (python3-protobuf is not needed)."""

    def __init__(self):
        self.pieces = []
        self.precompiled_charsmap = b""


def read_model_proto(data):
    # ModelProto: 1 = repeated SentencePiece {1 piece, 2 score (float)}, 3 = NormalizerSpec {2 precompiled_charsmap}.
    proto = ModelProto()
    for number, _, value in protobuf_fields(data):
        if number == 1:
            piece, score = "", 0.0
            for field, _, v in protobuf_fields(value):
                if field == 1:
                    piece = v.decode("utf-8")
                elif field == 2:
                    score = struct.unpack("<f", v)[0]
            proto.pieces.append(Piece(piece, score))
        elif number == 3:
            for field, _, v in protobuf_fields(value):
                if field == 2:
                    proto.precompiled_charsmap = v
    return proto


def added(token_id, content, lstrip=False):
    return {
        "id": token_id,
        "content": content,
        "single_word": False,
        "lstrip": lstrip,
        "rstrip": False,
        "normalized": False,
        "special": True,
    }


def convert(proto, byte_fallback, normalizers, pre_tokenizer, post_processor):
    vocab = [["<s>", 0.0], ["<pad>", 0.0], ["</s>", 0.0], ["<unk>", 0.0]]
    vocab += [[p.piece, p.score] for p in proto.pieces[3:]]
    vocab.append(["<mask>", 0.0])
    mask_id = len(vocab) - 1
    charsmap = base64.b64encode(proto.precompiled_charsmap).decode("ascii")
    precompiled = {"type": "Precompiled", "precompiled_charsmap": charsmap}
    normalizer = precompiled if not normalizers else {"type": "Sequence", "normalizers": [precompiled] + normalizers}
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [added(0, "<s>"), added(1, "<pad>"), added(2, "</s>"), added(3, "<unk>"),
                         added(mask_id, "<mask>", lstrip=True)],
        "normalizer": normalizer,
        "pre_tokenizer": pre_tokenizer,
        "post_processor": post_processor,
        "decoder": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True},
        "model": {"type": "Unigram", "unk_id": 3, "vocab": vocab, "byte_fallback": byte_fallback},
    }


METASPACE = {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True}
TEMPLATE = {
    "type": "TemplateProcessing",
    "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
               {"SpecialToken": {"id": "</s>", "type_id": 0}}],
    "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
             {"SpecialToken": {"id": "</s>", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}},
             {"Sequence": {"id": "B", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}}],
    "special_tokens": {"<s>": {"id": "<s>", "ids": [0], "tokens": ["<s>"]},
                       "</s>": {"id": "</s>", "ids": [2], "tokens": ["</s>"]}},
}
ROBERTA = {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0], "trim_offsets": True,
           "add_prefix_space": True}


def main():
    os.makedirs(OUT, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        corpus_path = os.path.join(tmp, "corpus.txt")
        lines = corpus_lines()
        with open(corpus_path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        print(f"corpus: {len(lines)} lines")
        xlmr = train(corpus_path, os.path.join(tmp, "xlmr"), "nmt_nfkc", False, 4000)
        files = {
            "unigram-xlmr.json": convert(xlmr, False, [], METASPACE, TEMPLATE),
        }
        fallback = train(corpus_path, os.path.join(tmp, "fallback"), "nmt_nfkc_cf", True, 3000)
        files["unigram-byte-fallback.json"] = convert(
            fallback, True, [{"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}],
            {"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"}, METASPACE]}, ROBERTA)
        for name, doc in files.items():
            path = os.path.join(OUT, name)
            with open(path, "w", encoding="utf-8") as f:
                json.dump(doc, f, ensure_ascii=False, separators=(",", ":"))
                f.write("\n")
            print(f"{name}: {len(doc['model']['vocab'])} pieces, {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
