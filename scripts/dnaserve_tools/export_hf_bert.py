#!/usr/bin/env python3
"""Exports a Hugging Face BERT-family checkpoint (GENA-LM / DNABERT layout) as a dnaserve package.

Input: a checkpoint directory holding config.json, the weights (model.safetensors or
pytorch_model.bin, or their sharded *.index.json forms) and tokenizer.json (a BPE tokenizer).
The checkpoint must carry a task head: BertForSequenceClassification (promoter, enhancer,
chromatin) or BertForTokenClassification (splice).

Output: a package directory (worker/README.md, "Model package format") holding manifest.json
(tokenizer {"type": "bpe", "file": "tokenizer.json"}), model.pt (TorchScript, frozen),
tokenizer.json (copied unchanged) and MODEL_CARD.md (provenance: the checkpoint's
_name_or_path, file digests, the command line).

The TorchScript module re-implements BERT (scripts/dnaserve_models/hf_bert.py). It takes the DNA
token ids the worker's BPE tokenizer produces from tokenizer.json, adds the tokenizer's template
([CLS] ... [SEP]) itself, as the worker's package contract asks, and masks padding ids out of
attention as Hugging Face's attention_mask would; token heads return one row per input token. The
worker pads short windows with N bases, so normally nothing is masked.

Usage (LibTorch for Python lives in Debian's interpreter):
    /usr/bin/python3 scripts/export_hf_bert.py --checkpoint DIR --task promoter \\
        --out build/models/promoter-gena-lm [--context-bp 2000] [--stride-bp 1000]

Safetensors files are read by a small reader in this repository (Debian has no `safetensors`
package); bf16/fp16 weights are converted to float32.
"""

import argparse
import json
import os
import shlex
import shutil
import sys
from typing import Dict, List, Optional

import torch

from dnaserve_models.checkpoint_io import CheckpointError, load_state_dict
from dnaserve_models.hf_bert import (BertSpec, ConfigError, SequenceTaskModel,
                                     SpecialTokens, TokenTaskModel, map_state_dict)
from dnaserve_models.hf_tokenizer_json import (TokenizerJsonError,
                                               read_tokenizer_json)
from training.common import sha256_file

FORMAT_VERSION = 1
TASKS = {
    # task: (head, default context bp, default output activation)
    "promoter": ("sequence", 2000, None),  # softmax for >= 2 classes, sigmoid for 1
    "splice": ("token", 15000, "softmax"),
    "enhancer": ("sequence", 249, "none"),
    "chromatin": ("sequence", 1000, "sigmoid"),
}
REQUIRED_LABELS = {"splice": ("donor", "acceptor"), "enhancer": ("dev", "hk")}
SELF_CHECK_TOLERANCE = 1e-5
# A bf16 export: how far its outputs may move from the fp32 module's (and TorchScript from the
# bf16 eager module's, whose roundings may differ), on the self-check's windows. worker/README.md
# ("Reduced precision") documents 0.01 for probabilities; this also admits regression heads.
BF16_DRIFT_LIMIT = 0.02


class ExportError(Exception):
    pass



def generic_labels(id2label: Dict[int, str]) -> bool:
    """True when id2label holds only Hugging Face's placeholder names LABEL_<i>."""
    return all(name == f"LABEL_{i}" for i, name in id2label.items())


def resolve_labels(args, spec: BertSpec, num_labels: int) -> List[str]:
    """Names of the classifier's outputs, in order."""
    if args.labels_file:
        with open(args.labels_file, encoding="utf-8") as handle:
            labels = [line.strip() for line in handle if line.strip()]
    elif args.labels:
        labels = [s.strip() for s in args.labels.split(",")]
    elif spec.id2label and not generic_labels(spec.id2label):
        if sorted(spec.id2label) != list(range(num_labels)):
            raise ExportError(f"config.json id2label has {len(spec.id2label)} entries, the "
                              f"classifier {num_labels} outputs; pass --labels")
        labels = [spec.id2label[i] for i in range(num_labels)]
    else:
        raise ExportError(f"the classifier has {num_labels} outputs whose names config.json does "
                          "not give (id2label is missing or LABEL_<i>); pass --labels or "
                          "--labels-file")
    if len(labels) != num_labels or any(not name for name in labels):
        raise ExportError(f"{len(labels)} labels given for {num_labels} classifier outputs")
    if len(set(labels)) != len(labels):
        raise ExportError("output labels must be distinct")
    return labels


