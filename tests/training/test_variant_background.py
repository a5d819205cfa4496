"""The variant background of the service's quantiles (training/variant_background.py): the draw
(deterministic, held inside its span, A/C/G/T only, no position twice), the strand the service
reports, its rounding, and the quantile definition the service uses. Run by ctest as
`training:python-units`."""

import os
import tempfile
import unittest

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


class QuantileTest(unittest.TestCase):
    def test_share_at_or_below(self):
        values = [0.0, 0.0, 0.1, 0.5]
        self.assertEqual(vb.quantile(values, 0.0), 0.5)   # ties count
        self.assertEqual(vb.quantile(values, -1.0), 0.0)
        self.assertEqual(vb.quantile(values, 0.5), 1.0)
        self.assertIsNone(vb.quantile([], 0.5))


if __name__ == "__main__":
    unittest.main()
