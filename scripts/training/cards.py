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


def compare(recomputed: Dict[str, float], carded: Dict[str, float],
            tolerance: float = 2e-3) -> List[str]:
    """Differences between recomputed metrics and the card's, as readable lines (empty = agree).

    Cards print 4 decimals, and BLAS thread counts move the last digits; `tolerance` covers both.
    """
    problems = []
    for name, value in recomputed.items():
        if name not in carded:
            problems.append(f"{name}: recomputed {format_value(value)}, not in the card")
            continue
        expected = carded[name]
        if math.isnan(value) and math.isnan(expected):
            continue
        if math.isnan(value) or math.isnan(expected) or abs(value - expected) > tolerance:
            problems.append(f"{name}: recomputed {format_value(value)}, card says "
                            f"{format_value(expected)}")
    for name in carded:
        if name not in recomputed:
            problems.append(f"{name}: in the card ({format_value(carded[name])}), not recomputed")
    return problems