def promoter_column(args, labels: List[str]) -> int:
    """The class whose probability the promoter model reports."""
    if args.positive_label is None:
        if len(labels) == 1:
            return 0
        if len(labels) == 2:
            return 1  # binary classifiers put the positive class second by convention
        raise ExportError("a promoter classifier with more than two classes needs "
                          "--positive-label")
    if args.positive_label in labels:
        return labels.index(args.positive_label)
    if args.positive_label.isdigit() and int(args.positive_label) < len(labels):
        return int(args.positive_label)
    raise ExportError(f"--positive-label {args.positive_label!r} is neither a label "
                      f"({', '.join(labels)}) nor a class index")


def check_alphabet(facts) -> None:
    """Every base must be encodable: a single-base token, or the unknown token."""
    for base in "ACGTN":
        if base not in facts.vocab and facts.unk_id is None:
            raise ExportError(f"tokenizer.json cannot encode {base!r} (no such token and no "
                              "unknown token)")


def build_model(spec: BertSpec, head: str, specials: SpecialTokens, num_labels: int,
                activation: str, select: int) -> torch.nn.Module:
    if head == "sequence":
        return SequenceTaskModel(spec, specials, num_labels, activation, select)
    return TokenTaskModel(spec, specials, num_labels, activation)


def self_check(eager: torch.nn.Module, scripted: torch.jit.ScriptModule, facts, spec: BertSpec,
               special_count: int) -> float:
    """Max |eager - TorchScript| over random windows of DNA token ids: one ending in padding, one
    longer than the model."""
    generator = torch.Generator().manual_seed(0)
    specials = set(facts.special_tokens.values()) | {spec.pad_token_id}
    usable = torch.tensor(sorted(i for i in set(facts.vocab.values())
                                 if i not in specials and i < spec.vocab_size))
    if usable.numel() == 0:
        raise ExportError("tokenizer.json has no ordinary (non-special) tokens")
    tokens = max(1, min(48, spec.max_positions - special_count))
    ids = usable[torch.randint(0, usable.numel(), (3, tokens), generator=generator)]
    if tokens > 2:  # a row two tokens shorter, right-padded as the worker pads a batch
        ids[2, tokens - 2:] = spec.pad_token_id
    # And a row longer than the model (truncated or chunked, see hf_bert.py).
    longer = spec.max_positions - special_count + 7
    long_ids = usable[torch.randint(0, usable.numel(), (1, longer), generator=generator)]
    worst = 0.0
    for batch in (ids, long_ids):
        with torch.no_grad():
            a = eager(batch)
            b = scripted(batch)
        if a.shape != b.shape:
            raise ExportError(f"self-check: TorchScript output shape {list(b.shape)} differs "
                              f"from eager {list(a.shape)}")
        worst = max(worst, float((a - b).abs().max()))
    return worst


