"""The promoter, chromatin and expression variant backgrounds (training/scorer_backgrounds.py):
each statistic computed as the service's scorer computes it (window placement, the maximum over
windows, |ALT - REF| rounded as RoundScore, the variant workflow's fold change and precision),
unlearned chromatin features left out, and the writer: the file the worker reads
(worker/manifest/variant_background.cc: a header, one row per SNV, numbers that parse back to
the published values), the manifest entry, the card section, and the check mode noticing a
shipped file that differs. Run by ctest as `training:python-units`."""

import math
import os
import tempfile
import unittest
from unittest import mock

import torch

import background_package
from training import scorer_backgrounds as sb
from training import variant_background as vb


class ByBase(torch.nn.Module):
    """A stand-in model: per window, columns computed from the token ids (A=1 ... T=4)."""

    def __init__(self, columns):
        super().__init__()
        self.columns = columns

    def forward(self, ids):
        return torch.stack([c(ids.float()) for c in self.columns], dim=1)


class StatisticTest(unittest.TestCase):
    GENOME = "ACGT" * 2000  # 8,000 bp

    def test_promoter_offsets_are_half_windows_within_the_distance(self):
        self.assertEqual(sb.promoter_offsets(2000, 1000), [-1000, 0, 1000])
        self.assertEqual(sb.promoter_offsets(2000, 999), [0])
        self.assertEqual(sb.promoter_offsets(100, 120), [-100, -50, 0, 50, 100])

    def test_alt_window_applies_the_snv_only_inside(self):
        self.assertEqual(sb.alt_window("AAAAAA", 1, 4, 2, "C"), "ACAA")
        self.assertEqual(sb.alt_window("AAAAAA", 1, 4, 5, "C"), "AAAA")

    def test_promoter_delta_of_the_maxima(self):
        # Score = share of T in the window: an SNV to T raises only the windows holding it.
        module = ByBase([lambda x: (x == 4).float().mean(dim=1)])
        manifest = {"context_window_bp": 40, "tokenizer": {"type": "char"}}
        pos = 4002  # a G; windows of 40 every 20 bp within 20 bp
        columns, rows = sb.promoter_rows(module, manifest, self.GENOME, [(pos, "G", "T")], 20)
        self.assertEqual(columns, ["abs_delta"])
        spec, values = rows[0]
        self.assertEqual(spec, "chr20:4003:G:T")
        # REF windows hold 10 T of 40 (0.25); an ALT window holding the SNV 11 (0.275).
        self.assertEqual(values["abs_delta"], 0.025)

    def test_chromatin_per_feature_unlearned_left_out_duplicates_shared(self):
        module = ByBase([lambda x: (x == 4).float().mean(dim=1),      # "a"
                         lambda x: torch.zeros(x.shape[0]),            # "dead": never learned
                         lambda x: (x == 4).float().mean(dim=1),      # "a" again: one column
                         lambda x: (x == 1).float().mean(dim=1)])     # "b"
        manifest = {"context_window_bp": 40, "tokenizer": {"type": "char"},
                    "output_labels": ["a", "dead", "a", "b"]}
        columns, rows = sb.chromatin_rows(module, manifest, self.GENOME, [(4000, "A", "T")])
        self.assertEqual(columns, ["abs_delta:a", "abs_delta:b"])
        self.assertEqual(rows[0][1], {"abs_delta:a": 0.025, "abs_delta:b": 0.025})

    def test_fold_change_and_precision_are_the_runners(self):
        # log2((TPM_alt + 1) / (TPM_ref + 1)) from ln(TPM + 1): ln values 0 and ln 4 -> log2 4.
        self.assertAlmostEqual(sb.log2_fold_change(math.log(4.0), 0.0), 2.0)
        self.assertAlmostEqual(sb.log2_fold_change(-0.5, 0.0), 0.0)  # TPM floored at 0
        self.assertEqual(sb.workflow_precision(0.000123456789), 0.00012346)
        self.assertEqual(sb.round_score(0.00005), 0.0001)  # half away from zero
        self.assertEqual(sb.round_score(-0.00004), 0.0)

    def test_compact_values_parse_back_exactly(self):
        for value in (0.0, 0.12, 0.0001, 1.0, 0.3001):
            self.assertEqual(float(sb.compact_value(value, False)), value)
        self.assertEqual(sb.compact_value(0.0, False), "0")
        value = sb.workflow_precision(1.23456789e-05)
        self.assertEqual(float(sb.compact_value(value, True)), value)


class WriterTest(unittest.TestCase):
    """run(write=True) writes what the worker loads; run(write=False) compares with it."""

    COLUMNS = ["abs_delta:a", "abs_delta:b"]
    ROWS = [("chr20:53100001:A:C", {"abs_delta:a": 0.25, "abs_delta:b": 0.0}),
            ("chr20:53100101:G:T", {"abs_delta:a": 0.0001, "abs_delta:b": 0.5})]

    def package(self, tmp):
        return background_package.write_package(tmp, "chromatin-test", "chromatin")

    def computed(self, rows):
        entry = {"scorer": "chromatin", "seed": vb.SEED, "snvs": len(rows),
                 "region": "chr20:53031521-63019520", "distance": 0}
        return mock.patch.object(sb, "compute", return_value=(entry, self.COLUMNS, rows, 1.0))

    def test_written_file_manifest_and_card(self):
        with tempfile.TemporaryDirectory() as tmp:
            self.package(tmp)
            with self.computed(self.ROWS):
                self.assertEqual(vb.run(tmp, write=True), [])
            with open(os.path.join(tmp, vb.FILE), encoding="utf-8") as handle:
                lines = handle.read().splitlines()
            self.assertEqual(lines[0], "variant\tabs_delta:a\tabs_delta:b")
            self.assertEqual(lines[1:], ["chr20:53100001:A:C\t0.25\t0",
                                         "chr20:53100101:G:T\t0.0001\t0.5"])
            columns, read = vb.read_tsv(os.path.join(tmp, vb.FILE))
            self.assertEqual((columns, read), (self.COLUMNS, self.ROWS))
            entry = background_package.written_entry(tmp)
            # Exactly the fields the worker's ParseVariantBackgroundEntry requires.
            self.assertEqual(sorted(entry), ["distance", "file", "region", "scorer", "seed",
                                             "snvs"])
            self.assertEqual((entry["file"], entry["scorer"], entry["snvs"]),
                             (vb.FILE, "chromatin", 2))
            card = background_package.card_section(self, tmp, vb.SECTION)
            self.assertIn("2 random SNVs", card)

            # The check mode: the same values agree, a changed one is reported.
            with self.computed(self.ROWS):
                self.assertEqual(vb.run(tmp, write=False), [])
            moved = [self.ROWS[0], ("chr20:53100101:G:T",
                                    {"abs_delta:a": 0.0001, "abs_delta:b": 0.6})]
            with self.computed(moved):
                problems = vb.run(tmp, write=False)
            self.assertEqual(len(problems), 1)
            self.assertIn("differ from the shipped file by up to 0.1000", problems[0])


if __name__ == "__main__":
    unittest.main()
