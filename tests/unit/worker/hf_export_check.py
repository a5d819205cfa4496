#!/usr/bin/env python3
"""Checks scripts/export_hf_bert.py on tiny checkpoints this script creates itself.

Run by tests/unit/worker/hf_export_test.cpp (which then serves the packages in the real worker),
or by hand:
    /usr/bin/python3 tests/unit/worker/hf_export_check.py --workdir /tmp/x

For each variant it writes a random BERT checkpoint in the Hugging Face layout (config.json,
pytorch_model.bin or model.safetensors with the HF parameter names, tokenizer.json), runs the
exporter, loads the exported model.pt with torch.jit.load and compares it with an eager BERT
written below from the Hugging Face math, independently of scripts/dnaserve_models (max abs
difference < 1e-5). Then it checks that broken checkpoints are refused with a clear message.

Packages are left in <workdir>/models/<id>; a JSON summary goes to <workdir>/summary.json.
Exit status 0 only when every check passed.
"""

import argparse
import contextlib
import io
import json
import math
import os
import shutil
import struct
import subprocess
import sys

import torch

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
EXPORTER = os.path.join(ROOT, "scripts", "export_hf_bert.py")
PROJECT_FIXTURE = os.path.join(ROOT, "tests", "data", "tokenizers", "chr20_bpe.tokenizer.json")
TOLERANCE = 1e-5

FAILURES = []


def check(condition, message):
    if not condition:
        FAILURES.append(message)
        print(f"FAIL: {message}", file=sys.stderr)
    return condition


# --- a tiny BPE tokenizer.json ----------------------------------------------------------------

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
MERGES = [("A", "A"), ("C", "G"), ("T", "T"), ("G", "A"), ("AA", "T"), ("CG", "CG"),
          ("T", "G"), ("C", "A"), ("TT", "TT"), ("GA", "GA")]


def tiny_tokenizer_json():
    vocab = {}
    for token in SPECIALS + ["A", "C", "G", "T", "N"]:
        vocab[token] = len(vocab)
    for left, right in MERGES:
        vocab.setdefault(left + right, len(vocab))
    added = [{"id": vocab[t], "content": t, "single_word": False, "lstrip": False,
              "rstrip": False, "normalized": False, "special": True} for t in SPECIALS]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": None,
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
            "special_tokens": {
                "[CLS]": {"id": "[CLS]", "ids": [vocab["[CLS]"]], "tokens": ["[CLS]"]},
                "[SEP]": {"id": "[SEP]", "ids": [vocab["[SEP]"]], "tokens": ["[SEP]"]},
            },
        },
        "decoder": None,
        "model": {"type": "BPE", "dropout": None, "unk_token": "[UNK]",
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": False, "byte_fallback": False, "vocab": vocab,
                  "merges": [f"{a} {b}" for a, b in MERGES]},
    }


def tokenizer_source():
    """The project's BPE fixture when it exists and has the BERT special tokens this check
    relies on ([PAD], [CLS], [SEP] and a [CLS] $A [SEP] template), else the tiny one above."""
    if os.path.exists(PROJECT_FIXTURE):
        with open(PROJECT_FIXTURE, encoding="utf-8") as handle:
            doc = json.load(handle)
        try:
            template = [next(iter(item.values()))["id"]
                        for item in doc["post_processor"]["single"]]
            usable = (doc["model"]["type"] == "BPE" and template == ["[CLS]", "A", "[SEP]"] and
                      all(special_id(doc, t) is not None for t in ("[PAD]", "[CLS]", "[SEP]")))
        except (KeyError, TypeError, StopIteration):
            usable = False
        if usable:
            return doc, PROJECT_FIXTURE
    return tiny_tokenizer_json(), "tiny tokenizer built by hf_export_check.py"


def special_id(tok, name):
    for token in tok.get("added_tokens") or []:
        if token["content"] == name:
            return token["id"]
    return tok["model"]["vocab"].get(name)


