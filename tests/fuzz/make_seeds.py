#!/usr/bin/env python3
"""Writes the committed seed corpora of the fuzz targets (tests/fuzz/corpus/<target>/).

Seeds are small, made here from nothing but the request contract and the formats' own rules,
and deterministic (fixed random seed): rerun to regenerate byte for byte. Each target's first
input byte selects what it exercises (see the targets' headers); the seeds cover every selector.
"""
import gzip
import json
import os
import random
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
rng = random.Random(20261125)


def dna(n, alphabet="ACGT"):
    return "".join(rng.choice(alphabet) for _ in range(n))


def write(target, name, data):
    directory = os.path.join(HERE, "corpus", target)
    os.makedirs(directory, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(directory, name), "wb") as f:
        f.write(data)


# --- fuzz_request_validation: byte 0 % 13 = task (0-5), negotiation (6-11), find-genes (12) ---
TASKS = ["promoter", "splice", "enhancer", "chromatin", "annotation", "expression"]
bodies = {
    "promoter": {"sequence": dna(300), "options": {"threshold": 0.5}, "sequence_name": "p1"},
    "splice": {"sequence": dna(120), "options": {"threshold": 0.2, "site_types": ["donor"]}},
    "enhancer": {"sequence": "acgtn " + dna(60), "options": {}, "model": None},
    "chromatin": {"sequence": dna(250), "options": {"threshold": 0.9}},
    "annotation": {"sequence": dna(1100), "sequence_name": "chr20:1,000-2,099",
                   "options": {"batch_size": 4, "shift_coordinates": "UCSC",
                               "reverse_complement": False}},
    "expression": {"sequence": dna(9300), "tss_index": 4650,
                   "options": {"description": "adult liver tissue"}},
}
for i, task in enumerate(TASKS):
    write("fuzz_request_validation", f"{task}-valid", bytes([i]) + json.dumps(bodies[task]).encode())
    write("fuzz_request_validation", f"{task}-invalid",
          bytes([i]) + json.dumps({"sequence": "ACGX", "extra": [1, {"a": None}],
                                   "options": {"threshold": 2}}).encode())
    write("fuzz_request_validation", f"{task}-negotiate",
          bytes([6 + i]) + b"bedgraph\ntext/x-bed;q=0.5, application/json;q=0.9, */*;q=0.1")
write("fuzz_request_validation", "find-genes-valid",
      bytes([12]) + json.dumps({"sequence": dna(1500), "sequence_name": "chr1:101-1600",
                                "options": {"description": "brain", "batch_size": 8,
                                            "shift_coordinates": "UCSC",
                                            "annotation_model": None}}).encode())
write("fuzz_request_validation", "not-json", bytes([0]) + b'{"sequence": "ACGT", "options": [[[[')
write("fuzz_request_validation", "deep", bytes([3]) + b"[" * 40 + b"]" * 40)

# --- fuzz_bpe_tokenizer: byte 0 even = encode the rest, odd = parse the rest as tokenizer.json ---
for i, n in enumerate([1, 7, 64, 700]):
    write("fuzz_bpe_tokenizer", f"encode-{n}", b"\x00" + dna(n, "ACGTN").encode())
write("fuzz_bpe_tokenizer", "encode-mixed-case", b"\x02" + b"acgtNNnxACGT\n \tGGCC")


def tokenizer(merges, extra=None):
    vocab = {"[UNK]": 0, "[CLS]": 1, "[SEP]": 2, "[PAD]": 3, "A": 4, "C": 5, "G": 6, "T": 7, "N": 8}
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    doc = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": 0, "content": "[UNK]", "special": True},
                         {"id": 1, "content": "[CLS]", "special": True},
                         {"id": 2, "content": "[SEP]", "special": True},
                         {"id": 3, "content": "[PAD]", "special": True}],
        "normalizer": None, "pre_tokenizer": {"type": "Whitespace"},
        "post_processor": {"type": "TemplateProcessing",
                           "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                                      {"Sequence": {"id": "A", "type_id": 0}},
                                      {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
                           "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [1], "tokens": ["[CLS]"]},
                                              "[SEP]": {"id": "[SEP]", "ids": [2], "tokens": ["[SEP]"]}}},
        "decoder": None,
        "model": {"type": "BPE", "dropout": None, "unk_token": "[UNK]",
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": False, "byte_fallback": False,
                  "vocab": vocab, "merges": [a + " " + b for a, b in merges]},
    }
    if extra:
        extra(doc)
    return json.dumps(doc)


merges = [("A", "C"), ("G", "T"), ("AC", "GT"), ("T", "T"), ("N", "N"), ("C", "A")]
write("fuzz_bpe_tokenizer", "parse-basic", b"\x01" + tokenizer(merges).encode())


def pair_merges(doc):
    doc["model"]["merges"] = [m.split(" ") for m in doc["model"]["merges"]]
    doc["normalizer"] = {"type": "Sequence", "normalizers": [{"type": "Lowercase"}, {"type": "NFKC"}]}


