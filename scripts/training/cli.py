"""scripts/train-models and scripts/evaluate-models (see those wrappers for usage)."""

import argparse
import importlib
import json
import math
import os
import subprocess
import sys
import tempfile
import time

from training import cards, common, plots, registry

DEFAULT_PACKAGES = os.path.join(common.ROOT, "worker", "packages")


def selected_modules(only: str):
    names = registry.MODULES
    if only:
        wanted = [x.strip() for x in only.split(",") if x.strip()]
        unknown = [x for x in wanted if x not in names]
        if unknown:
            raise SystemExit(f"unknown module(s) {', '.join(unknown)}; modules: "
                             f"{', '.join(names)}")
        names = [n for n in names if n in wanted]
    return names


def machine_note() -> str:
    load = os.getloadavg()
    return f"load average {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} (1 / 5 / 15 min)"


def cmd_train(args) -> int:
    os.makedirs(args.out, exist_ok=True)
    if args.ids:
        os.environ["DNASERVE_TRAIN_IDS"] = args.ids
    names = selected_modules(args.only)
    if args.jobs > 1 and len(names) > 1:
        return train_in_parallel(args, names)
    rows = []
    started = time.monotonic()
    print(f"training into {args.out}; {os.cpu_count()} CPUs; {machine_note()}", flush=True)
    for name in names:
        module = importlib.import_module(f"training.{name}")
        t0 = time.monotonic()
        ids = module.train(args.out, args.seed)
        minutes = (time.monotonic() - t0) / 60
        rows.append((name, ids, minutes))
        print(f"{name}: {', '.join(ids) or '(no packages)'} in {minutes:.1f} min; "
              f"{machine_note()}", flush=True)
    total = (time.monotonic() - started) / 60
    print("\n| module | packages | minutes |\n|---|---|---:|")
    for name, ids, minutes in rows:
        print(f"| {name} | {', '.join(ids)} | {minutes:.1f} |")
    print(f"| all | | {total:.1f} |")
    print(f"finished; {machine_note()}")
    return 0


def chain_minutes(name, names) -> float:
    """Expected minutes from `name`'s start to the end of the longest chain of modules in
    `names` that need it (registry.NEEDS)."""
    after = [n for n in names if name in registry.NEEDS.get(n, [])]
    return registry.EXPECTED_MINUTES[name] + max((chain_minutes(n, names) for n in after),
                                                 default=0)


def parallel_order(names):
    """Longest chains first (a module plus what waits for it), so the last to start are the
    short ones and the lanes finish close together (registry.EXPECTED_MINUTES; ties keep
    registry order). A module comes after every module it needs."""
    return sorted(names, key=lambda n: -chain_minutes(n, names))


def next_ready(queue, names, finished):
    """The first queued module whose needs (those in this run) have all finished, else None."""
    for name in queue:
        if all(need in finished for need in registry.NEEDS.get(name, []) if need in names):
            return name
    return None


def train_in_parallel(args, names) -> int:
    """Runs the modules as `--jobs` child processes at a time, longest chain first, each after
    the modules it needs (most modules train on one thread, so one module per core is what fills
    a machine). Their lines are prefixed by model id, so the interleaved output stays readable."""
    common.chr20_ids()  # fetch and cache the shared genome once, before the children race for it
    queue = parallel_order(names)
    print(f"training {', '.join(queue)} into {args.out}, {args.jobs} at a time; "
          f"{machine_note()}", flush=True)
    # One thread per child unless told otherwise: --jobs children already fill the cores, and
    # modules that default to two threads (annotation, expression) would oversubscribe them.
    env = dict(os.environ)
    env.setdefault("DNASERVE_TRAIN_THREADS", "1")
    started = time.monotonic()
    running, failed, finished = {}, [], set()
    while queue or running:
        # A module whose need failed cannot run as specified: it fails too.
        for name in [n for n in queue
                     if any(need in failed for need in registry.NEEDS.get(n, []))]:
            queue.remove(name)
            failed.append(name)
            print(f"{name}: not started, it needs {', '.join(registry.NEEDS[name])}", flush=True)
        while len(running) < args.jobs:
            name = next_ready(queue, names, finished)
            if name is None:
                break
            queue.remove(name)
            command = [sys.executable, "-m", "training.cli", "train", "--jobs", "1",
                       "--only", name, "--out", args.out, "--seed", str(args.seed)]
            running[subprocess.Popen(command, env=env)] = name
        time.sleep(1)
        for process in [p for p in running if p.poll() is not None]:
            name = running.pop(process)
            if process.returncode != 0:
                failed.append(name)
            else:
                finished.add(name)
    print(f"all modules finished in {(time.monotonic() - started) / 60:.1f} min"
          + (f"; FAILED: {', '.join(failed)}" if failed else "") + f"; {machine_note()}")
    return 1 if failed else 0


