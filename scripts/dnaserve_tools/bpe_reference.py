#!/usr/bin/env python3
"""A deliberately simple reference encoder for Hugging Face BPE tokenizer.json files.

It exists to check the worker's C++ BPE tokenizer (worker/tokenize/bpe_tokenizer.cc) against an
independent implementation: no priority queue, no linked symbols, just the textbook loop "find
the adjacent pair with the lowest merge rank (leftmost on ties), merge it, repeat". It shares no
code with the C++ and reads tokenizer.json with the json module.

Supported: model BPE (vocab, merges as "a b" strings or [a, b] pairs, unk_token, fuse_unk,
continuing_subword_prefix, end_of_word_suffix), normalizer null or Lowercase, pre_tokenizer null,
Whitespace or WhitespaceSplit (a DNA sequence is one word), post_processor null or
TemplateProcessing. Input is canonicalised as the worker does it: upper case, and anything but
A/C/G/T counts as N.

  encode   --tokenizer T          sequences on stdin, one per line (an empty line is the empty
                                  sequence); one JSON array per line on stdout:
                                  [[id, start, end, special], ...] with the template's specials
                                  (span [0, 0] before, [n, n] after; special = 1)
  vectors  --tokenizer T --out F  the frozen expected encodings of tests/data/tokenizers
           [--fasta 20.fa.gz]     (chr20 slices, N runs, lower case, edge cases); without
                                  --fasta, chr20 is fetched with `apt-get download vt-examples`

Standard library only.
"""

import argparse
import json
import os
import sys


class Unsupported(Exception):
    pass


class ReferenceBpe:
    def __init__(self, path: str):
        with open(path) as handle:
            config = json.load(handle)
        model = config["model"]
        if model.get("type") != "BPE":
            raise Unsupported("model type must be BPE")
        if model.get("byte_fallback") or model.get("ignore_merges") or model.get("dropout"):
            raise Unsupported("byte_fallback, ignore_merges and dropout are not supported")
        self.vocab = model["vocab"]
        self.unk = model.get("unk_token")
        self.fuse_unk = bool(model.get("fuse_unk"))
        self.prefix = model.get("continuing_subword_prefix") or ""
        self.suffix = model.get("end_of_word_suffix") or ""
        self.ranks = {}
        for rank, merge in enumerate(model["merges"]):
            left, right = merge.split(" ") if isinstance(merge, str) else merge
            self.ranks[(left, right)] = rank

        normalizer = config.get("normalizer")
        self.lowercase = False
        if normalizer is not None:
            if normalizer.get("type") != "Lowercase":
                raise Unsupported(f"normalizer {normalizer.get('type')}")
            self.lowercase = True
        pre = config.get("pre_tokenizer")
        if pre is not None and pre.get("type") not in ("Whitespace", "WhitespaceSplit"):
            raise Unsupported(f"pre_tokenizer {pre.get('type')}")

        self.before, self.after = [], []
        post = config.get("post_processor")
        if post is not None:
            if post.get("type") != "TemplateProcessing":
                raise Unsupported(f"post_processor {post.get('type')}")
            seen_sequence = False
            for piece in post["single"]:
                if "Sequence" in piece:
                    seen_sequence = True
                    continue
                ids = post["special_tokens"][piece["SpecialToken"]["id"]]["ids"]
                (self.after if seen_sequence else self.before).extend(ids)

    def encode(self, text: str):
        bases = "".join(c if c in "ACGT" else "N" for c in text.upper())
        n = len(bases)
        tokens = [[i, 0, 0, 1] for i in self.before]
        # symbols: [token string, start, end]
        symbols = []
        previous_unk = False
        for i, base in enumerate(bases):
            char = base.lower() if self.lowercase else base
            piece = (self.prefix if i > 0 else "") + char + (self.suffix if i == n - 1 else "")
            if piece in self.vocab:
                symbols.append([piece, i, i + 1])
                previous_unk = False
            elif self.unk is not None:
                if self.fuse_unk and previous_unk:
                    symbols[-1][2] = i + 1
                else:
                    symbols.append([self.unk, i, i + 1])
                previous_unk = True
            # else: the character is dropped, as the tokenizers library does without unk_token
        while True:
            best, best_rank = None, None
            for i in range(len(symbols) - 1):
                rank = self.ranks.get((symbols[i][0], symbols[i + 1][0]))
                if rank is not None and (best_rank is None or rank < best_rank):
                    best, best_rank = i, rank
            if best is None:
                break
            left, right = symbols[best], symbols[best + 1]
            symbols[best] = [left[0] + right[0][len(self.prefix):], left[1], right[2]]
            del symbols[best + 1]
        tokens += [[self.vocab[s], start, end, 0] for s, start, end in symbols]
        tokens += [[i, n, n, 1] for i in self.after]
        return tokens


