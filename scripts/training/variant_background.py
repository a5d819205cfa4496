"""Variant backgrounds (issue 25, quantiles): the scorer statistics POST /v1/variants/score
publishes, computed for a fixed-seed set of random SNVs from the held-out region of chr20, and
shipped in the package (manifest "variant_background", worker/README.md) so the service can say
where a variant's delta falls among them (its quantile: the share of background values <= it).

Draw (`draw_snvs`): positions uniform over common.HELD_OUT shrunk by MARGIN bp at each end (so
every window the scorer cuts is real held-out sequence), a position kept only when its base is
A, C, G or T and it was not drawn before; the ALT uniform among the three other bases; numpy's
default_rng(SEED). No annotation is consulted: the background is what a random SNV scores.

splice (`splice_background`): each SNV scored exactly as the service scores it
(training/splice_variants.score_variants: the REF and ALT windows the runner submits, windowed
as the worker windows the package) on both strands at DISTANCE; the strand the service reports
is the one with the larger DS_max after rounding ("+" on a tie), and its DS_AG, DS_AL, DS_DG,
DS_DL and DS_max are written rounded to 4 decimals (the service's RoundScore), so a published
value and the file compare exactly.

Written by `scripts/evaluate-models --only splice --backgrounds --write-cards` (recomputed and
compared with the shipped file without --write-cards). The default promoter, chromatin and
expression packages' backgrounds (training/scorer_backgrounds.py) go through `run` as well.
"""

import json
import math
import os
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from training import cards, common, nets, splice_variants

SEED = 2511                 # issue 25, scope 1 of quantiles
SNVS = 1000
MARGIN = 6000               # bp kept clear of the held-out region's ends
FILE = "variant_background.tsv"
SPLICE_COLUMNS = ("DS_AG", "DS_AL", "DS_DG", "DS_DL", "DS_max")
SECTION = "Variant background (quantiles)"
# Rows written per task when fewer than SNVS keep the scoring short (training/scorer_backgrounds).
_DEFAULT_COUNTS = {"expression": 150}
_BASES = "ACGT"


def region(margin: int = MARGIN) -> Tuple[int, int]:
    """0-based half-open span the SNVs are drawn from."""
    return common.HELD_OUT[0] + margin, common.HELD_OUT[1] - margin


def region_label(span: Tuple[int, int]) -> str:
    """1-based inclusive, as the manifest and the response name it."""
    return f"chr20:{span[0] + 1}-{span[1]}"


def draw_snvs(genome: str, count: int = SNVS, seed: int = SEED,
              span: Optional[Tuple[int, int]] = None) -> List[Tuple[int, str, str]]:
    """(0-based position, REF, ALT) of `count` distinct random SNVs in `span`, in draw order."""
    lo, hi = span or region()
    rng = np.random.default_rng(seed)
    out, seen = [], set()
    while len(out) < count:
        pos = int(rng.integers(lo, hi))
        ref = genome[pos]
        if ref not in _BASES or pos in seen:
            continue
        seen.add(pos)
        alt = [b for b in _BASES if b != ref][int(rng.integers(0, 3))]
        out.append((pos, ref, alt))
    return out


def round_score(value: float) -> float:
    """The service's RoundScore: half away from zero at 4 decimals, -0 as 0."""
    rounded = math.copysign(math.floor(abs(value) * 1e4 + 0.5), value) / 1e4
    return 0.0 if rounded == 0 else rounded


def splice_row(plus: Dict[str, float], minus: Dict[str, float]) -> Dict[str, float]:
    """The statistics of the strand the service reports (runner variant_score_response.cc)."""
    chosen = minus if round_score(minus["DS"]) > round_score(plus["DS"]) else plus
    row = {name: round_score(chosen[name]) for name in SPLICE_COLUMNS[:4]}
    row["DS_max"] = round_score(chosen["DS"])
    return row


def splice_background(package: str, count: int = SNVS, seed: int = SEED,
                      distance: int = splice_variants.DISTANCE):
    """(rows [(spec, {column: value})], seconds) of a splice package."""
    nets.set_threads(2)
    manifest, module = nets.load_package(package)
    genome, genome_ids = common.chr20(), common.chr20_ids()
    snvs = draw_snvs(genome, count, seed)
    t0 = time.monotonic()
    stranded = [splice_variants.Variant(pos, ref, alt, strand, 0, "background", 0, "")
                for pos, ref, alt in snvs for strand in "+-"]
    scores = splice_variants.score_variants(module, manifest, genome_ids, stranded, distance)
    seconds = time.monotonic() - t0
    rows = []
    for i, (pos, ref, alt) in enumerate(snvs):
        rows.append((f"chr20:{pos + 1}:{ref}:{alt}", splice_row(scores[2 * i], scores[2 * i + 1])))
    return rows, seconds


def four_decimals(value: float) -> str:
    return f"{value:.4f}"


def write_tsv(path: str, rows, columns: Sequence[str],
              value_text: Callable[[float], str] = four_decimals) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("variant\t" + "\t".join(columns) + "\n")
        for spec, values in rows:
            handle.write(spec + "\t" + "\t".join(value_text(values[c]) for c in columns) + "\n")


def read_tsv(path: str):
    with open(path, encoding="utf-8") as handle:
        header = handle.readline().rstrip("\n").split("\t")
        rows = []
        for line in handle:
            fields = line.rstrip("\n").split("\t")
            rows.append((fields[0], {c: float(v) for c, v in zip(header[1:], fields[1:])}))
    return header[1:], rows