def packages(root: str):
    for entry in sorted(os.listdir(root)):
        path = os.path.join(root, entry)
        manifest = os.path.join(path, "manifest.json")
        if entry.startswith(".") or not os.path.isfile(manifest):
            continue
        with open(manifest, encoding="utf-8") as handle:
            yield path, json.load(handle)


def cmd_evaluate(args) -> int:
    modules = selected_modules(args.only)
    if args.openspliceai is not None:
        os.environ["DNASERVE_EVAL_OPENSPLICEAI"] = "1" if args.openspliceai else "0"
    failures = 0
    print(f"evaluating {args.packages}; {machine_note()}", flush=True)
    for path, manifest in packages(args.packages):
        task = manifest.get("task")
        if task not in modules:
            if not args.only:
                print(f"\n## {manifest.get('id')}: no training module for task {task}; skipped")
            continue
        module = importlib.import_module(f"training.{task}")
        print(f"\n## {manifest['id']}", flush=True)
        t0 = time.monotonic()
        if args.backgrounds:  # only the variant backgrounds (training/variant_background.py)
            failures += run_background(module, path, args.write_cards)
            continue
        try:
            with plots.capture() as captured:
                results = module.evaluate(path)
        except Exception as error:  # one broken package must not hide the others' figures
            print(f"FAILED: {type(error).__name__}: {error}")
            failures += 1
            continue
        informative = getattr(module, "NOT_COMPARED", set())
        carried = getattr(module, "CARRIED_METRICS", ())
        if args.write_cards:
            if hasattr(module, "update_card"):  # sections the evaluation owns (splice)
                module.update_card(path, results)
            figures = cards.complete(path, results, captured, informative, carried)
            print(f"  card written: front matter, {len(figures)} figure(s)"
                  + "".join(f"\n    {name} ({os.path.getsize(os.path.join(path, name)):,} bytes)"
                            for name in figures))
        card_path = os.path.join(path, manifest["model_card"])
        with open(card_path, encoding="utf-8") as handle:
            card_text = handle.read()
        carded = cards.parse_metrics(card_text)
        for name, value in results.items():
            suffix = "  (not compared)" if name in informative else ""
            print(f"  {name:45s} {cards.format_value(value)}{suffix}")
        compared = {k: v for k, v in results.items() if k not in informative}
        problems = cards.compare(compared, carded, carried=carried)
        kept = cards.carried_metrics(carded, carried)
        if kept:
            prefixes = [p for p in carried if any(k.startswith(p) for k in kept)]
            print(f"  {len(kept)} card metrics recorded by other runs carried over "
                  f"({', '.join(p + '*' for p in prefixes)})")
        # The front matter must say what the card's table says (compare checked the table).
        tabled = {k: carded.get(k, v) for k, v in compared.items()}
        problems += check_card_extras(path, manifest, card_text, {**tabled, **kept}, captured)
        if problems:
            failures += 1
            print("  DIFFERS FROM THE MODEL CARD:")
            for line in problems:
                print(f"    {line}")
        else:
            print(f"  card agrees ({len(compared)} metrics)" if compared else
                  "  no metrics (untrained package; the card says so)")
        failures += run_background(module, path, args.write_cards)
        print(f"  ({(time.monotonic() - t0):.0f} s)", flush=True)
    print(f"\n{'all metrics agree with the model cards' if not failures else f'{failures} package(s) differ or failed'}")
    return 1 if failures else 0


def run_background(module, path: str, write: bool) -> int:
    """1 when the package's shipped variant background differs from the recomputed one (a
    module with VARIANT_BACKGROUND; --write-cards rewrites it instead)."""
    wanted = getattr(module, "VARIANT_BACKGROUND", False)
    if not wanted:
        return 0
    if wanted is not True:  # a set of model ids: only those packages ship one
        with open(os.path.join(path, "manifest.json"), encoding="utf-8") as handle:
            if json.load(handle).get("id") not in wanted:
                return 0
    from training import variant_background
    problems = variant_background.run(path, write)
    for line in problems:
        print(f"  VARIANT BACKGROUND: {line}")
    return 1 if problems else 0


