"""Model-card figures: ROC, precision-recall and calibration plots for the classifiers, a held-out
locus drawn as predicted vs annotated gene models for annotation, predicted vs observed for
expression. Rendered with Debian's matplotlib (Agg), small (4 x 3 in at 100 dpi) and
byte-reproducible (no timestamp or software version in the PNG).

The evaluations hand their arrays over with the `offer_*` functions, which do nothing unless a
`capture()` is active, so an evaluation stays a function returning metrics:

    with plots.capture() as captured:
        results = module.evaluate(package_dir)
    written = plots.render(captured, package_dir)   # {file name: caption}

Only figures are made here; the card text that embeds them is training/cards.py.
"""

import contextlib
import os
from dataclasses import dataclass, field
from typing import Dict, List, Sequence, Tuple

import numpy as np

WIDTH_IN, HEIGHT_IN, DPI = 4.0, 3.0, 100
# Points per drawn curve: enough to look smooth at 400 px, few enough to keep files small.
CURVE_POINTS = 300
CALIBRATION_BINS = 10
# Matplotlib writes "Software: matplotlib version ..." into every PNG: left out, so the files do
# not change with the plotting library's version when the data did not.
_PNG_METADATA = {"Software": None}


@dataclass
class Captured:
    """What one evaluation offered, in the order it offered it."""
    binary: List[Tuple[str, Dict[str, Tuple[np.ndarray, np.ndarray]]]] = field(default_factory=list)
    gene_models: List[Dict] = field(default_factory=list)
    expression: List[Dict] = field(default_factory=list)

    def empty(self) -> bool:
        return not (self.binary or self.gene_models or self.expression)


_active: List[Captured] = []


@contextlib.contextmanager
def capture():
    captured = Captured()
    _active.append(captured)
    try:
        yield captured
    finally:
        _active.pop()


def offer_binary(title: str, series: Dict[str, Tuple[Sequence[float], Sequence[int]]]) -> None:
    """Probabilities and 0/1 labels, one entry per curve (e.g. {"acceptor": (s, y), ...})."""
    if _active:
        _active[-1].binary.append((title, {
            name: (np.asarray(s, dtype=np.float64).ravel(), np.asarray(y).ravel().astype(bool))
            for name, (s, y) in series.items()}))


def offer_gene_models(region: Tuple[int, int], predicted: Sequence, reference: Sequence) -> None:
    """Predicted and annotated structures (objects with strand, exons [(start, end)], cds) in
    chromosome coordinates, and the evaluated region."""
    if _active:
        _active[-1].gene_models.append(
            {"region": region, "predicted": list(predicted), "reference": list(reference)})


def offer_expression(predicted: np.ndarray, observed: np.ndarray, baseline: np.ndarray = None,
                     unit: str = "ln(TPM + 1)") -> None:
    """[genes, contexts] predictions and measurements (and a baseline's predictions)."""
    if _active:
        _active[-1].expression.append({
            "predicted": np.asarray(predicted, dtype=np.float64),
            "observed": np.asarray(observed, dtype=np.float64),
            "baseline": None if baseline is None else np.asarray(baseline, dtype=np.float64),
            "unit": unit})


# ---------------------------------------------------------------------------------------------
# Curves (numpy; the same tie handling as training/metrics.py)