write("fuzz_bpe_tokenizer", "parse-pairs-lowercase", b"\x03" + tokenizer(merges, pair_merges).encode())


def byte_level(doc):
    doc["pre_tokenizer"] = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True}
    doc["post_processor"] = {"type": "BertProcessing", "sep": ["[SEP]", 2], "cls": ["[CLS]", 1]}
    doc["model"]["vocab"]["\u0120"] = len(doc["model"]["vocab"])


write("fuzz_bpe_tokenizer", "parse-bytelevel", b"\x05" + tokenizer(merges, byte_level).encode())
write("fuzz_bpe_tokenizer", "parse-broken", b"\x01" + b'{"model": {"type": "BPE", "vocab": {"A": 0}, "merges": ["A')

# --- fuzz_token_bucket: byte 0 even = per-key bucket, odd = per-IP limiter; then operations ---
def key_bucket(rate, ops):
    body = rate.to_bytes(3, "big") + (1_700_000_000_000).to_bytes(6, "big")
    for op, step in ops:
        body += bytes([op]) + (step + 32768).to_bytes(2, "big")
    return b"\x00" + body


write("fuzz_token_bucket", "key-burst", key_bucket(60, [(0, 0)] * 12 + [(4, 1)] + [(0, 0)] * 3))
write("fuzz_token_bucket", "key-backwards", key_bucket(600, [(0, 100), (4, -30), (0, 0), (1, 5), (2, 0)] * 5))
write("fuzz_token_bucket", "key-fast", key_bucket(6_000_000, [(0, 1)] * 40))


def ip_limiter(rate, burst, entries, ops):
    body = struct.pack(">d", rate) + burst.to_bytes(4, "big") + bytes([entries])
    body += (1_700_000_000_000).to_bytes(6, "big")
    for op, step in ops:
        body += bytes([op]) + step.to_bytes(2, "big")
    return b"\x01" + body


write("fuzz_token_bucket", "ip-defaults", ip_limiter(10.0, 20, 15, [(i % 5 * 2, 50) for i in range(60)]))
write("fuzz_token_bucket", "ip-evict", ip_limiter(0.5, 1, 2, [(i * 2, 1000) for i in range(32)]))
write("fuzz_token_bucket", "ip-tiny-rate", ip_limiter(1e-3, 3, 4, [(0, 0), (2, 0), (0, 65535)]))

# --- fuzz_vcf_reader: whole files ---
HEADER = (
    "##fileformat=VCFv4.2\n"
    "##contig=<ID=chr20,length=64444167>\n"
    '##INFO=<ID=DP,Number=1,Type=Integer,Description="Depth">\n'
    '##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">\n'
    "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\tS1\n"
)
records = "".join(
    f"chr20\t{1000 + 37 * i}\trs{i}\t{r}\t{a}\t50\tPASS\tDP={10 + i}\tGT\t0/1\n"
    for i, (r, a) in enumerate([("A", "G"), ("C", "T,CA"), ("GT", "G"), ("T", "."), ("N", "A")])
)
plain = HEADER + records
write("fuzz_vcf_reader", "plain.vcf", plain)
write("fuzz_vcf_reader", "gzip.vcf.gz", gzip.compress(plain.encode(), mtime=0))


def bgzf(data):
    """BGZF (SAM/VCF spec 4.1): gzip members with a BC extra field, then the empty EOF block."""
    import zlib

    def block(chunk):
        deflate = zlib.compressobj(6, zlib.DEFLATED, -15)
        payload = deflate.compress(chunk) + deflate.flush()
        bsize = 12 + 6 + len(payload) + 8  # header + extra + data + trailer
        header = b"\x1f\x8b\x08\x04" + b"\x00" * 4 + b"\x00\xff" + struct.pack("<H", 6)
        extra = b"BC" + struct.pack("<HH", 2, bsize - 1)
        trailer = struct.pack("<II", zlib.crc32(chunk) & 0xFFFFFFFF, len(chunk))
        return header + extra + payload + trailer

    out = b"".join(block(data[i:i + 65280]) for i in range(0, len(data), 65280))
    return out + block(b"")


write("fuzz_vcf_reader", "bgzip.vcf.gz", bgzf(plain.encode()))
write("fuzz_vcf_reader", "header-only.vcf", HEADER)
write("fuzz_vcf_reader", "undeclared-tags.vcf",
      "##fileformat=VCFv4.2\n#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n"
      "chr1\t5\t.\tA\tT\t.\t.\tXX=1;FLAG\nchr2\t7\t.\tG\t<DEL>\t.\tq10\t.\n")
write("fuzz_vcf_reader", "annotated.vcf",
      HEADER.replace("#CHROM", '##INFO=<ID=GEX_ANN,Number=.,Type=String,Description="x">\n#CHROM')
      + records)
