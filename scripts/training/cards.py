"""Model cards (MODEL_CARD.md) with a machine-readable metrics table.

scripts/evaluate-models recomputes every metric from the committed packages and compares it with
the card, so the metrics table has one fixed shape:

    | metric | value | meaning |
    |---|---|---|
    | `auroc` | 0.9412 | TSS-centred windows vs other windows, held-out region |

A row whose first cell is a back-quoted name and whose second a number (or `nan`) is a metric;
`parse_metrics` reads exactly those rows. Training modules render the table with
`metrics_table`, so every card follows it.
"""

import json
import os
import math
import re
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

_METRIC_ROW = re.compile(r"^\|\s*`([A-Za-z0-9_.:+-]+)`\s*\|\s*([-+0-9.eE]+|nan)\s*\|")


def format_value(value: float) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "nan"
    if float(value).is_integer() and abs(value) >= 1:
        return str(int(value))
    return f"{value:.4f}"


def metrics_table(metrics: Dict[str, float], meanings: Dict[str, str]) -> str:
    rows = ["| metric | value | meaning |", "|---|---|---|"]
    for name, value in metrics.items():
        rows.append(f"| `{name}` | {format_value(value)} | {meanings.get(name, '')} |")
    return "\n".join(rows)


def parse_metrics(card_text: str) -> Dict[str, float]:
    out = {}
    for line in card_text.splitlines():
        match = _METRIC_ROW.match(line.strip())
        if match:
            out[match.group(1)] = float(match.group(2))
    return out


