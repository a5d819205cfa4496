"""The training modules, in training order.

Each module `scripts/training/<name>.py` exposes

    train(out_dir: str, seed: int) -> list[str]   writes its packages into out_dir, returns ids
    evaluate(package_dir: str) -> dict            recomputes the package's metrics on the
                                                  held-out data from the package alone

and is named after the task its packages serve: scripts/evaluate-models hands each package to
the module whose name is the package manifest's `task`. Model cards carry their metrics in the
table format of training/cards.py, which scripts/evaluate-models compares with the recomputed
values.

Card figures and front matter (training/plots.py, training/cards.py): an evaluation hands the
arrays behind its metrics to `plots.offer_binary` / `offer_gene_models` / `offer_expression`
(no-ops unless a `plots.capture()` is active), and `cards.complete(package, results, captured,
NOT_COMPARED)` draws the PNGs beside the card, embeds them and writes the YAML front matter.
scripts/evaluate-models checks both; `--write-cards` rewrites them.
"""

MODULES = ["promoter", "splice", "chromatin", "enhancer", "annotation", "expression"]

# Seed of every training run (scripts/train-models --seed overrides it).
SEED = 20240520

# Training time of each module on one core of the reference 2-vCPU machine, evaluation included
# (minutes, measured in a full `scripts/train-models --jobs 2` run on 2026-11-26; expression
# in `--only expression` on 2026-11-27, its evaluation now runs the embedded chromatin network;
# splice for its 28 epochs on 2026-11-27, alone on one thread: 36 min training, 2 evaluating):
# `scripts/train-models --jobs N` starts the longest chain first.
EXPECTED_MINUTES = {"chromatin": 51, "annotation": 18, "splice": 38, "expression": 7,
                    "promoter": 10, "enhancer": 0}

# Modules that must finish first when they train in the same run: annotation embeds the splice
# network and promoter-human's TSS track (training/annotation_sites.py), expression the chromatin
# network (its promoter binding features, training/expression.py), the ones trained into the
# same output directory. (annotation_sites falls back to worker/packages for a package not in
# the output directory, so without promoter here a `--jobs 2` run took whichever promoter-human
# existed when annotation packaged itself.)
NEEDS = {"annotation": ["splice", "promoter"], "expression": ["chromatin"]}