def roc_points(scores: np.ndarray, labels: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """(false positive rate, true positive rate) at every distinct threshold, from (0, 0)."""
    order = np.argsort(-scores, kind="mergesort")
    s, y = scores[order], labels[order]
    last = np.concatenate((np.flatnonzero(np.diff(s)), [s.size - 1]))
    tp = np.cumsum(y)[last]
    fp = (last + 1) - tp
    positives, negatives = max(int(y.sum()), 1), max(int(y.size - y.sum()), 1)
    return (np.concatenate(([0.0], fp / negatives)), np.concatenate(([0.0], tp / positives)))


def pr_points(scores: np.ndarray, labels: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """(recall, precision) at every distinct threshold, highest threshold first."""
    order = np.argsort(-scores, kind="mergesort")
    s, y = scores[order], labels[order]
    last = np.concatenate((np.flatnonzero(np.diff(s)), [s.size - 1]))
    tp = np.cumsum(y)[last]
    return tp / max(int(y.sum()), 1), tp / (last + 1)


def calibration_points(scores: np.ndarray, labels: np.ndarray, bins: int = CALIBRATION_BINS):
    """(mean predicted probability, observed positive rate, count) of each non-empty bin of
    equal width over [0, 1]."""
    index = np.clip((np.clip(scores, 0.0, 1.0) * bins).astype(np.int64), 0, bins - 1)
    counts = np.bincount(index, minlength=bins)
    predicted = np.bincount(index, weights=scores, minlength=bins)
    observed = np.bincount(index, weights=labels.astype(np.float64), minlength=bins)
    keep = counts > 0
    return predicted[keep] / counts[keep], observed[keep] / counts[keep], counts[keep]


def thin(x: np.ndarray, y: np.ndarray, points: int = CURVE_POINTS):
    """At most `points` points of a curve, evenly spaced along its index, ends kept."""
    if x.size <= points:
        return x, y
    keep = np.unique(np.linspace(0, x.size - 1, points).round().astype(np.int64))
    return x[keep], y[keep]


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    def ranks(v):
        order = np.argsort(v, kind="mergesort")
        r = np.empty(v.size)
        sorted_v = v[order]
        bounds = np.concatenate(([0], np.flatnonzero(np.diff(sorted_v)) + 1, [v.size]))
        for lo, hi in zip(bounds[:-1], bounds[1:]):
            r[order[lo:hi]] = (lo + hi - 1) / 2.0
        return r
    ra, rb = ranks(a), ranks(b)
    if ra.std() == 0 or rb.std() == 0:
        return float("nan")
    return float(np.corrcoef(ra, rb)[0, 1])


# ---------------------------------------------------------------------------------------------
# Rendering


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams.update({"font.size": 7, "axes.titlesize": 8, "legend.fontsize": 6,
                         "figure.dpi": DPI, "savefig.dpi": DPI, "lines.linewidth": 1.2,
                         "svg.hashsalt": "dnaserve"})
    return plt


def _save(fig, path: str) -> None:
    fig.tight_layout(pad=0.4)
    fig.savefig(path, format="png", dpi=DPI, metadata=_PNG_METADATA)
    import matplotlib.pyplot as plt
    plt.close(fig)


def _figure():
    plt = _pyplot()
    return plt, plt.subplots(figsize=(WIDTH_IN, HEIGHT_IN))


def _label(name: str, value: float, what: str) -> str:
    return f"{name} ({what} {value:.3f})" if name else f"{what} {value:.3f}"


def render_roc(title: str, series, path: str) -> None:
    from training import metrics
    plt, (fig, ax) = _figure()
    for name, (s, y) in series.items():
        fpr, tpr = thin(*roc_points(s, y))
        ax.plot(fpr, tpr, label=_label(name, metrics.auroc(s, y), "AUROC"))
    ax.plot([0, 1], [0, 1], color="0.6", linestyle=":", linewidth=0.8)
    ax.set(xlim=(0, 1), ylim=(0, 1.01), xlabel="false positive rate",
           ylabel="true positive rate", title=f"{title}: ROC (held-out)")
    ax.legend(loc="lower right")
    _save(fig, path)


def render_pr(title: str, series, path: str) -> None:
    from training import metrics
    plt, (fig, ax) = _figure()
    for name, (s, y) in series.items():
        recall, precision = thin(*pr_points(s, y))
        line, = ax.plot(recall, precision,
                        label=_label(name, metrics.average_precision(s, y), "AP"))
        ax.axhline(y.mean(), color=line.get_color(), linestyle=":", linewidth=0.8)
    ax.set(xlim=(0, 1), ylim=(0, 1.01), xlabel="recall", ylabel="precision",
           title=f"{title}: precision-recall (held-out)")
    ax.legend(loc="upper right")
    ax.text(0.01, 0.01, "dotted: positive rate (a random classifier)", transform=ax.transAxes,
            fontsize=6, color="0.4")
    _save(fig, path)


def render_calibration(title: str, series, path: str) -> None:
    plt, (fig, ax) = _figure()
    for name, (s, y) in series.items():
        predicted, observed, counts = calibration_points(s, y)
        ax.plot(predicted, observed, marker="o", markersize=3,
                label=f"{name} ({y.size:,} scored)" if name else f"{y.size:,} scored")
    ax.plot([0, 1], [0, 1], color="0.6", linestyle=":", linewidth=0.8, label="perfect")
    ax.set(xlim=(0, 1), ylim=(0, 1.01), xlabel="predicted probability (10 bins)",
           ylabel="observed positive rate", title=f"{title}: calibration (held-out)")
    ax.legend(loc="upper left")
    _save(fig, path)


def _draw_structure(ax, lane: float, structure, color: str, lo: int, hi: int) -> None:
    exons = [(max(a, lo), min(b, hi)) for a, b in structure.exons if b > lo and a < hi]
    if not exons:
        return
    ax.plot([exons[0][0], exons[-1][1]], [lane, lane], color=color, linewidth=0.7)
    for a, b in exons:
        ax.add_patch(_rect(a, lane - 0.15, b - a, 0.3, color))
    for a, b in getattr(structure, "cds", []) or []:
        if b > lo and a < hi:
            ax.add_patch(_rect(max(a, lo), lane - 0.3, min(b, hi) - max(a, lo), 0.6, color))
    mid = (exons[0][0] + exons[-1][1]) / 2
    ax.text(mid, lane + 0.33, "->" if structure.strand == "+" else "<-", ha="center",
            va="bottom", fontsize=5, color=color)


def _rect(x, y, w, h, color):
    from matplotlib.patches import Rectangle
    return Rectangle((x, y), max(w, 1), h, facecolor=color, edgecolor=color, linewidth=0.3)


def choose_locus(region: Tuple[int, int], reference: Sequence, flank: int = 5_000):
    """The drawn locus, chosen from the annotation alone (not from the predictions, so it is not
    the model's best case): the first annotated multi-exon transcript (>= 5 exons, 15-80 kb)
    in the region, with `flank` bases either side. None when there is no such transcript."""
    for r in sorted(reference, key=lambda t: (t.exons[0][0], t.exons[-1][1])):
        span = r.exons[-1][1] - r.exons[0][0]
        if len(r.exons) >= 5 and 15_000 <= span <= 80_000:
            lo = max(region[0], r.exons[0][0] - flank)
            hi = min(region[1], r.exons[-1][1] + flank)
            return lo, hi
    return None


def render_gene_models(item: Dict, path: str) -> bool:
    locus = choose_locus(item["region"], item["reference"])
    if locus is None:
        return False
    lo, hi = locus

    def inside(structures):
        seen, out = set(), []
        for s in sorted(structures, key=lambda t: (t.exons[0][0], t.exons[-1][1], t.strand)):
            key = (s.strand, tuple(s.exons))
            if s.exons[-1][1] > lo and s.exons[0][0] < hi and key not in seen:
                seen.add(key)
                out.append(s)
        return out
    annotated, predicted = inside(item["reference"]), inside(item["predicted"])
    # At most 6 lanes each: a locus with more isoforms is cut, and the title says how many.
    shown_a, shown_p = annotated[:6], predicted[:6]
    plt, (fig, ax) = _figure()
    lanes = 0
    for s in shown_a:
        _draw_structure(ax, lanes, s, "tab:blue", lo, hi)
        lanes += 1
    split = lanes
    for s in shown_p:
        _draw_structure(ax, lanes + 0.5, s, "tab:orange", lo, hi)
        lanes += 1
    ax.set_xlim(lo, hi)
    ax.set_ylim(lanes + 0.6, -1.0)
    ax.set_yticks([split / 2 - 0.5, split + 0.5 + (lanes - split) / 2 - 0.5] if lanes > split
                  else [split / 2 - 0.5])
    ax.set_yticklabels([f"RefSeq ({len(annotated)})", f"predicted ({len(predicted)})"]
                       [:len(ax.get_yticks())])
    ax.ticklabel_format(axis="x", style="plain", useOffset=False)
    ax.set_xticks(np.linspace(lo, hi, 4).round())
    ax.set_xticklabels([f"{int(v):,}" for v in np.linspace(lo, hi, 4).round()])
    ax.set_xlabel("chr20 (GRCh37), held-out locus; thick boxes CDS, thin UTR")
    ax.set_title("annotation: predicted (orange) vs annotated (blue)")
    for side in ("right", "top", "left"):
        ax.spines[side].set_visible(False)
    ax.tick_params(axis="y", length=0)
    _save(fig, path)
    return True


def render_expression_across(item: Dict, path: str) -> None:
    predicted, observed = item["predicted"], item["observed"]
    plt, (fig, ax) = _figure()
    p, o = predicted.ravel(), observed.ravel()
    top = float(max(p.max(), o.max(), 1e-6)) * 1.03
    # Hexagons without anti-aliased edges: a third of the file size, and no visible difference.
    hb = ax.hexbin(o, p, gridsize=30, bins="log", mincnt=1, cmap="viridis",
                   extent=(0, top, 0, top), linewidths=0, antialiased=False)
    fig.colorbar(hb, ax=ax, label="gene-context pairs", pad=0.02)
    ax.plot([0, top], [0, top], color="0.5", linestyle=":", linewidth=0.8)
    ax.set(xlim=(0, top), ylim=(0, top), xlabel=f"observed {item['unit']}",
           ylabel=f"predicted {item['unit']}",
           title=(f"expression: {predicted.shape[0]} held-out genes x {predicted.shape[1]} "
                  f"contexts\nSpearman over all pairs {spearman(p, o):.3f}"))
    _save(fig, path)


def within_gene_spearman(predicted: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """Spearman across contexts within each gene (nan for a constant row)."""
    return np.array([spearman(predicted[g], observed[g]) for g in range(predicted.shape[0])])


def render_expression_within(item: Dict, path: str) -> None:
    predicted, observed, baseline = item["predicted"], item["observed"], item["baseline"]
    plt, (fig, ax) = _figure()
    bins = np.linspace(-1, 1, 21)
    rows = [("model", within_gene_spearman(predicted, observed), "tab:orange")]
    if baseline is not None:
        rows.append(("training genes' mean profile", within_gene_spearman(baseline, observed),
                     "tab:blue"))
    for name, values, color in rows:
        values = values[np.isfinite(values)]
        if values.size == 0:
            continue
        median = float(np.median(values))
        ax.hist(values, bins=bins, histtype="step", color=color, linewidth=1.2,
                label=f"{name} (median {median:.3f})")
        ax.axvline(median, color=color, linestyle="--", linewidth=0.8)
    ax.set(xlim=(-1, 1), xlabel="Spearman across contexts, within one gene",
           ylabel="held-out genes",
           title="expression: does the prediction follow the tissue?")
    ax.legend(loc="upper left")
    _save(fig, path)


def _slug(title: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in title.lower()).strip("_")


def render(captured: Captured, out_dir: str) -> Dict[str, str]:
    """Writes the PNGs of everything captured into out_dir; {file name: caption}, in order."""
    written: Dict[str, str] = {}
    several = len(captured.binary) > 1
    for title, series in captured.binary:
        prefix = f"{_slug(title)}_" if several else ""
        for kind, fn, caption in (
                ("roc", render_roc, "ROC curve"), ("pr", render_pr, "precision-recall curve"),
                ("calibration", render_calibration,
                 "calibration: observed positive rate per bin of predicted probability")):
            name = f"{prefix}{kind}.png"
            fn(title, series, os.path.join(out_dir, name))
            written[name] = f"{title}: {caption} on the held-out set"
    for item in captured.gene_models[:1]:
        name = "annotation_locus.png"
        if render_gene_models(item, os.path.join(out_dir, name)):
            written[name] = ("a held-out locus (the first annotated transcript with >= 5 exons "
                             "spanning 15-80 kb, chosen from the annotation alone): predicted "
                             "vs annotated gene models")
    for item in captured.expression[:1]:
        render_expression_across(item, os.path.join(out_dir, "expression_across_genes.png"))
        written["expression_across_genes.png"] = (
            "predicted vs observed expression over every held-out gene and context")
        render_expression_within(item, os.path.join(out_dir, "expression_within_gene.png"))
        written["expression_within_gene.png"] = (
            "within-gene, across-context Spearman per held-out gene, beside the training "
            "genes' mean profile")
    return written