def vocab_size_of(tok):
    ids = list(tok["model"]["vocab"].values()) + [t["id"] for t in tok.get("added_tokens", [])]
    return max(ids) + 1


# --- random checkpoints in the Hugging Face layout ----------------------------------------------

def hf_state_dict(config, head, num_labels, seed):
    """Random tensors under the Hugging Face BERT names (with the MLM head some checkpoints keep,
    which the exporter must ignore)."""
    g = torch.Generator().manual_seed(seed)

    def rnd(*shape, scale=0.2):
        return torch.randn(*shape, generator=g) * scale

    def norm(prefix, h):
        return {f"{prefix}.weight": 1.0 + rnd(h, scale=0.1), f"{prefix}.bias": rnd(h, scale=0.1)}

    h, inter = config["hidden_size"], config["intermediate_size"]
    pre = config.get("pre_layer_norm", False)
    s = {
        "bert.embeddings.word_embeddings.weight": rnd(config["vocab_size"], h, scale=1.0),
        "bert.embeddings.position_embeddings.weight": rnd(config["max_position_embeddings"], h),
        "bert.embeddings.token_type_embeddings.weight": rnd(config["type_vocab_size"], h),
        "bert.embeddings.position_ids": torch.arange(config["max_position_embeddings"])[None],
    }
    s.update(norm("bert.embeddings.LayerNorm", h))
    for i in range(config["num_hidden_layers"]):
        p = f"bert.encoder.layer.{i}"
        for name, (rows, cols) in {"attention.self.query": (h, h), "attention.self.key": (h, h),
                                   "attention.self.value": (h, h),
                                   "attention.output.dense": (h, h),
                                   "intermediate.dense": (inter, h),
                                   "output.dense": (h, inter)}.items():
            s[f"{p}.{name}.weight"] = rnd(rows, cols)
            s[f"{p}.{name}.bias"] = rnd(rows, scale=0.05)
        if pre:
            s.update(norm(f"{p}.pre_attention_ln", h))
            s.update(norm(f"{p}.post_attention_ln", h))
        else:
            s.update(norm(f"{p}.attention.output.LayerNorm", h))
            s.update(norm(f"{p}.output.LayerNorm", h))
    if pre:
        s.update(norm("bert.encoder.last_layer_ln", h))
    if head == "sequence":
        s["bert.pooler.dense.weight"] = rnd(h, h)
        s["bert.pooler.dense.bias"] = rnd(h, scale=0.05)
    else:
        s["cls.predictions.bias"] = rnd(config["vocab_size"])  # ignorable leftovers
    s["classifier.weight"] = rnd(num_labels, h, scale=0.15)
    s["classifier.bias"] = rnd(num_labels, scale=0.1)
    return s


def write_safetensors(path, tensors):
    """A safetensors file written from the format description (independent of the reader)."""
    names = {torch.float32: "F32", torch.int64: "I64", torch.float16: "F16"}
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, tensor in tensors.items():
        data = tensor.contiguous().numpy().tobytes()
        header[name] = {"dtype": names[tensor.dtype], "shape": list(tensor.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as handle:
        handle.write(struct.pack("<Q", len(text)))
        handle.write(text)
        for blob in blobs:
            handle.write(blob)


def write_checkpoint(directory, config, state, tok, weights_format):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "config.json"), "w", encoding="utf-8") as handle:
        json.dump(config, handle, indent=2)
    with open(os.path.join(directory, "tokenizer.json"), "w", encoding="utf-8") as handle:
        json.dump(tok, handle)
    if weights_format == "safetensors":
        write_safetensors(os.path.join(directory, "model.safetensors"), state)
    else:
        torch.save(state, os.path.join(directory, "pytorch_model.bin"))


# --- the independent eager reference (Hugging Face BERT math) -----------------------------------

def layer_norm(x, w, b, eps):
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * w + b


def activation(x, name):
    if name == "gelu":
        return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))
    if name in ("gelu_new", "gelu_pytorch_tanh"):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    if name == "relu":
        return torch.clamp(x, min=0)
    raise ValueError(name)