write("fuzz_vcf_reader", "truncated.vcf.gz", gzip.compress(plain.encode(), mtime=0)[:-9])
# --- fuzz_http_ingress: byte 0 % 4 == 0 = chunked body (limit/64, split seed, bytes); odd = address
# (byte 0 % 4 == 2, header blocks, below) ---
write("fuzz_http_ingress", "chunked-valid", b"\x00\x10\x07" + b"5\r\nhello\r\n1a\r\n" + b"x" * 26
      + b"\r\n0\r\nTrailer: 1\r\n\r\nGET / HTTP/1.1\r\n")
write("fuzz_http_ingress", "chunked-bad-crlf", b"\x00\x10\x03" + b"5\r\nhelloXX")
write("fuzz_http_ingress", "chunked-too-large", b"\x00\x01\x05" + b"FFFF\r\n")
write("fuzz_http_ingress", "address-trusted",
      b"\x01" + b"10.0.0.0/8, 2001:db8::/32\n10.1.2.3\nHost: x\r\n"
      b"X-Forwarded-For: 6.6.6.6\r\nx-forwarded-for: 198.51.100.7, [2001:db8::5]:443\r\n")
write("fuzz_http_ingress", "address-untrusted",
      b"\x01" + b"192.168.0.1\n::ffff:203.0.113.9\nX-Forwarded-For: 1.2.3.4:80\r\n")

# --- repeated JSON keys (fuzz_request_validation): top level, nested, escaped, in an array ---
# (Written last, with no further draws from rng, so that the seeds above stay byte for byte.)
promoter = json.dumps(bodies["promoter"])
write("fuzz_request_validation", "duplicate-top",
      bytes([0]) + promoter[:-1].encode() + b', "sequence": "ACGT"}')
write("fuzz_request_validation", "duplicate-nested",
      bytes([0]) + promoter.replace('"threshold": 0.5', '"threshold": 0.5, "threshold": 0.9').encode())
write("fuzz_request_validation", "duplicate-escaped",
      bytes([1]) + b'{"sequence": "ACGT", "\\u0073equence": "TTTT"}')
write("fuzz_request_validation", "duplicate-in-array",
      bytes([12]) + b'{"sequence": "ACGT", "x": [1, {"a": 1, "b": {"a": 2, "a": 3}}]}')

# --- fuzz_http_ingress, byte 0 % 4 == 2: header blocks, one per RFC 9112 rule ---
post = b"POST /v1/tasks/promoter/predict HTTP/1.1\r\nHost: gw.example:8080\r\n"
blocks = {
    "head-valid": post + b"Content-Type: application/json\r\nContent-Length: 42\r\n"
                  b"X-Forwarded-For: 1.2.3.4\r\nAuthorization: Bearer k\r\n\r\n",
    "head-chunked-forms": post + b"Transfer-Encoding: , Chunked \r\nTransfer-Encoding:\r\n\r\n",
    "head-http10": b"GET /health HTTP/1.0\r\nContent-Length: 0\r\n\r\n",
    "head-two-lengths": post + b"Content-Length: 2\r\nContent-Length: 40\r\n\r\n",
    "head-length-list": post + b"Content-Length: 2, 2\r\n\r\n",
    "head-length-sign": post + b"Content-Length: +2\r\n\r\n",
    "head-length-overflow": post + b"Content-Length: 18446744073709551616\r\n\r\n",
    "head-length-and-chunked": post + b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
    "head-gzip-last": post + b"Transfer-Encoding: chunked, gzip\r\n\r\n",
    "head-chunked-twice": post + b"Transfer-Encoding: chunked\r\ntransfer-encoding: chunked\r\n\r\n",
    "head-chunked-http10": b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
    "head-space-colon": post + b"Content-Length : 2\r\n\r\n",
    "head-obs-fold": post + b"X-A: 1\r\n 2\r\n\r\n",
    "head-bare-cr": post + b"X-A: 1\r2\r\n\r\n",
    "head-bare-lf": post + b"X-A: 1\nX-B: 2\r\n\r\n",
    "head-no-host": b"GET / HTTP/1.1\r\nAccept: */*\r\n\r\n",
    "head-two-hosts": b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
    "head-bad-request-line": b"GET  /x HTTP/1.1\r\nHost: a\r\n\r\n",
    "head-bad-version": b"GET /x HTTP/2.0\r\nHost: a\r\n\r\n",
}
for name, block in blocks.items():
    write("fuzz_http_ingress", name, b"\x02" + block)

# --- fuzz_http_ingress, byte 0 % 4 == 0: chunked bodies at the RFC's edges ---
write("fuzz_http_ingress", "chunked-leading-zeros",
      b"\x00\x10\x05" + b"0005\r\nhello\r\n000\r\nX-T: \xff\r\n\r\n")
write("fuzz_http_ingress", "chunked-bad-trailers",
      b"\x00\x10\x02" + b"1\r\na\r\n0\r\nX-T : 1\r\n 2\r\nNoColon\r\n\r\n")
write("fuzz_http_ingress", "chunked-extension", b"\x00\x10\x04" + b"1;a=\"b\"\r\na\r\n0\r\n\r\n")
print("seeds written under", os.path.join(HERE, "corpus"), file=sys.stderr)
