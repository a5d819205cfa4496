"""Model cards: the YAML front matter of every bundled package (parsed with python3-yaml), the
figures it embeds, and the plotting and card-writing code behind them (training/plots.py,
training/cards.py). Run by ctest as `training:python-units` with Debian's python3."""

import json
import os
import shutil
import sys
import tempfile
import unittest

import numpy as np
import yaml

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "scripts"))

from training import cards, metrics, plots  # noqa: E402

PACKAGES = os.path.join(ROOT, "worker", "packages")
# Every figure a card embeds stays small: they are committed with the package.
MAX_FIGURE_BYTES = 60 * 1024
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def read(path, mode="r"):
    with open(path, mode) as handle:
        return handle.read()


def bundled():
    for entry in sorted(os.listdir(PACKAGES)):
        path = os.path.join(PACKAGES, entry)
        if os.path.isfile(os.path.join(path, "manifest.json")):
            with open(os.path.join(path, "manifest.json"), encoding="utf-8") as handle:
                manifest = json.load(handle)
            with open(os.path.join(path, manifest["model_card"]), encoding="utf-8") as handle:
                yield path, manifest, handle.read()


class BundledCardsTest(unittest.TestCase):
    def test_every_card_has_front_matter_with_the_required_keys(self):
        seen = 0
        for path, manifest, text in bundled():
            seen += 1
            with self.subTest(package=manifest["id"]):
                self.assertTrue(text.startswith("---\n"), "the card must open with front matter")
                block = yaml.safe_load(text.split("---\n", 2)[1])
                self.assertIsInstance(block, dict)
                for key in ("license", "tags", "datasets", "pipeline_tag", "library_name",
                            "model_name", "dnaserve"):
                    self.assertIn(key, block)
                self.assertEqual(block["license"], "mit")
                self.assertEqual(block["model_name"], manifest["id"])
                self.assertEqual(block["dnaserve"]["task"], manifest["task"])
                self.assertIn(manifest["task"], block["tags"])
                self.assertEqual(block["dnaserve"]["trained"], manifest["trained"])
                if not manifest["trained"]:
                    # Honest about it: tagged untrained, no metrics, no training data.
                    self.assertIn("untrained", block["tags"])
                    self.assertNotIn("model-index", block)
                    self.assertEqual(block["datasets"], [])
                    continue
                self.assertIn("trained", block["tags"])
                self.assertTrue(block["datasets"], "a trained package names its data")
                (entry,) = block["model-index"]
                self.assertEqual(entry["name"], manifest["id"])
                (result,) = entry["results"]
                self.assertEqual(result["task"]["type"], manifest["task"])
                self.assertEqual(result["dataset"]["split"], "held-out")
                # The front matter's metrics are the table's, value for value.
                table = cards.parse_metrics(text)
                listed = {m["type"]: m["value"] for m in result["metrics"]}
                self.assertEqual(set(listed), set(table))
                for name, value in listed.items():
                    if value is None:
                        self.assertTrue(np.isnan(table[name]), name)
                    else:
                        self.assertAlmostEqual(float(value), table[name], places=4, msg=name)
        self.assertGreaterEqual(seen, 10)

    def test_figures_exist_are_small_pngs_and_are_embedded(self):
        for path, manifest, text in bundled():
            with self.subTest(package=manifest["id"]):
                block = cards.parse_front_matter(text)
                self.assertIsNotNone(block)
                figures = block["dnaserve"]["figures"]
                self.assertEqual(cards.figure_links(text), figures)
                on_disk = sorted(n for n in os.listdir(path) if n.endswith(".png"))
                self.assertEqual(on_disk, sorted(figures))
                if manifest["task"] in ("promoter", "splice", "chromatin") and manifest["trained"]:
                    self.assertEqual(set(figures), {"roc.png", "pr.png", "calibration.png"})
                for name in figures:
                    with open(os.path.join(path, name), "rb") as handle:
                        data = handle.read()
                    self.assertTrue(data.startswith(PNG_SIGNATURE), name)
                    self.assertLess(len(data), MAX_FIGURE_BYTES, name)