def cmd_encode(args) -> int:
    bpe = ReferenceBpe(args.tokenizer)
    for line in sys.stdin:
        print(json.dumps(bpe.encode(line.rstrip("\r\n")), separators=(",", ":")))
    return 0


def test_sequences(chr20: str):
    """(name, sequence) pairs of the frozen vectors: real chr20 and the edge cases."""
    first_base = next(i for i, c in enumerate(chr20) if c != "N")
    held_out = chr20[45_000_000:45_010_000]  # outside the training slice
    trained = chr20[31_000_000:31_000_500]  # inside it
    mixed = held_out[:100] + "N" * 7 + held_out[100:200] + "N" + held_out[200:300]
    return [
        ("empty", ""),
        ("single base", "G"),
        ("3 bp, shorter than most tokens", held_out[5000:5003]),
        ("all N", "N" * 40),
        ("chr20:45000000-45000037", held_out[:37]),
        ("chr20:45000000-45000250", held_out[:250]),
        ("chr20:45001000-45002000", held_out[1000:2000]),
        ("chr20:45006000-45010000", held_out[6000:10000]),
        ("chr20:31000000-31000500 (training slice)", trained),
        (f"chr20:{first_base - 30}-{first_base + 300} (end of the leading N run)",
         chr20[first_base - 30:first_base + 300]),
        ("chr20 with N runs of 7 and 1 inserted", mixed),
        ("chr20:45002000-45002300 lower case", held_out[2000:2300].lower()),
        ("chr20:45002000-45002300 mixed case",
         "".join(c.lower() if i % 3 == 0 else c for i, c in enumerate(held_out[2000:2300]))),
    ]


def cmd_vectors(args) -> int:
    from dnaserve_tools.chr20_fasta import Chr20, FetchError
    bpe = ReferenceBpe(args.tokenizer)
    try:
        with Chr20(args.fasta) as chr20:
            cases = test_sequences(chr20)
    except FetchError as e:
        print(f"bpe_reference: {e}", file=sys.stderr)
        return 1
    lines = []
    for name, sequence in cases:
        case = {"name": name, "sequence": sequence, "tokens": bpe.encode(sequence)}
        lines.append(json.dumps(case, separators=(",", ":")))
    with open(args.out, "w") as handle:
        handle.write('{"tokenizer": "' + os.path.basename(args.tokenizer) + '",\n')
        handle.write(' "generator": "scripts/bpe_reference.py vectors",\n')
        handle.write(' "token_fields": ["id", "start", "end", "special"],\n')
        handle.write(' "cases": [\n  ' + ",\n  ".join(lines) + "\n ]}\n")
    print(f"bpe_reference: {len(cases)} cases -> {args.out}", file=sys.stderr)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    encode = sub.add_parser("encode")
    encode.add_argument("--tokenizer", required=True)
    vectors = sub.add_parser("vectors")
    vectors.add_argument("--tokenizer", required=True)
    vectors.add_argument("--out", required=True)
    vectors.add_argument("--fasta", default="")
    args = parser.parse_args()
    try:
        return cmd_encode(args) if args.command == "encode" else cmd_vectors(args)
    except Unsupported as e:
        print(f"bpe_reference: unsupported tokenizer.json: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
