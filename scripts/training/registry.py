"""The training modules, in training order (scripts/train-models and scripts/evaluate-models).

Each module `training.<name>` exposes `train(out_dir, seed) -> [package ids]` and
`evaluate(package_dir) -> {metric: value}` (see the shared conventions in README.md).
"""

MODULES = ["annotation", "expression"]