class PlotsTest(unittest.TestCase):
    def setUp(self):
        rng = np.random.default_rng(5)
        self.labels = rng.random(3000) < 0.2
        self.scores = np.clip(rng.normal(0.3 + 0.35 * self.labels, 0.2), 0, 1)
        self.scratch = tempfile.mkdtemp(prefix="dnaserve-plots-")

    def tearDown(self):
        shutil.rmtree(self.scratch)

    def test_curves_agree_with_the_metrics(self):
        fpr, tpr = plots.roc_points(self.scores, self.labels)
        self.assertAlmostEqual(float(np.trapz(tpr, fpr)), metrics.auroc(self.scores, self.labels),
                               places=9)
        recall, precision = plots.pr_points(self.scores, self.labels)
        step = float(np.sum(np.diff(np.concatenate(([0.0], recall))) * precision))
        self.assertAlmostEqual(step, metrics.average_precision(self.scores, self.labels), places=9)
        predicted, observed, counts = plots.calibration_points(self.scores, self.labels)
        self.assertEqual(int(counts.sum()), self.scores.size)
        self.assertTrue(np.all((predicted >= 0) & (predicted <= 1)))
        self.assertAlmostEqual(float((observed * counts).sum()), float(self.labels.sum()))

    def test_nothing_is_captured_outside_a_capture(self):
        plots.offer_binary("x", {"": (self.scores, self.labels)})
        with plots.capture() as captured:
            pass
        self.assertTrue(captured.empty())
        with plots.capture() as captured:
            plots.offer_binary("x", {"": (self.scores, self.labels)})
        self.assertEqual(len(captured.binary), 1)

    def test_rendering_is_small_and_byte_identical_on_a_rerun(self):
        outputs = []
        for run in range(2):
            out = os.path.join(self.scratch, str(run))
            os.makedirs(out)
            with plots.capture() as captured:
                plots.offer_binary("toy", {"a": (self.scores, self.labels)})
                truth = np.random.default_rng(1).random((40, 12)) * 5
                plots.offer_expression(truth + np.random.default_rng(2).random((40, 12)), truth,
                                       np.broadcast_to(truth.mean(axis=0), truth.shape))
            written = plots.render(captured, out)
            self.assertEqual(list(written), ["roc.png", "pr.png", "calibration.png",
                                             "expression_across_genes.png",
                                             "expression_within_gene.png"])
            outputs.append({n: read(os.path.join(out, n), "rb") for n in written})
        for name, data in outputs[0].items():
            self.assertEqual(data, outputs[1][name], name)
            self.assertTrue(data.startswith(PNG_SIGNATURE))
            self.assertLess(len(data), MAX_FIGURE_BYTES, name)
            self.assertNotIn(b"matplotlib version", data)

    def test_gene_models_locus_is_chosen_from_the_annotation_alone(self):
        from training.annotation_metrics import Structure
        short = Structure("+", [(1000, 1100), (1200, 1300)])
        gene = Structure("-", [(50_000 + i * 4_000, 50_000 + i * 4_000 + 200) for i in range(6)],
                         cds=[(54_000, 54_200)])
        region = (0, 200_000)
        self.assertEqual(plots.choose_locus(region, [short, gene]), (45_000, 75_200))
        predicted = [Structure("-", [(54_050, 54_200), (58_000, 58_200)])]
        with plots.capture() as captured:
            plots.offer_gene_models(region, predicted, [short, gene])
        written = plots.render(captured, self.scratch)
        self.assertEqual(list(written), ["annotation_locus.png"])
        self.assertIsNone(plots.choose_locus(region, [short]))