def check_card_extras(path: str, manifest, card_text: str, compared, captured):
    """The card's figures and front matter against the recomputed ones: the figures it embeds
    are the ones the evaluation draws and exist beside it, and its front matter is the one
    these metrics give (numbers within the metrics' tolerance). PNGs that are not byte-identical
    to a fresh rendering are reported, not failed (other BLAS builds move the last digits)."""
    problems = []
    with tempfile.TemporaryDirectory(prefix="dnaserve-card-") as scratch:
        figures = plots.render(captured, scratch)
        linked = cards.figure_links(card_text)
        if linked != list(figures):
            problems.append(f"figures: the card embeds {linked or 'none'}, the evaluation draws "
                            f"{list(figures) or 'none'} (scripts/evaluate-models --write-cards)")
        redrawn = []
        for name in figures:
            committed = os.path.join(path, name)
            if not os.path.isfile(committed):
                problems.append(f"figures: {name} is missing from the package")
                continue
            with open(committed, "rb") as a, open(os.path.join(scratch, name), "rb") as b:
                if a.read() != b.read():
                    redrawn.append(name)
        if redrawn:
            print(f"  note: {', '.join(redrawn)} not byte-identical to a fresh drawing")
    meanings = cards.parse_meanings(card_text)
    expected = cards.front_matter(manifest, compared, meanings, list(figures))
    actual = cards.parse_front_matter(card_text)
    if actual is None:
        problems.append("front matter: the card has none (scripts/evaluate-models --write-cards)")
    else:
        problems += cards.compare_front_matter(expected, actual)
    return problems


# The card metrics a roster table shows, per task (the first ones present are shown).
KEY_METRICS = {
    "promoter": ["auroc", "auprc", "auroc_vs_distal"],
    "splice": ["topk_mean", "auprc_mean"],
    "chromatin": ["median_auroc_learned_features", "learned_features"],
    "annotation": ["model_exon_f1", "model_transcript_f1", "model_cds_exon_f1",
                   "augustus_cds_cds_exon_f1", "model_cds_transcript_f1",
                   "augustus_cds_cds_transcript_f1"],
    "expression": ["model_spearman_all_pairs", "baseline_tissue_mean_spearman_all_pairs",
                   "model_spearman_within_gene_median",
                   "baseline_tissue_mean_spearman_within_gene_median"],
}


def cmd_roster(args) -> int:
    """Markdown roster of a packages directory (README.md, worker/README.md), from the manifests
    and the cards' metrics tables."""
    print("| id | task | default | trained | what it is | key held-out metrics (model card) |")
    print("|---|---|---|---|---|---|")
    for path, manifest in packages(args.packages):
        with open(os.path.join(path, manifest["model_card"]), encoding="utf-8") as handle:
            carded = cards.parse_metrics(handle.read())
        keys = KEY_METRICS.get(manifest["task"]) or list(carded)[:3]
        shown = ", ".join(f"{k} {cards.format_value(carded[k])}" for k in keys if k in carded)
        description = manifest["description"].split(". ")[0].rstrip(".") + "."
        print(f"| `{manifest['id']}` | {manifest['task']} | "
              f"{'yes' if manifest['is_default'] else ''} | "
              f"{'yes' if manifest['trained'] else '**no**'} | {description} | {shown or '-'} |")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(prog="train-models / evaluate-models")
    sub = parser.add_subparsers(dest="command", required=True)
    train = sub.add_parser("train")
    train.add_argument("--only", default="", help="comma-separated modules (default: all)")
    train.add_argument("--out", default=DEFAULT_PACKAGES, help="packages directory")
    train.add_argument("--seed", type=int, default=registry.SEED)
    train.add_argument("--ids", default="",
                       help="comma-separated package ids to (re)train (default: all of the "
                            "selected modules'); lets runs of one module go in parallel")
    train.add_argument("--jobs", type=int, default=2,
                       help="modules trained at once, one child process each (default 2: "
                            "one per core of the reference machine; 1 = in this process)")
    evaluate = sub.add_parser("evaluate")
    evaluate.add_argument("--only", default="", help="comma-separated modules (default: all)")
    evaluate.add_argument("--packages", default=DEFAULT_PACKAGES, help="packages directory")
    evaluate.add_argument("--write-cards", action="store_true",
                          help="(re)write each card's figures (PNGs) and front matter from this "
                               "evaluation instead of only comparing them")
    evaluate.add_argument("--backgrounds", action="store_true",
                          help="only the variant backgrounds of the packages that ship one "
                               "(splice): recompute and compare, or write with --write-cards")
    group = evaluate.add_mutually_exclusive_group()
    group.add_argument("--openspliceai", dest="openspliceai", action="store_true", default=None,
                       help="also score the OpenSpliceAI checkpoints (default when present)")
    group.add_argument("--no-openspliceai", dest="openspliceai", action="store_false")
    roster = sub.add_parser("roster", help="markdown roster table of a packages directory")
    roster.add_argument("--packages", default=DEFAULT_PACKAGES)
    args = parser.parse_args()
    commands = {"train": cmd_train, "evaluate": cmd_evaluate, "roster": cmd_roster}
    try:
        return commands[args.command](args)
    except common.DataError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
