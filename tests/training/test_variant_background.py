"""The variant background of the service's quantiles (training/variant_background.py): the draw
(deterministic, held inside its span, A/C/G/T only, no position twice), the strand the service
reports, its rounding, and the quantile definition the service uses. Run by ctest as
`training:python-units`."""

import os
import tempfile
import unittest
from unittest import mock

import background_package
from training import variant_background as vb


class DrawTest(unittest.TestCase):
    GENOME = ("ACGTN" * 40)  # 200 bp, every fifth base N

    def test_same_seed_same_snvs_inside_the_span(self):
        first = vb.draw_snvs(self.GENOME, 30, seed=5, span=(10, 190))
        self.assertEqual(first, vb.draw_snvs(self.GENOME, 30, seed=5, span=(10, 190)))
        self.assertNotEqual(first, vb.draw_snvs(self.GENOME, 30, seed=6, span=(10, 190)))
        positions = [pos for pos, _, _ in first]
        self.assertEqual(len(set(positions)), 30)
        for pos, ref, alt in first:
            self.assertTrue(10 <= pos < 190)
            self.assertEqual(ref, self.GENOME[pos])
            self.assertIn(ref, "ACGT")
            self.assertIn(alt, "ACGT")
            self.assertNotEqual(alt, ref)


class RowTest(unittest.TestCase):
    def scores(self, ag, al=0.0, dg=0.0, dl=0.0):
        return {"DS_AG": ag, "DS_AL": al, "DS_DG": dg, "DS_DL": dl, "DS": max(ag, al, dg, dl)}

    def test_reported_strand_and_rounding(self):
        # Minus only when its rounded DS_max is larger; a tie after rounding stays on plus.
        row = vb.splice_row(self.scores(0.10004), self.scores(0.10001, al=0.05))
        self.assertEqual(row, {"DS_AG": 0.1, "DS_AL": 0.0, "DS_DG": 0.0, "DS_DL": 0.0,
                               "DS_max": 0.1})
        row = vb.splice_row(self.scores(0.1), self.scores(0.0, dl=0.30005))
        self.assertEqual(row["DS_DL"], 0.3001)  # half away from zero, as RoundScore
        self.assertEqual(row["DS_max"], 0.3001)
        self.assertEqual(vb.round_score(-0.00004), 0.0)

    def test_tsv_round_trip(self):
        rows = [("chr20:1:A:C", {c: 0.25 for c in vb.SPLICE_COLUMNS})]
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, vb.FILE)
            vb.write_tsv(path, rows, vb.SPLICE_COLUMNS)
            columns, read = vb.read_tsv(path)
        self.assertEqual(tuple(columns), vb.SPLICE_COLUMNS)
        self.assertEqual(read, rows)


class SpliceWriterTest(unittest.TestCase):
    """run(write=True) on a splice package writes the file (4 decimals), the manifest entry and
    the card section; run(write=False) compares the recomputed background with them."""

    ROWS = [("chr20:53100001:A:C", {"DS_AG": 0.25, "DS_AL": 0.0, "DS_DG": 0.0, "DS_DL": 0.0,
                                    "DS_max": 0.25}),
            ("chr20:53100101:G:T", {"DS_AG": 0.0, "DS_AL": 0.0001, "DS_DG": 0.5, "DS_DL": 0.0,
                                    "DS_max": 0.5})]

    def package(self, tmp):
        background_package.write_package(tmp, "splice-test", "splice")

    def scored(self, rows):
        return mock.patch.object(vb, "splice_background", return_value=(rows, 1.0))

    def test_written_file_manifest_and_card_then_checked(self):
        with tempfile.TemporaryDirectory() as tmp:
            self.package(tmp)
            with self.scored(self.ROWS):
                self.assertEqual(vb.run(tmp, write=True, count=2), [])
            with open(os.path.join(tmp, vb.FILE), encoding="utf-8") as handle:
                lines = handle.read().splitlines()
            self.assertEqual(lines, ["variant\t" + "\t".join(vb.SPLICE_COLUMNS),
                                     "chr20:53100001:A:C\t0.2500\t0.0000\t0.0000\t0.0000\t0.2500",
                                     "chr20:53100101:G:T\t0.0000\t0.0001\t0.5000\t0.0000\t0.5000"])
            entry = background_package.written_entry(tmp)
            self.assertEqual((entry["file"], entry["scorer"], entry["snvs"], entry["seed"]),
                             (vb.FILE, "splice", 2, vb.SEED))
            card = background_package.card_section(self, tmp, vb.SECTION)
            self.assertIn("splice statistics of 2 random SNVs", card)

            # The check mode: the same values agree; a moved value and other SNVs are reported.
            with self.scored(self.ROWS):
                self.assertEqual(vb.run(tmp, write=False), [])
            moved = [self.ROWS[0], (self.ROWS[1][0], {**self.ROWS[1][1], "DS_DG": 0.6})]
            with self.scored(moved):
                problems = vb.run(tmp, write=False)
            self.assertEqual(len(problems), 1)
            self.assertIn("differ from the shipped file by up to 0.1000", problems[0])
            other = [("chr20:53100002:A:C", self.ROWS[0][1]), self.ROWS[1]]
            with self.scored(other):
                self.assertEqual(vb.run(tmp, write=False),
                                 ["the background's SNVs differ from the shipped file's"])

    def test_a_package_without_a_background_is_reported(self):
        with tempfile.TemporaryDirectory() as tmp:
            self.package(tmp)
            with self.scored(self.ROWS):
                problems = vb.run(tmp, write=False, count=2)
        self.assertEqual(problems,
                         ["the package declares no variant_background (write it with --write-cards)"])


class QuantileTest(unittest.TestCase):
    def test_share_at_or_below(self):
        values = [0.0, 0.0, 0.1, 0.5]
        self.assertEqual(vb.quantile(values, 0.0), 0.5)   # ties count
        self.assertEqual(vb.quantile(values, -1.0), 0.0)
        self.assertEqual(vb.quantile(values, 0.5), 1.0)
        self.assertIsNone(vb.quantile([], 0.5))


if __name__ == "__main__":
    unittest.main()