def model_card(args, spec: BertSpec, manifest: dict, files: Dict[str, str], parameters: int,
               ignored: List[str], facts, head: str, activation: str, select: int,
               check: float, notes: List[str]) -> str:
    provenance = spec.name_or_path or os.path.basename(os.path.abspath(args.checkpoint))
    head_text = {
        "sequence": "BertForSequenceClassification: pooler (tanh) over the [CLS] position, then "
                    "the classifier",
        "token": "BertForTokenClassification: the classifier over every token",
    }[head]
    out_text = {"softmax": "softmax over the classes", "sigmoid": "sigmoid per output",
                "none": "raw classifier outputs (regression)"}[activation]
    if select >= 0:
        out_text += f", reporting class {select} ({manifest['output_labels'][0]})"
    lines = [
        f"# {manifest['id']}",
        "",
        manifest["description"],
        "",
        "## Provenance",
        "",
        "| field | value |",
        "|---|---|",
        f"| source checkpoint (`_name_or_path`) | {provenance} |",
        f"| architectures (config.json) | {', '.join(spec.architectures) or 'not stated'} |",
        f"| transformers_version (config.json) | {spec.transformers_version or 'not stated'} |",
    ]
    for name, digest in sorted(files.items()):
        lines.append(f"| sha256 of {name} | `{digest}` |")
    lines += [
        f"| exported with | scripts/export_hf_bert.py, torch {torch.__version__}, "
        "torch.jit.script + freeze |",
        f"| export self-check | max abs difference eager vs TorchScript {check:.2e} |",
        "",
        "The weights keep the licence and terms of the source checkpoint: check them before "
        "serving or redistributing this package.",
        "",
        "## Architecture",
        "",
        f"BERT encoder: {spec.num_layers} layers, hidden size {spec.hidden_size}, "
        f"{spec.num_heads} attention heads, intermediate size {spec.intermediate_size}, "
        f"activation {spec.activation}, "
        f"{'pre' if spec.pre_layer_norm else 'post'}-LayerNorm blocks"
        f"{' with a final LayerNorm' if spec.last_layer_norm else ''}, "
        f"{spec.max_positions} positions, vocabulary {spec.vocab_size}; {parameters:,} "
        "parameters.",
        "",
        f"Head: {head_text}; output: {out_text}.",
        "",
        "## Inputs and outputs",
        "",
        f"Tokenizer: BPE from tokenizer.json (ids up to {facts.max_id}). Context "
        f"{manifest['context_window_bp']:,} bp per window"
        + (f", windows every {manifest['stride_bp']:,} bp" if "stride_bp" in manifest else "")
        + ".",
        "",
        "The module takes the window's DNA token ids [B, T] as the worker's tokenizer produces "
        "them from tokenizer.json and adds the tokenizer's template itself (prefix ids "
        f"{facts.prefix_ids}, suffix ids {facts.suffix_ids}), so the encoder sees what a Hugging "
        "Face tokenizer with add_special_tokens gives it. A window must therefore encode to at "
        f"most {spec.max_positions - len(facts.prefix_ids) - len(facts.suffix_ids)} tokens "
        "(max_position_embeddings less the template) to be seen whole; "
        + ("a longer window is encoded in consecutive chunks of that many tokens, each wrapped "
           "in the template, so every token still gets its row. " if head == "token" else
           "a longer window is cut to its first tokens, as Hugging Face's truncation=True "
           "would cut it (the worker's N padding sits at the end, so that is what goes). ")
        + f"Padding id {spec.pad_token_id} at the end of a row (a batch of windows "
        "whose encodings differ in length) is masked out of attention, as Hugging Face's "
        "attention_mask would be; the worker pads short windows with N bases, so windows of one "
        "batch normally need no padding and every position is real."
        + (" Token outputs have one row per input token (the template's rows are dropped)."
           if head == "token" else ""),
        "",
        f"Output labels: {', '.join(manifest['output_labels'][:16])}"
        + (f", ... ({len(manifest['output_labels'])} labels)"
           if len(manifest['output_labels']) > 16 else "") + ".",
        "",
    ]
    lines += [note + "\n" for note in notes]
    if ignored:
        lines += ["Checkpoint tensors not used by the exported head: " +
                  ", ".join(ignored[:8]) + (" ..." if len(ignored) > 8 else "") + ".", ""]
    lines += [
        "## Training data and evaluation",
        "",
        ("None: untrained weights." if not manifest["trained"] else
         "As documented by the source checkpoint; this export adds no training or evaluation."),
        "",
        "## Reproduce",
        "",
        "```",
        "/usr/bin/python3 scripts/export_hf_bert.py " +
        " ".join(shlex.quote(a) for a in args.argv),
        "```",
        "",
    ]
    return "\n".join(lines)


