"""Variant backgrounds of the promoter, chromatin and expression scorers (issue 25, quantiles):
beside splice's (training/variant_background.py, which owns the draw, the file format and the
command), each default package's scorer statistic for fixed-seed random SNVs from the held-out
part of chr20, computed with the package's own TorchScript module exactly as the service's
scorer computes it (runner/workflows/variant_scorers.cc) and published (RoundScore, or the
variant workflow's 5 significant digits), so a quantile compares like with like.

promoter (`abs_delta`): windows of the model's width whose centres lie every half width within
  DISTANCE bp of the SNV (offsets 0, +-W/2, ...), each scored alone, REF and ALT (a window that
  does not hold the SNV scores the same); |round(max ALT - max REF)|.
chromatin (`abs_delta:<feature>`): one window of the model's width with the SNV at its centre
  (start = position - W/2), REF and ALT; per feature |round(ALT - REF)|. Features the model does
  not learn (a constant 0 output for every window scored) are left out: their delta is always 0
  and the service reports no quantile for them. Features sharing a name share a column (they
  share the learned output; checked).
expression (`abs_log2_fold_change:<context id>`): the SNVs are drawn inside the 9,198 bp TSS
  windows of held-out genes (a gene uniformly among those whose window lies wholly in the
  held-out region, then a position uniformly in its window), one row per (SNV, gene): per
  training context |log2((TPM_alt + 1) / (TPM_ref + 1))| at 5 significant digits, the model
  reading the context's name (what the worker feeds it for a context named by id).
"""

import json
import math
import os
import time
from typing import Dict, List, Sequence, Tuple

import numpy as np

from training import common, nets

PROMOTER_DISTANCE = 1000  # the service's default promoter distance (variant_score_request.h)
EXPRESSION_WINDOW = 4599  # the service's default expression window: the model's half window
CHROMATIN_DISTANCE = 0    # no distance option: one window centred on the variant
_BASES = "ACGT"
_BATCH = 64


def round_score(value: float) -> float:
    """The service's RoundScore (variant_background.round_score; repeated to avoid a cycle)."""
    rounded = math.copysign(math.floor(abs(value) * 1e4 + 0.5), value) / 1e4
    return 0.0 if rounded == 0 else rounded


def workflow_precision(value: float) -> float:
    """The runner's WorkflowPrecision: what %.5g keeps (GEX_ANN's precision)."""
    return float("%.5g" % (0.0 if value == 0 else value))


def log2_fold_change(log_tpm_alt: float, log_tpm_ref: float) -> float:
    """runner/variant/annotation_engine.cc Log2FoldChange (pseudo-count 1 TPM)."""
    alt = max(0.0, math.expm1(log_tpm_alt))
    ref = max(0.0, math.expm1(log_tpm_ref))
    return math.log2((alt + 1.0) / (ref + 1.0))


def alt_window(genome: str, start: int, width: int, pos: int, alt: str) -> str:
    """The plus-strand bases [start, start + width) with the SNV at `pos` applied."""
    bases = genome[start:start + width]
    if start <= pos < start + width:
        bases = bases[:pos - start] + alt + bases[pos - start + 1:]
    return bases