def card(model_id: str, headline: str, manifest: Dict, facts: Sequence[Tuple[str, str]],
         sections: Sequence[Tuple[str, str]]) -> str:
    """A MODEL_CARD.md: title, headline, a table of manifest facts, then the sections in order."""
    tokenizer = json.dumps(manifest["tokenizer"])
    rows = [
        ("task", manifest["task"]),
        ("trained", "**yes**" if manifest["trained"] else "**no: random weights**"),
        ("default model of its task", "yes" if manifest["is_default"] else "no"),
        ("tokenizer", f"`{tokenizer}`"),
        ("context_window_bp", f"{manifest['context_window_bp']:,}"),
        ("stride_bp", f"{manifest['stride_bp']:,}" if "stride_bp" in manifest else "n/a"),
    ]
    if "flank_bp" in manifest:
        rows.append(("flank_bp / output_window_bp",
                     f"{manifest['flank_bp']:,} / {manifest['output_window_bp']:,}"))
    rows += list(facts)
    lines = [f"# {model_id}", "", headline, "", "| | |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in rows]
    lines.append("")
    for title, body in sections:
        lines += [f"## {title}", "", body.strip(), ""]
    return "\n".join(lines)


def carried_metrics(carded: Dict[str, float], prefixes: Sequence[str]) -> Dict[str, float]:
    """The card's metrics that other runs recorded (names starting with one of `prefixes`, e.g.
    the previous package's figures, or a workflow measured through the running service): an
    evaluation carries them over instead of recomputing them."""
    prefixes = tuple(prefixes)
    return {k: v for k, v in carded.items() if prefixes and k.startswith(prefixes)}


def compare(recomputed: Dict[str, float], carded: Dict[str, float],
            tolerance: float = 2e-3, carried: Sequence[str] = ()) -> List[str]:
    """Differences between recomputed metrics and the card's, as readable lines (empty = agree).

    Cards print 4 decimals, and BLAS thread counts move the last digits; `tolerance` covers both.
    A count of predictions (a name ending in `_predicted`) may differ by that share of itself:
    the same last digits can tip a near-tie in a decoder (one exon of a thousand). Metrics of
    the card named by a `carried` prefix are not expected to be recomputed (carried_metrics).
    """
    problems = []
    for name, value in recomputed.items():
        if name not in carded:
            problems.append(f"{name}: recomputed {format_value(value)}, not in the card")
            continue
        expected = carded[name]
        if math.isnan(value) and math.isnan(expected):
            continue
        allowed = tolerance
        if name.endswith("_predicted"):
            allowed = max(tolerance, tolerance * abs(expected))
        if math.isnan(value) or math.isnan(expected) or abs(value - expected) > allowed:
            problems.append(f"{name}: recomputed {format_value(value)}, card says "
                            f"{format_value(expected)}")
    kept = carried_metrics(carded, carried)
    for name in carded:
        if name not in recomputed and name not in kept:
            problems.append(f"{name}: in the card ({format_value(carded[name])}), not recomputed")
    return problems


# ---------------------------------------------------------------------------------------------
# Front matter (Hugging Face model-card metadata) and figures
#
# Every MODEL_CARD.md starts with a YAML block in the Hugging Face model-card style, generated
# from the same recomputed metrics as the table, and embeds the PNGs of training/plots.py in a
# "## Figures" section (relative links: the PNGs sit beside the card in the package). Both are
# (re)written by `complete`, which scripts/evaluate-models --write-cards and the training modules
# call; scripts/evaluate-models recomputes and compares them like the metrics table.

LICENSE = "mit"
FIGURES_TITLE = "Figures"
_FRONT_MATTER = re.compile(r"\A---\n(.*?\n)---\n\n?", re.S)
_FIGURE_LINK = re.compile(r"!\[[^\]]*\]\(([A-Za-z0-9_.-]+\.png)\)")

# Hugging Face pipeline tags: per-base labels are token classification, a label or score per
# window is text classification (the hub has no DNA-specific tags), regressions are "other".
PIPELINE_TAGS = {"promoter": "text-classification", "chromatin": "text-classification",
                 "splice": "token-classification", "annotation": "token-classification",
                 "enhancer": "other", "expression": "other"}
TASK_NAMES = {"promoter": "Promoter prediction", "splice": "Splice-site prediction",
              "enhancer": "Enhancer activity", "chromatin": "Chromatin feature prediction",
              "annotation": "Gene annotation", "expression": "Expression prediction"}

_GENOME = "GRCh37 chr20 (Debian vt-examples)"
_REFGENE = "hg19 RefSeq refGene chr20 (UCSC)"
# Training data of each package, by longest id prefix (human-readable names: these data sets are
# not on the Hugging Face hub).
DATASETS = {
    "promoter-human": [_GENOME, _REFGENE],
    "promoter-fly": ["dm3 RefSeq upstream 2 kb (Debian r-bioc-biostrings)"],
    "promoter-yeast": ["EPDnew S. cerevisiae promoters"],
    "splice-human": [_GENOME, _REFGENE],
    "chromatin-human": [_GENOME, "ENCODE-DREAM TF ChIP-seq peaks (chr20)",
                        "DeepSEA 919 feature names"],
    "annotation-human": [_GENOME, _REFGENE],
    "expression-human": [_GENOME, _REFGENE, "Roadmap Epigenomics RNA-seq (56 epigenomes)"],
    "enhancer": [],
}
_HUMAN_HELD_OUT = "GRCh37 chr20:53,025,520-63,025,520 (held out)"
HELD_OUT = {
    "promoter-human": _HUMAN_HELD_OUT, "splice-human": _HUMAN_HELD_OUT,
    "chromatin-human": _HUMAN_HELD_OUT, "annotation-human": _HUMAN_HELD_OUT,
    "promoter-fly": "dm3 chromosome arm chr2L (held out)",
    "promoter-yeast": "EPDnew ids with FP number mod 10 in {0, 1} (held out)",
    "expression-human": "chr20 genes whose window touches chr20:53,025,520-63,025,520 "
                        "x 56 Roadmap epigenomes (held out)",
}


def _by_prefix(table: Dict, model_id: str, default):
    keys = [k for k in table if model_id.startswith(k)]
    return table[max(keys, key=len)] if keys else default


def parse_meanings(card_text: str) -> Dict[str, str]:
    """{metric: meaning} from the metrics table's third column."""
    out = {}
    for line in card_text.splitlines():
        match = _METRIC_ROW.match(line.strip())
        if match:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            out[match.group(1)] = cells[2] if len(cells) > 2 else ""
    return out


def _yaml_number(value: float):
    """The value as the metrics table prints it (4 decimals; integers as integers; nan as
    None, which YAML writes as null)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    text = format_value(value)
    return int(text) if re.fullmatch(r"-?\d+", text) else float(text)


def front_matter(manifest: Dict, metrics: Dict[str, float], meanings: Dict[str, str],
                 figures: Sequence[str]) -> Dict:
    """The metadata block of a card, as a dict (rendered by `render_front_matter`)."""
    task, model_id = manifest["task"], manifest["id"]
    trained = bool(manifest.get("trained"))
    tags = ["dnaserve", "dna", "genomics", task, "torchscript"]
    tags.append("trained" if trained else "untrained")
    block = {
        "license": LICENSE,
        "library_name": "pytorch",
        "pipeline_tag": PIPELINE_TAGS.get(task, "other"),
        "tags": tags,
        "datasets": list(_by_prefix(DATASETS, model_id, [])) if trained else [],
        "model_name": model_id,
        "dnaserve": {"task": task, "trained": trained,
                     "default_model_of_task": bool(manifest.get("is_default")),
                     "figures": list(figures)},
    }
    if not trained:
        block["dnaserve"]["note"] = ("untrained: random weights, no held-out evaluation; the "
                                     "outputs are noise with the right shape")
        return block
    results = [{"type": name, "name": meanings.get(name) or name, "value": _yaml_number(value)}
               for name, value in metrics.items()]
    block["model-index"] = [{
        "name": model_id,
        "results": [{
            "task": {"type": task, "name": TASK_NAMES.get(task, task)},
            "dataset": {"name": _by_prefix(HELD_OUT, model_id, "held-out data"),
                        "type": "dnaserve-held-out", "split": "held-out"},
            "metrics": results,
        }],
    }]
    return block


def render_front_matter(block: Dict) -> str:
    import yaml
    return "---\n" + yaml.safe_dump(block, sort_keys=False, width=100, allow_unicode=True) + "---\n"


def parse_front_matter(card_text: str) -> Optional[Dict]:
    """The card's YAML block as a dict, or None when it has none."""
    import yaml
    match = _FRONT_MATTER.match(card_text)
    if not match:
        return None
    value = yaml.safe_load(match.group(1))
    return value if isinstance(value, dict) else None


def strip_front_matter(card_text: str) -> str:
    return _FRONT_MATTER.sub("", card_text, count=1)


def figure_links(card_text: str) -> List[str]:
    """PNG file names the card embeds, in order."""
    return _FIGURE_LINK.findall(card_text)


def figures_section(figures: Dict[str, str]) -> str:
    lines = [f"## {FIGURES_TITLE}", "",
             "Made by `scripts/evaluate-models` (training/plots.py) from the held-out predictions "
             "behind this card's metrics; the PNGs sit beside this card in the package.", ""]
    for name, caption in figures.items():
        lines += [f"![{caption}]({name})", "", f"*{caption}*", ""]
    return "\n".join(lines)


def with_figures(card_text: str, figures: Dict[str, str]) -> str:
    """The card with its figures section replaced (or inserted before "## Known limits", else at
    the end); no section when there are no figures."""
    body = re.sub(rf"^## {FIGURES_TITLE}\n.*?(?=^## |\Z)", "", card_text, flags=re.S | re.M)
    if not figures:
        return body
    section = figures_section(figures) + "\n"
    match = re.search(r"^## Known limits", body, flags=re.M)
    if match:
        return body[:match.start()] + section + body[match.start():]
    return body.rstrip("\n") + "\n\n" + section


def with_section(card_text: str, title: str, body: str, before: str) -> str:
    """The card with section `title` replaced by `body` (or inserted before section `before`,
    else at the end): how an evaluation rewrites a section it owns (--write-cards)."""
    section = f"## {title}\n\n{body.strip()}\n\n"
    pattern = rf"^## {re.escape(title)}\n.*?(?=^## |\Z)"
    if re.search(pattern, card_text, flags=re.S | re.M):
        return re.sub(pattern, lambda _: section, card_text, count=1, flags=re.S | re.M)
    match = re.search(rf"^## {re.escape(before)}\n", card_text, flags=re.M)
    if match:
        return card_text[:match.start()] + section + card_text[match.start():]
    return card_text.rstrip("\n") + "\n\n" + section


def complete(package_dir: str, results: Dict[str, float], captured,
             not_compared: Iterable[str] = (), carried: Sequence[str] = ()) -> Dict[str, str]:
    """Renders the captured figures into the package, embeds them in its card and writes the
    front matter from `results` and the card's `carried` metrics (carried_metrics). Stale PNGs
    of the package are removed. Returns the figures."""
    from training import plots
    with open(os.path.join(package_dir, "manifest.json"), encoding="utf-8") as handle:
        manifest = json.load(handle)
    card_path = os.path.join(package_dir, manifest["model_card"])
    for name in os.listdir(package_dir):
        if name.endswith(".png"):
            os.remove(os.path.join(package_dir, name))
    figures = plots.render(captured, package_dir) if captured is not None else {}
    with open(card_path, encoding="utf-8") as handle:
        text = with_figures(strip_front_matter(handle.read()), figures)
    skip = set(not_compared)
    compared = {k: v for k, v in results.items() if k not in skip}
    compared.update(carried_metrics(parse_metrics(text), carried))
    block = front_matter(manifest, compared, parse_meanings(text), list(figures))
    with open(card_path, "w", encoding="utf-8") as handle:
        handle.write(render_front_matter(block) + "\n" + text)
    return figures


def _typed(entries) -> bool:
    """A list of metric entries (dicts with a unique `type`), as front matter holds them."""
    types = [e.get("type") for e in entries if isinstance(e, dict)]
    return (bool(entries) and len(types) == len(entries) and None not in types
            and len(set(types)) == len(types))


def compare_front_matter(expected, actual, tolerance: float = 2e-3, where: str = "") -> List[str]:
    """Differences between two front-matter blocks (numbers within `tolerance`), as lines."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        problems = []
        for key in expected:
            if key not in actual:
                problems.append(f"front matter {where}{key}: missing")
            else:
                problems += compare_front_matter(expected[key], actual[key], tolerance,
                                                 f"{where}{key}.")
        problems += [f"front matter {where}{key}: not expected" for key in actual
                     if key not in expected]
        return problems
    if isinstance(expected, list) and isinstance(actual, list):
        if _typed(expected) and _typed(actual):
            # Metric entries are matched by their `type` (a card lists them in any order).
            return compare_front_matter({e["type"]: e for e in expected},
                                        {a["type"]: a for a in actual}, tolerance, where)
        if len(expected) != len(actual):
            return [f"front matter {where.rstrip('.')}: {len(actual)} entries, expected "
                    f"{len(expected)}"]
        return [p for i, (e, a) in enumerate(zip(expected, actual))
                for p in compare_front_matter(e, a, tolerance, f"{where}{i}.")]
    numeric = (int, float)
    if (isinstance(expected, numeric) and isinstance(actual, numeric)
            and not isinstance(expected, bool) and not isinstance(actual, bool)):
        if abs(float(expected) - float(actual)) <= tolerance:
            return []
    elif expected == actual:
        return []
    return [f"front matter {where.rstrip('.')}: card says {actual!r}, recomputed {expected!r}"]