def reference_forward(config, s, input_ids, attention_mask, head):
    """HF BertModel + head on [CLS] ... [SEP] [PAD]* inputs with the tokenizer's attention mask."""
    eps = config["layer_norm_eps"]
    pre = config.get("pre_layer_norm", False)

    def linear(x, name):
        return x @ s[name + ".weight"].T + s[name + ".bias"]

    b, t = input_ids.shape
    x = (s["bert.embeddings.word_embeddings.weight"][input_ids] +
         s["bert.embeddings.position_embeddings.weight"][:t][None] +
         s["bert.embeddings.token_type_embeddings.weight"][torch.zeros_like(input_ids)])
    x = layer_norm(x, s["bert.embeddings.LayerNorm.weight"], s["bert.embeddings.LayerNorm.bias"],
                   eps)
    extended = (1.0 - attention_mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
    heads = config["num_attention_heads"]
    d = config["hidden_size"] // heads
    for i in range(config["num_hidden_layers"]):
        p = f"bert.encoder.layer.{i}"
        attn_in = layer_norm(x, s[f"{p}.pre_attention_ln.weight"],
                             s[f"{p}.pre_attention_ln.bias"], eps) if pre else x

        def split(y):
            return y.view(b, t, heads, d).permute(0, 2, 1, 3)

        q = split(linear(attn_in, f"{p}.attention.self.query"))
        k = split(linear(attn_in, f"{p}.attention.self.key"))
        v = split(linear(attn_in, f"{p}.attention.self.value"))
        scores = q @ k.transpose(-1, -2) / math.sqrt(d) + extended
        ctx = (torch.softmax(scores, -1) @ v).permute(0, 2, 1, 3).reshape(b, t, -1)
        attn = linear(ctx, f"{p}.attention.output.dense")
        if pre:
            x = x + attn
            ffn_in = layer_norm(x, s[f"{p}.post_attention_ln.weight"],
                                s[f"{p}.post_attention_ln.bias"], eps)
            x = x + linear(activation(linear(ffn_in, f"{p}.intermediate.dense"),
                                      config["hidden_act"]), f"{p}.output.dense")
        else:
            x = layer_norm(x + attn, s[f"{p}.attention.output.LayerNorm.weight"],
                           s[f"{p}.attention.output.LayerNorm.bias"], eps)
            ffn = linear(activation(linear(x, f"{p}.intermediate.dense"), config["hidden_act"]),
                         f"{p}.output.dense")
            x = layer_norm(x + ffn, s[f"{p}.output.LayerNorm.weight"],
                           s[f"{p}.output.LayerNorm.bias"], eps)
    if pre:
        x = layer_norm(x, s["bert.encoder.last_layer_ln.weight"],
                       s["bert.encoder.last_layer_ln.bias"], eps)
    if head == "sequence":
        pooled = torch.tanh(linear(x[:, 0], "bert.pooler.dense"))
        return linear(pooled, "classifier")
    return linear(x, "classifier")


def hf_inputs(dna_ids, cls_id, sep_id, pad_id, max_length=None):
    """What a Hugging Face tokenizer (add_special_tokens, padding, truncation to max_length when
    given) hands BERT for rows of DNA ids, a trailing pad in `dna_ids` marking a shorter row:
    input_ids and attention_mask."""
    rows, masks = [], []
    reals = [[i for i in row if i != pad_id] for row in dna_ids.tolist()]
    if max_length is not None:
        reals = [real[:max_length - 2] for real in reals]
    width = max(len(real) for real in reals) + 2
    for real in reals:
        ids = [cls_id] + real + [sep_id]
        rows.append(ids + [pad_id] * (width - len(ids)))
        masks.append([1] * len(ids) + [0] * (width - len(ids)))
    return torch.tensor(rows), torch.tensor(masks)


def reference_outputs(config, state, dna, variant, cls_id, sep_id, pad_id):
    """The expected model output for DNA id rows: sequence heads see a row truncated to the
    model's positions; token heads see it in consecutive chunks that fit, each chunk wrapped in
    [CLS]/[SEP], with the chunks' token rows concatenated (row t = DNA token t)."""
    limit = config["max_position_embeddings"]
    if variant["head"] == "sequence":
        ids, mask = hf_inputs(dna, cls_id, sep_id, pad_id, max_length=limit)
        return variant["post"](reference_forward(config, state, ids, mask, "sequence"))
    per_chunk = limit - 2
    rows = []
    for row in dna.tolist():
        pieces = []
        for start in range(0, len(row), per_chunk):
            chunk = torch.tensor([row[start:start + per_chunk]])
            real = int((chunk != pad_id).sum())
            if real == 0:  # only padding: its rows carry no meaning
                pieces.append(torch.zeros(chunk.shape[1], variant["num_labels"]))
                continue
            ids, mask = hf_inputs(chunk, cls_id, sep_id, pad_id)
            out = variant["post"](reference_forward(config, state, ids, mask, "token"))[0]
            piece = torch.zeros(chunk.shape[1], variant["num_labels"])
            piece[:real] = out[1:1 + real]
            pieces.append(piece)
        rows.append(torch.cat(pieces))
    return torch.stack(rows)


# --- variants ----------------------------------------------------------------------------------

def base_config(vocab_size, pad_id, **extra):
    config = {
        "_name_or_path": "dnaserve-tests/tiny-random-bert",
        "architectures": ["BertForSequenceClassification"],
        "model_type": "bert",
        "vocab_size": vocab_size,
        "hidden_size": 32,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "intermediate_size": 64,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1,
        "max_position_embeddings": 512,
        "type_vocab_size": 2,
        "layer_norm_eps": 1e-12,
        "pad_token_id": pad_id,
        "position_embedding_type": "absolute",
        "transformers_version": "4.30.0",
    }
    config.update(extra)
    return config


VARIANTS = [
    # id, task, head, labels (config id2label or None), exporter extra args, config extras, format
    dict(id="promoter-bert-tiny", task="promoter", head="sequence", num_labels=2,
         id2label={"0": "background", "1": "promoter"}, args=["--context-bp", "300",
                                                               "--stride-bp", "150"],
         # 64 positions: the worker's 300 bp windows (~70 tokens) are cut to fit.
         extra={"max_position_embeddings": 64}, weights="bin",
         post=lambda z: torch.softmax(z, -1)[:, 1]),
    dict(id="splice-bert-tiny", task="splice", head="token", num_labels=3, id2label=None,
         args=["--labels", "neither,acceptor,donor", "--context-bp", "400"],
         # 64 positions: the worker's 400 bp windows (~95 tokens) are encoded in two chunks.
         extra={"architectures": ["BertForTokenClassification"],
                "max_position_embeddings": 64}, weights="safetensors",
         post=lambda z: torch.softmax(z, -1)),
    dict(id="enhancer-bert-tiny-preln", task="enhancer", head="sequence", num_labels=2,
         id2label={"0": "dev", "1": "hk"}, args=[],
         extra={"pre_layer_norm": True, "hidden_act": "gelu_new",
                "problem_type": "regression"}, weights="safetensors", post=lambda z: z),
    dict(id="chromatin-bert-tiny", task="chromatin", head="sequence", num_labels=5,
         id2label=None, args=["--labels", "A|DNase|None,B|CTCF|None,C|Pol2|None,D|H3K27ac|None,"
                                          "E|ZNF274|None", "--context-bp", "250"],
         # config.json names another pad id than tokenizer.json: the tokenizer's must be masked.
         extra={"problem_type": "multi_label_classification", "hidden_act": "relu",
                "pad_token_id": 4},
         weights="bin", post=torch.sigmoid),
]


def run_exporter(args):
    """The exporter as a separate process, exactly as a user runs it."""
    proc = subprocess.run([sys.executable, EXPORTER] + args, capture_output=True, text=True)
    return proc.returncode, proc.stdout + proc.stderr


def run_exporter_in_process(args):
    """The exporter's main() in this process (saves a torch import per refusal case)."""
    sys.path.insert(0, os.path.dirname(EXPORTER))
    import export_hf_bert  # noqa: E402
    output = io.StringIO()
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
        try:
            code = export_hf_bert.main(args)
        except Exception as error:  # an uncaught exception is a failure of its own
            code = f"uncaught {type(error).__name__}: {error}"
    return code, output.getvalue()


def check_variant(work, tok, variant, seed):
    pad = special_id(tok, "[PAD]")
    cls_id, sep_id = special_id(tok, "[CLS]"), special_id(tok, "[SEP]")
    config = base_config(vocab_size_of(tok), pad, **variant["extra"])
    if variant["id2label"]:
        config["id2label"] = variant["id2label"]
        config["label2id"] = {v: int(k) for k, v in variant["id2label"].items()}
    state = hf_state_dict(config, variant["head"], variant["num_labels"], seed)
    checkpoint = os.path.join(work, "checkpoints", variant["id"])
    write_checkpoint(checkpoint, config, state, tok, variant["weights"])
    package = os.path.join(work, "models", variant["id"])
    code, output = run_exporter(["--checkpoint", checkpoint, "--task", variant["task"],
                                 "--out", package, "--untrained", "--default",
                                 "--seed", str(seed)] + variant["args"])
    if not check(code == 0, f"{variant['id']}: exporter failed:\n{output}"):
        return None
    for name in ("manifest.json", "model.pt", "tokenizer.json", "MODEL_CARD.md"):
        check(os.path.exists(os.path.join(package, name)), f"{variant['id']}: no {name}")
    with open(os.path.join(package, "manifest.json"), encoding="utf-8") as handle:
        manifest = json.load(handle)
    check(manifest["tokenizer"] == {"type": "bpe", "file": "tokenizer.json"},
          f"{variant['id']}: tokenizer entry {manifest['tokenizer']}")
    check(manifest["id"] == variant["id"] and manifest["task"] == variant["task"],
          f"{variant['id']}: manifest id/task")
    check(manifest["trained"] is False and "Untrained weights" in manifest["description"],
          f"{variant['id']}: untrained weights must be declared")
    with open(os.path.join(package, "tokenizer.json"), "rb") as a, \
            open(os.path.join(checkpoint, "tokenizer.json"), "rb") as b:
        check(a.read() == b.read(), f"{variant['id']}: tokenizer.json not copied verbatim")
    with open(os.path.join(package, "MODEL_CARD.md"), encoding="utf-8") as handle:
        card = handle.read()
    check("dnaserve-tests/tiny-random-bert" in card, f"{variant['id']}: card lacks provenance")
    if config["pad_token_id"] != pad:
        check("which is the id masked out of attention" in card,
              f"{variant['id']}: card does not explain the pad id difference")

    module = torch.jit.load(os.path.join(package, "model.pt"))
    module.eval()
    specials = {t["content"] for t in tok.get("added_tokens") or []} | set(SPECIALS)
    ordinary = [i for t, i in tok["model"]["vocab"].items() if t not in specials]
    g = torch.Generator().manual_seed(seed + 1)
    worst = 0.0
    limit = config["max_position_embeddings"] - 2
    shapes = [(1, 7, 0), (4, 37, 0), (3, 60, 9), (2, 1, 0)]
    # Rows longer than the model (the worker's N padding can make them): cut or chunked.
    shapes += [(2, 2 * limit + 5, 0), (3, limit + 3, limit // 2)]
    for batch, tokens, padded in shapes:
        dna = torch.tensor(ordinary)[torch.randint(0, len(ordinary), (batch, tokens),
                                                   generator=g)]
        if padded:
            dna[-1, tokens - padded:] = pad
        with torch.no_grad():
            expected = reference_outputs(config, state, dna, variant, cls_id, sep_id, pad)
            got = module(dna)  # what the worker sends: DNA tokens only, short rows right-padded
        if variant["head"] == "token" and padded:
            # Rows of padding carry no meaning (the worker ignores them).
            keep = (dna != pad)[..., None].expand_as(expected)
            expected = torch.where(keep, expected, torch.zeros_like(expected))
            got = torch.where(keep, got, torch.zeros_like(got))
        if not check(tuple(got.shape) == tuple(expected.shape),
                     f"{variant['id']}: shape {list(got.shape)} != {list(expected.shape)}"):
            continue
        diff = float((got - expected).abs().max())
        worst = max(worst, diff)
        check(diff < TOLERANCE, f"{variant['id']}: max abs diff {diff:.3g} at batch {batch}, "
                                f"{tokens} tokens, {padded} padded")
    # Sanity: the outputs must depend on the input (a constant model would pass shape checks).
    with torch.no_grad():
        a = module(torch.tensor([ordinary[:6]]))
        b = module(torch.tensor([list(reversed(ordinary[:6]))]))
    check(float((a - b).abs().max()) > 1e-6, f"{variant['id']}: output ignores the input")
    return {"id": variant["id"], "task": variant["task"], "max_abs_diff": worst,
            "weights_format": variant["weights"], "package": package}


def check_bf16_export(work, tok):
    """`--precision bf16` re-exports promoter-bert-tiny's checkpoint as a whole-bf16 module: the
    manifest says so, the module computes in bf16 (padded rows too: no NaN) and stays within the
    documented drift of the fp32 package, and the card reports the drift."""
    source = os.path.join(work, "models", "promoter-bert-tiny")
    package = os.path.join(work, "models-bf16", "promoter-bert-tiny-bf16")
    code, output = run_exporter(["--checkpoint", os.path.join(work, "checkpoints",
                                                              "promoter-bert-tiny"),
                                 "--task", "promoter", "--out", package, "--untrained",
                                 "--seed", "100", "--context-bp", "300", "--stride-bp", "150",
                                 "--precision", "bf16"])
    if not check(code == 0, f"bf16 export failed:\n{output}"):
        return None
    with open(os.path.join(package, "manifest.json"), encoding="utf-8") as handle:
        manifest = json.load(handle)
    check(manifest.get("precision") == "bf16", f"bf16 manifest precision {manifest.get('precision')}")
    check(manifest.get("batch_rows_per_pass") == 1, "bf16 manifest lacks batch_rows_per_pass 1")
    with open(os.path.join(package, "MODEL_CARD.md"), encoding="utf-8") as handle:
        check("Exported in bfloat16" in handle.read(), "bf16 card does not say how it was made")
    fp32 = torch.jit.load(os.path.join(source, "model.pt")).eval()
    bf16 = torch.jit.load(os.path.join(package, "model.pt")).eval()
    pad = special_id(tok, "[PAD]")
    specials = {t["content"] for t in tok.get("added_tokens") or []} | set(SPECIALS)
    ordinary = [i for t, i in tok["model"]["vocab"].items() if t not in specials]
    g = torch.Generator().manual_seed(7)
    dna = torch.tensor(ordinary)[torch.randint(0, len(ordinary), (4, 40), generator=g)]
    dna[-1, 30:] = pad
    with torch.no_grad():
        want, got = fp32(dna), bf16(dna)
    check(got.dtype == torch.bfloat16, f"bf16 export computes in {got.dtype}")
    drift = float((got.float() - want).abs().max())
    check(not torch.isnan(got.float()).any(), "bf16 export gives NaN (padded keys)")
    check(0.0 < drift <= 0.02, f"bf16 export drift {drift:.3g} (0 < drift <= 0.02 expected)")
    return {"package": package, "max_abs_diff": drift}


def check_refusals(work, tok):
    """Broken checkpoints: the exporter exits 1 with a message naming the problem."""
    pad = special_id(tok, "[PAD]")
    results = []

    def case(name, expect, mutate_config=None, mutate_state=None, mutate_dir=None,
             task="promoter", extra_args=()):
        config = base_config(vocab_size_of(tok), pad)
        if mutate_config:
            mutate_config(config)
        state = hf_state_dict(base_config(vocab_size_of(tok), pad), "sequence", 2, 5)
        if mutate_state:
            mutate_state(state)
        directory = os.path.join(work, "broken", name)
        shutil.rmtree(directory, ignore_errors=True)
        write_checkpoint(directory, config, state, tok, "bin")
        if mutate_dir:
            mutate_dir(directory)
        out = os.path.join(work, "broken-out", name)
        code, output = run_exporter_in_process(["--checkpoint", directory, "--task", task,
                                                "--out", out] + list(extra_args))
        ok = check(code == 1, f"refusal {name}: exit {code}, expected 1:\n{output}")
        ok = check(expect in output, f"refusal {name}: message lacks {expect!r}:\n{output}") and ok
        check(not os.path.exists(out), f"refusal {name}: a package was written anyway")
        results.append({"case": name, "refused": ok})

    def drop(key):
        return lambda s: s.pop(key)

    def reshape_key(key):
        return lambda s: s.__setitem__(key, torch.zeros(3, 3))

    def corrupt_safetensors(directory):
        os.remove(os.path.join(directory, "pytorch_model.bin"))
        with open(os.path.join(directory, "model.safetensors"), "wb") as handle:
            handle.write(struct.pack("<Q", 1 << 40) + b"{}")

    def bad_tokenizer(directory):
        path = os.path.join(directory, "tokenizer.json")
        with open(path, encoding="utf-8") as handle:
            doc = json.load(handle)
        doc["model"]["vocab"]["GGGG"] = vocab_size_of(tok) + 10
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(doc, handle)

    case("missing-tensor", "bert.encoder.layer.1.attention.self.key.weight".replace("bert.", ""),
         mutate_state=drop("bert.encoder.layer.1.attention.self.key.weight"))
    case("wrong-shape", "has shape [3, 3]",
         mutate_state=reshape_key("bert.encoder.layer.0.intermediate.dense.weight"))
    case("no-head", "no task head", mutate_state=lambda s: (s.pop("classifier.weight"),
                                                             s.pop("classifier.bias")))
    case("relative-positions", "position_embedding_type",
         mutate_config=lambda c: c.__setitem__("position_embedding_type", "relative_key"))
    case("dnabert2-alibi", "ALiBi",
         mutate_config=lambda c: c.__setitem__("alibi_starting_size", 512))
    case("unknown-tensor", "unexpected tensors",
         mutate_state=lambda s: s.__setitem__("bert.encoder.layer.0.mlp.gated_layers.weight",
                                              torch.zeros(2, 2)))
    case("corrupt-safetensors", "header length", mutate_dir=corrupt_safetensors)
    case("tokenizer-beyond-vocab", "token ids up to", mutate_dir=bad_tokenizer)
    case("splice-labels", "must include 'donor'", task="splice",
         extra_args=["--labels", "a,b"],
         mutate_state=lambda s: s.pop("bert.pooler.dense.weight"))
    return results


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--workdir", required=True)
    args = parser.parse_args()
    torch.set_num_threads(1)
    work = os.path.abspath(args.workdir)
    os.makedirs(work, exist_ok=True)
    tok, tok_source = tokenizer_source()
    summary = {"tokenizer": tok_source, "variants": [], "refusals": []}
    for n, variant in enumerate(VARIANTS):
        result = check_variant(work, tok, variant, seed=100 + n)
        if result:
            summary["variants"].append(result)
    summary["bf16"] = check_bf16_export(work, tok)
    summary["refusals"] = check_refusals(work, tok)
    summary["failures"] = FAILURES
    with open(os.path.join(work, "summary.json"), "w", encoding="utf-8") as handle:
        json.dump(summary, handle, indent=2)
    for v in summary["variants"]:
        print(f"{v['id']}: max abs diff {v['max_abs_diff']:.2e} ({v['weights_format']})")
    print(f"{len(summary['refusals'])} refusal cases, {len(FAILURES)} failures")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