def export(args) -> str:
    task = args.task
    head, default_context, default_activation = TASKS[task]
    checkpoint = args.checkpoint
    config_path = os.path.join(checkpoint, "config.json")
    tokenizer_path = args.tokenizer or os.path.join(checkpoint, "tokenizer.json")
    try:
        with open(config_path, encoding="utf-8") as handle:
            config = json.load(handle)
    except FileNotFoundError:
        raise ExportError(f"{config_path}: not found") from None
    except json.JSONDecodeError as error:
        raise ExportError(f"{config_path}: not JSON ({error})") from None
    if not isinstance(config, dict):
        raise ExportError(f"{config_path}: not a JSON object")
    spec = BertSpec.from_config(config)
    facts = read_tokenizer_json(tokenizer_path)
    check_alphabet(facts)
    if facts.max_id >= spec.vocab_size:
        raise ExportError(f"tokenizer.json has token ids up to {facts.max_id}, but the model's "
                          f"vocabulary (config.json vocab_size) is {spec.vocab_size}")
    notes: List[str] = []
    if facts.pad_id is not None and facts.pad_id != spec.pad_token_id:
        # The worker pads with the tokenizer's id, and Hugging Face builds attention_mask from
        # the tokenizer too: that id is the one to mask.
        notes.append(f"config.json says pad_token_id {spec.pad_token_id}; tokenizer.json pads "
                     f"with {facts.pad_id}, which is the id masked out of attention.")
        spec.pad_token_id = facts.pad_id
    special_count = len(facts.prefix_ids) + len(facts.suffix_ids)
    if special_count >= spec.max_positions:
        raise ExportError("the special-token template fills max_position_embeddings")

    state, weight_files = load_state_dict(checkpoint)
    classifier = state.get("classifier.weight")
    if classifier is None or classifier.dim() != 2:
        raise ExportError("weights: no classifier.weight (the checkpoint has no task head: "
                          "export a checkpoint fine-tuned with BertForSequenceClassification or "
                          "BertForTokenClassification)")
    num_labels = int(classifier.shape[0])

    if task == "promoter":
        # One probability is served, under the label "promoter" unless --labels names it; the
        # class names only serve to pick that probability (--positive-label).
        if args.labels or args.labels_file:
            class_names = resolve_labels(args, spec, num_labels)
        elif spec.id2label and sorted(spec.id2label) == list(range(num_labels)):
            class_names = [spec.id2label[i] for i in range(num_labels)]
        else:
            class_names = [f"LABEL_{i}" for i in range(num_labels)]
        select = promoter_column(args, class_names)
        output_labels = ([class_names[select]] if args.labels or args.labels_file
                         else ["promoter"])
        activation = args.output_activation or ("softmax" if num_labels > 1 else "sigmoid")
        if num_labels == 1:
            select = 0
    else:
        output_labels = resolve_labels(args, spec, num_labels)
        select = -1
        activation = args.output_activation or default_activation
        for name in REQUIRED_LABELS.get(task, ()):
            if name not in output_labels:
                raise ExportError(f"a {task} model's labels must include {name!r}; got "
                                  f"{', '.join(output_labels)} (use --labels)")
    if activation == "softmax" and num_labels == 1:
        raise ExportError("softmax over a single output is constant; use sigmoid or none")

    specials = SpecialTokens(facts.prefix_ids, facts.suffix_ids, spec.pad_token_id)
    model = build_model(spec, head, specials, num_labels, activation, select)
    mapped, ignored = map_state_dict(spec, head, state, model)
    model.load_state_dict(mapped, strict=True)
    model.eval()
    parameters = sum(p.numel() for p in model.parameters())
    reference = None
    if args.precision == "bf16":
        # The whole module in bfloat16, activations included: on a CPU with AVX-512 BF16 this
        # runs about twice as fast as fp32, where the worker's load-time rewrite (bf16 products,
        # fp32 between them) gains about 1.5x (BENCHMARKS.md, table O). Padded keys get bf16's
        # own lowest value: fp32's rounds to -inf in bf16, and 0 x -inf is NaN.
        reference = model
        model = build_model(spec, head, specials, num_labels, activation, select)
        model.load_state_dict(mapped, strict=True)
        model = model.to(torch.bfloat16).eval()
        model.encoder.masked = float(torch.finfo(torch.bfloat16).min)
    with torch.no_grad():
        scripted = torch.jit.freeze(torch.jit.script(model))
    difference = self_check(model, scripted, facts, spec, special_count)
    if not difference <= (BF16_DRIFT_LIMIT if reference is not None else SELF_CHECK_TOLERANCE):
        raise ExportError(f"self-check: TorchScript differs from eager by {difference:.3g}")
    drift = None
    if reference is not None:
        drift = self_check(reference, scripted, facts, spec, special_count)
        if not drift <= BF16_DRIFT_LIMIT:  # NaN fails too
            raise ExportError(f"bf16 check: the bf16 module differs from fp32 by {drift:.3g} "
                              f"(more than {BF16_DRIFT_LIMIT})")
        notes.append(f"Exported in bfloat16 (`--precision bf16`): weights and activations are "
                     f"bfloat16; the largest output difference from the fp32 module on the "
                     f"export self-check's windows is {drift:.2e}.")

    context = args.context_bp or default_context
    package_dir = os.path.abspath(args.out)
    model_id = args.id or os.path.basename(package_dir)
    if model_id != os.path.basename(package_dir):
        raise ExportError(f"--id {model_id!r} must equal the package directory name "
                          f"{os.path.basename(package_dir)!r} (the worker requires it)")
    source = spec.name_or_path or os.path.basename(os.path.abspath(checkpoint))
    description = args.description or (
        f"{source}: BERT encoder ({spec.num_layers} layers, hidden {spec.hidden_size}) with a "
        f"{'token' if head == 'token' else 'sequence'} classification head, exported from a "
        f"Hugging Face checkpoint for the {task} task; {context:,} bp windows.")
    if args.untrained:
        description += (" Untrained weights (random initialisation): outputs are not biological "
                        "predictions; for pipeline testing only.")
    manifest = {
        "format_version": FORMAT_VERSION,
        "id": model_id,
        "task": task,
        "description": description,
        "is_default": bool(args.default),
        "tokenizer": {"type": "bpe", "file": "tokenizer.json"},
        "context_window_bp": context,
        "trained_window_bp": None,
        "output_labels": output_labels,
        "trained": not args.untrained,
        "weights": "model.pt",
        "model_card": "MODEL_CARD.md",
        # One window per forward pass: each is a full transformer forward, large enough alone
        # (worker/README.md, "Execution"), and filler rows would be computed for nothing.
        "batch_rows_per_pass": 1,
    }
    if args.precision == "bf16":
        manifest["precision"] = "bf16"  # the weights are bfloat16: the worker must know
    if task in ("promoter", "chromatin"):
        stride = args.stride_bp or (max(1, context // 2) if task == "promoter"
                                    else min(200, context))
        if not 1 <= stride <= context:
            raise ExportError("--stride-bp must be between 1 and --context-bp")
        manifest["stride_bp"] = stride
    elif args.stride_bp and args.stride_bp != context:
        raise ExportError(f"{task} windows do not overlap: --stride-bp must equal --context-bp")
    if args.seed is not None:
        manifest["seed"] = args.seed

    files = {name: sha256_file(os.path.join(checkpoint, name))
             for name in weight_files + ["config.json"]}
    files["tokenizer.json"] = sha256_file(tokenizer_path)
    parent = os.path.dirname(package_dir)
    os.makedirs(parent, exist_ok=True)
    staging = os.path.join(parent, f".{model_id}.staging")
    shutil.rmtree(staging, ignore_errors=True)
    os.makedirs(staging)
    scripted.save(os.path.join(staging, "model.pt"))
    shutil.copyfile(tokenizer_path, os.path.join(staging, "tokenizer.json"))
    with open(os.path.join(staging, "manifest.json"), "w", encoding="utf-8") as handle:
        json.dump(manifest, handle, indent=2)
        handle.write("\n")
    with open(os.path.join(staging, "MODEL_CARD.md"), "w", encoding="utf-8") as handle:
        handle.write(model_card(args, spec, manifest, files, parameters, ignored, facts, head,
                                activation, select, difference, notes))
    # Swap the finished package in, so the worker never sees a half-written one.
    shutil.rmtree(package_dir, ignore_errors=True)
    os.rename(staging, package_dir)
    return package_dir


def parse_args(argv: Optional[List[str]] = None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", required=True,
                        help="Hugging Face checkpoint directory (config.json, weights, "
                             "tokenizer.json)")
    parser.add_argument("--task", required=True, choices=sorted(TASKS))
    parser.add_argument("--out", required=True,
                        help="package directory to write; its name is the model id")
    parser.add_argument("--id", help="model id (must equal the --out directory name)")
    parser.add_argument("--tokenizer", help="tokenizer.json (default: the checkpoint's)")
    parser.add_argument("--context-bp", type=int,
                        help="bases per model window (default: promoter 2000, splice 15000, "
                             "enhancer 249, chromatin 1000)")
    parser.add_argument("--stride-bp", type=int,
                        help="bases between window starts, promoter/chromatin (default: "
                             "promoter context/2, chromatin 200)")
    parser.add_argument("--labels", help="comma-separated names of the classifier outputs")
    parser.add_argument("--labels-file", help="file with one output name per line")
    parser.add_argument("--positive-label",
                        help="promoter: the class (name or index) whose probability is served")
    parser.add_argument("--output-activation", choices=["softmax", "sigmoid", "none"],
                        help="applied to the classifier outputs (default per task)")
    parser.add_argument("--description", help="models-list description (default: generated)")
    parser.add_argument("--default", action="store_true", help="mark as the task's default")
    parser.add_argument("--untrained", action="store_true",
                        help="the weights are random (manifest trained=false, says so)")
    parser.add_argument("--seed", type=int, help="seed of random weights, for the manifest")
    parser.add_argument("--precision", choices=["fp32", "bf16"], default="fp32",
                        help="bf16: export the whole module in bfloat16 (manifest precision "
                             "bf16; worker/README.md, \"Reduced precision\")")
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    if args.context_bp is not None and not 1 <= args.context_bp <= 1_000_000:
        parser.error("--context-bp must be in [1, 1000000]")
    return args


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    torch.set_num_threads(1)
    try:
        path = export(args)
    except (ExportError, ConfigError, CheckpointError, TokenizerJsonError) as error:
        print(f"export_hf_bert: error: {error}", file=sys.stderr)
        return 1
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