class CompleteCardTest(unittest.TestCase):
    """cards.complete on a package made here: front matter, figures section, stale PNGs."""

    def setUp(self):
        self.package = tempfile.mkdtemp(prefix="dnaserve-card-")
        self.manifest = {"id": "promoter-toy", "task": "promoter", "trained": True,
                         "is_default": False, "model_card": "MODEL_CARD.md"}
        with open(os.path.join(self.package, "manifest.json"), "w") as handle:
            json.dump(self.manifest, handle)
        table = cards.metrics_table({"auroc": 0.75, "heldout_tss": 12.0},
                                    {"auroc": "AUROC: held-out", "heldout_tss": "TSSs"})
        self.card = (f"# promoter-toy\n\nA toy.\n\n## Metrics\n\n{table}\n\n"
                     "## Known limits\n\n- toy\n")
        with open(os.path.join(self.package, "MODEL_CARD.md"), "w") as handle:
            handle.write(self.card)
        with open(os.path.join(self.package, "stale.png"), "wb") as handle:
            handle.write(PNG_SIGNATURE)

    def tearDown(self):
        shutil.rmtree(self.package)

    def _captured(self):
        rng = np.random.default_rng(3)
        y = rng.random(500) < 0.3
        with plots.capture() as captured:
            plots.offer_binary("promoter-toy", {"": (np.clip(y * 0.4 + rng.random(500) * 0.6, 0, 1), y)})
        return captured

    def test_complete_writes_front_matter_figures_and_is_idempotent(self):
        results = {"auroc": 0.75, "heldout_tss": 12.0, "forward_ms": 3.0}
        figures = cards.complete(self.package, results, self._captured(), {"forward_ms"})
        self.assertEqual(list(figures), ["roc.png", "pr.png", "calibration.png"])
        self.assertFalse(os.path.exists(os.path.join(self.package, "stale.png")))
        text = read(os.path.join(self.package, "MODEL_CARD.md"))
        block = cards.parse_front_matter(text)
        metrics_listed = block["model-index"][0]["results"][0]["metrics"]
        self.assertEqual([(m["type"], m["value"], m["name"]) for m in metrics_listed],
                         [("auroc", 0.75, "AUROC: held-out"), ("heldout_tss", 12, "TSSs")])
        self.assertEqual(cards.figure_links(text), list(figures))
        self.assertLess(text.index("## Figures"), text.index("## Known limits"))
        self.assertEqual(cards.parse_metrics(text), {"auroc": 0.75, "heldout_tss": 12.0})
        # A second run replaces both blocks instead of adding to them.
        cards.complete(self.package, results, self._captured(), {"forward_ms"})
        again = read(os.path.join(self.package, "MODEL_CARD.md"))
        self.assertEqual(again, text)
        self.assertEqual(again.count("---\n"), 2)

    def test_compare_front_matter_finds_changed_values_and_keys(self):
        expected = cards.front_matter(self.manifest, {"auroc": 0.75}, {}, ["roc.png"])
        self.assertEqual(cards.compare_front_matter(expected, expected), [])
        actual = yaml.safe_load(yaml.safe_dump(expected))
        actual["model-index"][0]["results"][0]["metrics"][0]["value"] = 0.7510
        self.assertEqual(cards.compare_front_matter(expected, actual), [])  # within 2e-3
        actual["model-index"][0]["results"][0]["metrics"][0]["value"] = 0.80
        problems = cards.compare_front_matter(expected, actual)
        self.assertEqual(len(problems), 1)
        self.assertIn("value", problems[0])
        del actual["license"]
        actual["extra"] = 1
        problems = cards.compare_front_matter(expected, actual)
        self.assertTrue(any("license: missing" in p for p in problems))
        self.assertTrue(any("extra: not expected" in p for p in problems))

    def test_untrained_front_matter_says_so(self):
        block = cards.front_matter({"id": "enhancer-x", "task": "enhancer", "trained": False,
                                    "is_default": True}, {}, {}, [])
        self.assertIn("untrained", block["tags"])
        self.assertNotIn("model-index", block)
        self.assertIn("untrained", block["dnaserve"]["note"])


if __name__ == "__main__":
    unittest.main()