def promoter_offsets(width: int, distance: int) -> List[int]:
    """Window-centre offsets the service compares (step = half the width)."""
    step = max(1, width // 2)
    return list(range(-(distance // step) * step, distance + 1, step))


def _scores(module, tokenizer: Dict, windows: Sequence[str]) -> np.ndarray:
    ids = np.stack([nets.char_ids(w) for w in windows])
    return nets.predict_batches(module, nets.tokenize(tokenizer, ids), _BATCH)


def promoter_rows(module, manifest: Dict, genome: str, snvs, distance: int = PROMOTER_DISTANCE):
    width = manifest["context_window_bp"]
    offsets = promoter_offsets(width, distance)
    windows, plan = [], []
    for pos, ref, alt in snvs:
        ref_at, alt_at = [], []
        for offset in offsets:
            start = pos + offset - width // 2
            ref_at.append(len(windows))
            windows.append(genome[start:start + width])
            if start <= pos < start + width:
                alt_at.append(len(windows))
                windows.append(alt_window(genome, start, width, pos, alt))
            else:
                alt_at.append(ref_at[-1])
        plan.append((ref_at, alt_at))
    scores = _scores(module, manifest["tokenizer"], windows).reshape(-1)
    rows = []
    for (pos, ref, alt), (ref_at, alt_at) in zip(snvs, plan):
        best_ref = max(float(scores[i]) for i in ref_at)
        best_alt = max(float(scores[i]) for i in alt_at)
        rows.append((f"chr20:{pos + 1}:{ref}:{alt}",
                     {"abs_delta": abs(round_score(best_alt - best_ref))}))
    return ["abs_delta"], rows


def chromatin_rows(module, manifest: Dict, genome: str, snvs):
    width = manifest["context_window_bp"]
    windows = []
    for pos, _, alt in snvs:
        start = pos - width // 2
        windows.append(genome[start:start + width])
        windows.append(alt_window(genome, start, width, pos, alt))
    probs = _scores(module, manifest["tokenizer"], windows)  # [2 * snvs, features] float32
    names = manifest["output_labels"]
    learned = np.any(probs != 0, axis=0)
    columns, first_of = [], {}
    for f, name in enumerate(names):
        if not learned[f]:
            continue
        if name in first_of:
            if not np.array_equal(probs[:, f], probs[:, first_of[name]]):
                raise common.DataError(f"features named {name} differ; one column cannot hold "
                                       "both")
            continue
        first_of[name] = f
        columns.append(name)
    rows = []
    for i, (pos, ref, alt) in enumerate(snvs):
        ref_p, alt_p = probs[2 * i], probs[2 * i + 1]
        rows.append((f"chr20:{pos + 1}:{ref}:{alt}",
                     {f"abs_delta:{name}": abs(round_score(float(alt_p[f]) - float(ref_p[f])))
                      for name, f in first_of.items()}))
    return [f"abs_delta:{name}" for name in columns], rows


def held_out_genes(genes) -> list:
    """Genes whose whole TSS window lies in the held-out region (sorted by TSS, so the draw
    does not depend on the dataset's order)."""
    inside = [g for g in genes if common.in_held_out(*g.window_span())]
    return sorted(inside, key=lambda g: (g.tss, g.strand, g.transcript))


def draw_gene_snvs(genome: str, genes, count: int, seed: int):
    """(gene, 0-based position, REF, ALT) of `count` distinct (gene, position) pairs: a gene
    uniformly, a position uniformly inside its window, kept when A/C/G/T; ALT uniform."""
    rng = np.random.default_rng(seed)
    out, seen = [], set()
    while len(out) < count:
        gene = genes[int(rng.integers(0, len(genes)))]
        start, end = gene.window_span()
        pos = int(rng.integers(start, end))
        ref = genome[pos]
        if ref not in _BASES or (gene.transcript, pos) in seen:
            continue
        seen.add((gene.transcript, pos))
        alt = [b for b in _BASES if b != ref][int(rng.integers(0, 3))]
        out.append((gene, pos, ref, alt))
    return out


def sense_window(genome: str, gene, pos: int = -1, alt: str = "") -> str:
    """The gene's sense-strand TSS window, with the SNV applied when `alt`."""
    start, end = gene.window_span()
    bases = alt_window(genome, start, end - start, pos, alt) if alt else genome[start:end]
    return bases if gene.strand == "+" else common.reverse_complement(bases)


def expression_rows(module, manifest: Dict, genome: str, drawn):
    import torch
    from training import expression_data as data
    contexts = manifest["description_contexts"]["contexts"]
    max_tokens = manifest["text_tokenizer"]["max_tokens"]
    windows, ref_of, plan = [], {}, []  # one REF window per gene, one ALT window per row
    for gene, pos, ref, alt in drawn:
        if gene.transcript not in ref_of:
            ref_of[gene.transcript] = len(windows)
            windows.append(sense_window(genome, gene))
        plan.append((ref_of[gene.transcript], len(windows)))
        windows.append(sense_window(genome, gene, pos, alt))
    ids = np.stack([nets.char_ids(w) for w in windows]).astype(np.int64)
    values = np.zeros((len(windows), len(contexts)), dtype=np.float32)
    with torch.no_grad():
        for j, context in enumerate(contexts):
            text = data.text_ids(context["name"], max_tokens)
            for first in range(0, len(windows), _BATCH):
                batch = torch.from_numpy(ids[first:first + _BATCH])
                values[first:first + _BATCH, j] = module(
                    batch, torch.tensor([text] * len(batch))).numpy()
    columns = [f"abs_log2_fold_change:{c['id']}" for c in contexts]
    rows = []
    for (gene, pos, ref, alt), (ref_at, alt_at) in zip(drawn, plan):
        rows.append((f"chr20:{pos + 1}:{ref}:{alt}", {
            column: abs(workflow_precision(log2_fold_change(float(values[alt_at, j]),
                                                            float(values[ref_at, j]))))
            for j, column in enumerate(columns)}))
    return columns, rows


def compute(package: str, count: int, seed: int) -> Tuple[Dict, List[str], list, float]:
    """(manifest entry without the file name, statistic columns, rows, seconds) of the default
    promoter, chromatin or expression package at `package`."""
    from training import variant_background as vb
    nets.set_threads(2)
    manifest, module = nets.load_package(package)
    genome = common.chr20()
    task = manifest["task"]
    t0 = time.monotonic()
    if task == "expression":
        from training import expression_data as data
        genes = held_out_genes(data.load().genes)
        drawn = draw_gene_snvs(genome, genes, count, seed)
        columns, rows = expression_rows(module, manifest, genome, drawn)
        distance = EXPRESSION_WINDOW
        span = (min(g.window_span()[0] for g in genes), max(g.window_span()[1] for g in genes))
        region = vb.region_label(span)
    else:
        snvs = vb.draw_snvs(genome, count, seed)
        if task == "promoter":
            columns, rows = promoter_rows(module, manifest, genome, snvs)
            distance = PROMOTER_DISTANCE
        elif task == "chromatin":
            columns, rows = chromatin_rows(module, manifest, genome, snvs)
            distance = CHROMATIN_DISTANCE
        else:
            raise common.DataError(f"no variant background for task {task}")
        region = vb.region_label(vb.region())
    seconds = time.monotonic() - t0
    entry = {"scorer": task, "seed": seed, "snvs": count, "region": region, "distance": distance}
    return entry, columns, rows, seconds


def describe(task: str, entry: Dict, columns: Sequence[str], rows, seconds: float,
             load: float, margin: int) -> str:
    """The card section (training/variant_background.SECTION) of a promoter, chromatin or
    expression package."""
    values = np.array([[v[c] for c in columns] for _, v in rows])
    tail = np.quantile(values, [0.5, 0.9, 0.99])
    common_text = (
        f"`{entry['file']}` (declared as the manifest's `variant_background`) holds the "
        f"{task} scorer's statistics for {entry['snvs']:,} random SNVs, against which `POST "
        "/v1/variants/score` reports each delta's quantile (the share of background values <= "
        "the variant's, both at the published precision). Made by `scripts/evaluate-models "
        f"--only {task} --backgrounds --write-cards` (`scripts/training/scorer_backgrounds.py`,"
        f" drawn with numpy default_rng seed {entry['seed']}, the REF base A/C/G/T, the ALT "
        "uniform among the other three); each scored with this package's module exactly as the "
        "service scores it. ")
    if task == "promoter":
        body = (
            f"Positions drawn uniformly over {entry['region']} (the held-out region less "
            f"{margin:,} bp at each end, no position twice, splice's draw). Statistic "
            "`abs_delta`: |ALT max - REF max| over the windows whose centres lie every half "
            f"window within {entry['distance']} bp of the SNV (the scorer's `delta`, rounded to 4 decimals, its sign dropped); "
            "quantiles only for requests at that distance. ")
    elif task == "chromatin":
        body = (
            f"Positions drawn uniformly over {entry['region']} (the held-out region less "
            f"{margin:,} bp at each end, no position twice, splice's draw). Statistics "
            "`abs_delta:<feature>`, one per feature the response can report: |ALT - REF| of "
            "the one window centred on the SNV, rounded to 4 decimals; a reported feature's "
            f"quantile is against its own column. {len(columns)} columns: the features the "
            "model does not learn (a constant 0 output) are left out (their delta is always 0, "
            "their quantile null), and features sharing a name share one column (one learned "
            "output). `distance` 0: the scorer has no distance. ")
    else:
        body = (
            f"Rows are (SNV, gene) pairs: a gene drawn uniformly among the held-out genes whose "
            f"whole 9,198 bp TSS window lies in the held-out region ({entry['region']}), then a "
            "position uniformly inside that window (no pair twice). Statistics "
            "`abs_log2_fold_change:<context id>`, one per training context: "
            "|log2((TPM_alt + 1) / (TPM_ref + 1))| of that gene at the variant workflow's "
            "precision (5 significant digits), per context, not pooled, since contexts differ "
            "in how far a variant moves them; quantiles only for requests at window "
            f"{entry['distance']} (the default) and for contexts the request resolved. "
            f"{entry['snvs']:,} pairs rather than 1,000 to keep the 56-context scoring short "
            "on two shared cores. ")
    figures = (
        f"Over all columns: median {tail[0]:.4g}, 90th percentile {tail[1]:.4g}, 99th "
        f"percentile {tail[2]:.4g}. Scoring took {seconds:.0f} s (two threads, 5-minute load "
        f"average {load:.1f} on two cores). The service serves the loaded background as `GET "
        "/v1/models/{model}/card/variant_background.json`; the package digest covers the file.")
    return common_text + body + figures


def package_is_default(package: str) -> bool:
    with open(os.path.join(package, "manifest.json"), encoding="utf-8") as handle:
        return bool(json.load(handle).get("is_default"))


def compact_value(value: float, digits5: bool) -> str:
    """A published value as the file holds it: 5 significant digits (expression), else 4
    decimals without trailing zeros ("0", "0.12"), which parse back to the same double."""
    if digits5:
        return "%.5g" % value
    return f"{value:.4f}".rstrip("0").rstrip(".")


def run(package: str, write: bool, manifest: Dict, count: int) -> List[str]:
    """variant_background.run for a promoter, chromatin or expression package: recomputes its
    background and writes it (file, manifest entry, card section) when `write`, else compares
    it with the shipped one. Returns the problems found."""
    from training import variant_background as vb
    shipped = manifest.get("variant_background")
    if not write and shipped:
        count = int(shipped["snvs"])
    entry, columns, rows, seconds = compute(package, count, vb.SEED)
    entry = {"file": vb.FILE, **entry}
    load = os.getloadavg()[1]
    print(f"  variant background: {len(rows)} rows x {len(columns)} statistics scored in "
          f"{seconds:.0f} s (load {load:.1f})", flush=True)
    digits5 = manifest["task"] == "expression"
    return vb.write_or_check(
        package, manifest, write, entry, columns, rows,
        lambda: describe(manifest["task"], entry, columns, rows, seconds, load, vb.MARGIN),
        lambda value: compact_value(value, digits5))