def quantile(values: Sequence[float], value: float) -> Optional[float]:
    """Share of `values` <= `value` (None for no values): the service's definition."""
    if not values:
        return None
    return sum(1 for v in values if v <= value) / len(values)


def manifest_entry(count: int, seed: int, distance: int) -> Dict:
    return {"file": FILE, "scorer": "splice", "seed": seed, "snvs": count,
            "region": region_label(region()), "distance": distance}


def card_section(entry: Dict, rows, seconds: float, load: float) -> str:
    ds = np.array([values["DS_max"] for _, values in rows])
    tail = {q: float(np.quantile(ds, q)) for q in (0.5, 0.9, 0.99)}
    return (
        f"`{FILE}` (declared as the manifest's `variant_background`) holds the splice "
        f"statistics of {entry['snvs']:,} random SNVs, against which `POST /v1/variants/score` "
        "reports each splice delta's quantile (the share of background values <= the "
        "variant's). Made by `scripts/evaluate-models --only splice --backgrounds "
        "--write-cards` (`scripts/training/variant_background.py`): positions drawn uniformly "
        f"(numpy default_rng, seed {entry['seed']}) over {entry['region']} (the held-out region "
        f"less {MARGIN:,} bp at each end), kept when the base is A/C/G/T and not drawn before, "
        "the ALT uniform among the other three bases; each scored exactly as the service scores "
        f"it at distance {entry['distance']} on both strands, the strand the service reports "
        "kept (larger DS_max after rounding), its DS_AG, DS_AL, DS_DG, DS_DL and DS_max "
        "rounded to 4 decimals. Quantiles are only given for requests at the same distance. The "
        "service serves the loaded background as `GET /v1/models/{model}/card/"
        "variant_background.json`; the package digest covers the file. "
        f"DS_max of the background: median {tail[0.5]:.4f}, 90th percentile {tail[0.9]:.4f}, "
        f"99th percentile {tail[0.99]:.4f}. Scoring took {seconds:.0f} s ({4 * entry['snvs']:,} "
        f"15 kb forwards, two threads, 5-minute load average {load:.1f} on two cores).")


def run(package: str, write: bool, count: int = SNVS) -> List[str]:
    """Recomputes a splice package's background; writes it (file, manifest entry, card section)
    when `write`, else compares it with the shipped one. Returns the problems found."""
    manifest_path = os.path.join(package, "manifest.json")
    with open(manifest_path, encoding="utf-8") as handle:
        manifest = json.load(handle)
    if manifest["task"] != "splice":  # promoter, chromatin, expression
        from training import scorer_backgrounds
        return scorer_backgrounds.run(package, write, manifest, _DEFAULT_COUNTS.get(
            manifest["task"], count))
    shipped = manifest.get("variant_background")
    if not write and shipped:
        count = int(shipped["snvs"])
    entry = manifest_entry(count, SEED, splice_variants.DISTANCE)
    rows, seconds = splice_background(package, count, SEED, entry["distance"])
    load = os.getloadavg()[1]
    print(f"  variant background: {count} SNVs scored in {seconds:.0f} s (load {load:.1f})",
          flush=True)
    return write_or_check(package, manifest, write, entry, SPLICE_COLUMNS, rows,
                          lambda: card_section(entry, rows, seconds, load))


def write_or_check(package: str, manifest: Dict, write: bool, entry: Dict,
                   columns: Sequence[str], rows, section: Callable[[], str],
                   value_text: Callable[[float], str] = four_decimals) -> List[str]:
    """The end of every scorer's `run` (splice here, the others in scorer_backgrounds): writes
    the recomputed background (file, manifest entry, the card's SECTION from `section()`) when
    `write`, else compares it with the shipped one. Returns the problems found."""
    if write:
        write_tsv(os.path.join(package, FILE), rows, columns, value_text)
        manifest["variant_background"] = entry
        with open(os.path.join(package, "manifest.json"), "w", encoding="utf-8") as handle:
            handle.write(json.dumps(manifest, indent=2) + "\n")
        card = os.path.join(package, manifest["model_card"])
        with open(card, encoding="utf-8") as handle:
            text = handle.read()
        text = cards.with_section(text, SECTION, section(), "Figures")
        with open(card, "w", encoding="utf-8") as handle:
            handle.write(text)
        return []
    shipped = manifest.get("variant_background")
    if not shipped:
        return ["the package declares no variant_background (write it with --write-cards)"]
    problems = [f"manifest variant_background.{k} is {shipped.get(k)!r}, recomputed {v!r}"
                for k, v in entry.items() if shipped.get(k) != v]
    old_columns, old = read_tsv(os.path.join(package, shipped["file"]))
    if list(old_columns) != list(columns):
        return problems + ["the background's statistics differ from the shipped file's"]
    if [spec for spec, _ in old] != [spec for spec, _ in rows]:
        return problems + ["the background's SNVs differ from the shipped file's"]
    worst = max(abs(a[c] - b[c]) for (_, a), (_, b) in zip(old, rows) for c in columns)
    print(f"  variant background: largest difference from the shipped file {worst:.1e}")
    # A few float32 ulps can move the last published digit (splice's 4th decimal), never more.
    if worst > 2e-4:
        problems.append(f"background values differ from the shipped file by up to {worst:.4f}")
    return problems
