#!/usr/bin/env python3
"""Trains a small byte-pair-encoding vocabulary on GRCh37 chr20 and writes a Hugging Face
tokenizer.json in the layout DNABERT-2 and GENA-LM ship (model BPE with "a b" merges, [UNK] as
unk_token, a Whitespace pre-tokenizer, TemplateProcessing "[CLS] $A [SEP]").

It is the project's test vocabulary for the worker's BPE tokenizer
(tests/data/tokenizers/README.md), not a vocabulary any published model uses.

Training data: a fixed 2 Mb slice of chr20 (default [30,000,000, 32,000,000)), cut at N runs
(which are skipped) and into 500 bp words. BPE as usual: start from the bases (plus N, so the
vocabulary covers ACGTN), repeatedly merge the most frequent adjacent pair (ties: the pair whose
two token strings sort first), stop at --vocab-size tokens or when no pair occurs twice. Every
choice is deterministic, so the same arguments always give the same file.

    python3 scripts/train_bpe.py --out tests/data/tokenizers/chr20_bpe.tokenizer.json
        [--fasta 20.fa.gz] [--start 30000000] [--length 2000000] [--vocab-size 2048]

Without --fasta it runs `apt-get download vt-examples` in a temporary directory. Standard
library only.
"""

import argparse
import collections
import heapq
import json
import os
import re
import sys
import time

from dnaserve_tools.chr20_fasta import Chr20, FetchError

SPECIALS = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]  # DNABERT-2's ids 0-4
ALPHABET = ["A", "C", "G", "N", "T"]
WORD_BP = 500


def training_words(sequence: str) -> list:
    words = []
    for run in re.split(r"N+", sequence):
        for i in range(0, len(run), WORD_BP):
            if len(run) - i >= 2:
                words.append(run[i:i + WORD_BP])
    return words


def train(words: list, vocab_size: int):
    """Returns (tokens in id order, merges as (left, right) token strings)."""
    tokens = SPECIALS + ALPHABET
    ids = {t: i for i, t in enumerate(tokens)}
    seqs = [[ids[c] for c in w] for w in words]
    counts = collections.Counter()
    where = collections.defaultdict(set)  # pair -> indices of the words holding it
    for wi, s in enumerate(seqs):
        for pair in zip(s, s[1:]):
            counts[pair] += 1
            where[pair].add(wi)

    def entry(pair):
        return (-counts[pair], tokens[pair[0]], tokens[pair[1]], pair)

    heap = [entry(p) for p in counts]
    heapq.heapify(heap)
    merges = []
    while len(tokens) < vocab_size and heap:
        negative, _, _, pair = heapq.heappop(heap)
        if counts.get(pair, 0) != -negative:
            continue  # stale: the count changed after this entry was queued
        if -negative < 2:
            break
        a, b = pair
        merged = tokens[a] + tokens[b]
        if merged not in ids:  # two different pairs can spell the same token
            ids[merged] = len(tokens)
            tokens.append(merged)
        new_id = ids[merged]
        merges.append((tokens[a], tokens[b]))
        changed = set()
        for wi in where.pop(pair):
            s = seqs[wi]
            before = collections.Counter(zip(s, s[1:]))
            out = []
            i = 0
            while i < len(s):
                if i + 1 < len(s) and s[i] == a and s[i + 1] == b:
                    out.append(new_id)
                    i += 2
                else:
                    out.append(s[i])
                    i += 1
            seqs[wi] = out
            after = collections.Counter(zip(out, out[1:]))
            for p, n in before.items():
                if after[p] != n:
                    counts[p] += after[p] - n
                    changed.add(p)
                    if after[p] == 0:
                        where[p].discard(wi)
            for p, n in after.items():
                if p not in before:
                    counts[p] += n
                    where[p].add(wi)
                    changed.add(p)
        counts.pop(pair, None)
        for p in changed:
            if p != pair and counts.get(p, 0) > 0:
                heapq.heappush(heap, entry(p))
    return tokens, merges


def tokenizer_json(tokens: list, merges: list) -> dict:
    def special(token):
        return {"id": token, "ids": [tokens.index(token)], "tokens": [token]}

    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
             "normalized": False, "special": True} for i, t in enumerate(SPECIALS)],
        "normalizer": None,
        "pre_tokenizer": {"type": "Whitespace"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                     {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 0}},
                     {"Sequence": {"id": "B", "type_id": 1}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
            "special_tokens": {"[CLS]": special("[CLS]"), "[SEP]": special("[SEP]")},
        },
        "decoder": None,
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": "[UNK]",
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "vocab": {t: i for i, t in enumerate(tokens)},
            "merges": [f"{a} {b}" for a, b in merges],
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="tokenizer.json to write")
    parser.add_argument("--fasta", default="", help="20.fa.gz (default: fetch vt-examples)")
    parser.add_argument("--start", type=int, default=30_000_000)
    parser.add_argument("--length", type=int, default=2_000_000)
    parser.add_argument("--vocab-size", type=int, default=2048)
    args = parser.parse_args()
    if args.vocab_size <= len(SPECIALS) + len(ALPHABET):
        parser.error("--vocab-size must leave room for merges")

    started = time.time()
    try:
        with Chr20(args.fasta) as chr20:
            sequence = chr20[args.start:args.start + args.length]
    except FetchError as e:
        print(f"train_bpe: {e}", file=sys.stderr)
        return 1
    words = training_words(sequence)
    tokens, merges = train(words, args.vocab_size)
    with open(args.out, "w") as handle:
        json.dump(tokenizer_json(tokens, merges), handle, indent=1)
        handle.write("\n")
    lengths = [len(t) for t in tokens[len(SPECIALS):]]
    print(f"train_bpe: {len(words)} words from chr20:{args.start}-{args.start + args.length}, "
          f"{len(tokens)} tokens ({len(merges)} merges, longest {max(lengths)} bp) -> {args.out} "
          f"in {time.time() - started:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
