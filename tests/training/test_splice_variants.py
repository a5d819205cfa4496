"""The splice card's held-out variant check (training/splice_variants.py) on a small synthetic
genome and annotation: which bases are positives, how negatives are matched by distance, that
the draw is deterministic, and SpliceAI's delta score on the gene's strand. Run by ctest as
`training:python-units`."""

import random
import unittest

import numpy as np
import torch

from training import cards, common, nets
from training import splice_variants as sv

LENGTH = 30_000


def synthetic():
    """(genome, transcripts): random sequence with a + strand gene (two GT..AG introns), a
    - strand gene (one intron, CT..AC on the genome), a second + transcript sharing the first
    gene's first intron, and a GC..AG intron (not canonical: left out)."""
    rng = random.Random(7)
    seq = [rng.choice("ACGT") for _ in range(LENGTH)]

    def put(pos, text):
        seq[pos:pos + len(text)] = list(text)

    put(8100, "GT"), put(8398, "AG")     # + intron [8100, 8400)
    put(8500, "GT"), put(8898, "AG")     # + intron [8500, 8900)
    put(15100, "CT"), put(15498, "AC")   # - intron [15100, 15500): acceptor left, donor right
    put(20100, "GC"), put(20398, "AG")   # + intron [20100, 20400), GC-AG
    genome = "".join(seq)
    t = common.Transcript
    transcripts = [
        t("NM_1", "PLUS", "+", 8000, 9000, 8000, 9000, [(8000, 8100), (8400, 8500), (8900, 9000)]),
        t("NM_2", "PLUS", "+", 8000, 8500, 8000, 8500, [(8000, 8100), (8400, 8500)]),
        t("NM_3", "MINUS", "-", 15000, 15600, 15000, 15600, [(15000, 15100), (15500, 15600)]),
        t("NM_4", "GCAG", "+", 20000, 20500, 20000, 20500, [(20000, 20100), (20400, 20500)]),
    ]
    return genome, transcripts


class SpliceVariantConstructionTest(unittest.TestCase):
    def setUp(self):
        self.genome, self.transcripts = synthetic()
        self.region = (0, LENGTH)

    def test_boundary_distance(self):
        # The boundary 100 lies between bases 99 and 100.
        self.assertEqual([sv.boundary_distance(p, 100) for p in (97, 98, 99, 100, 101, 102)],
                         [3, 2, 1, 1, 2, 3])
        bounds = sv.intron_boundaries(self.transcripts)
        self.assertEqual(list(bounds), [8100, 8400, 8500, 8900, 15100, 15500, 20100, 20400])
        self.assertEqual(sv.nearest_distance(8450, bounds), 50)
        self.assertEqual(sv.nearest_distance(8398, bounds), 2)

    def test_canonical_sites_are_the_dinucleotides_on_the_strand(self):
        sites = sv.canonical_sites(self.transcripts, self.genome, self.region)
        got = {(s.pos, s.strand, s.kind) for s in sites}
        want = {(8100, "+", "donor+1"), (8101, "+", "donor+2"),
                (8398, "+", "acceptor-2"), (8399, "+", "acceptor-1"),
                (8500, "+", "donor+1"), (8501, "+", "donor+2"),
                (8898, "+", "acceptor-2"), (8899, "+", "acceptor-1"),
                # minus strand: the donor is the intron's right end on the genome
                (15499, "-", "donor+1"), (15498, "-", "donor+2"),
                (15101, "-", "acceptor-2"), (15100, "-", "acceptor-1")}
        self.assertEqual(got, want)  # the shared intron once; the GC-AG intron left out
        self.assertEqual(len(sites), len(want))

    def test_sites_need_the_margin_inside_the_region(self):
        sites = sv.canonical_sites(self.transcripts, self.genome, (0, 15000))
        self.assertEqual({s.gene for s in sites}, {"PLUS"})

    def test_positives_break_the_dinucleotide(self):
        variants = sv.build_variants(self.transcripts, self.genome, self.region, positives=6,
                                     seed=1, bins=((3, 50), (51, 300)))
        sites = {s.pos: s for s in sv.canonical_sites(self.transcripts, self.genome,
                                                      self.region)}
        positives = [v for v in variants if v.label == 1]
        self.assertEqual(len(positives), 6)
        self.assertEqual(len({v.pos for v in positives}), 6)
        for v in positives:
            self.assertIn(v.pos, sites)
            self.assertEqual(v.strand, sites[v.pos].strand)
            self.assertEqual(v.ref, self.genome[v.pos])
            self.assertNotEqual(v.alt, v.ref)
            self.assertIn(v.alt, "ACGT")
            self.assertIn(v.distance, (1, 2))

    def test_negatives_matched_by_distance_bin_and_away_from_junctions(self):
        bins = ((3, 50), (51, 300))
        variants = sv.build_variants(self.transcripts, self.genome, self.region, positives=8,
                                     seed=3, bins=bins)
        bounds = sv.intron_boundaries(self.transcripts)
        spans = {t.gene: (t.tx_start, t.tx_end) for t in self.transcripts if t.name != "NM_2"}
        self.assertEqual(len(variants), 8 * 3)
        for i in range(0, len(variants), 3):
            positive, near, far = variants[i:i + 3]
            self.assertEqual((positive.label, near.label, far.label), (1, 0, 0))
            for negative, (lo, hi) in ((near, bins[0]), (far, bins[1])):
                nearest = sv.nearest_distance(negative.pos, bounds)
                self.assertEqual(negative.distance, nearest)
                self.assertTrue(lo <= nearest <= hi, (negative, lo, hi))
                self.assertGreaterEqual(nearest, 3)  # never a junction's +-2 bases
                self.assertEqual(negative.kind, f"near:{lo}-{hi}")
                self.assertEqual(negative.strand, positive.strand)
                self.assertEqual(negative.gene, positive.gene)
                lo_span, hi_span = spans[positive.gene]
                self.assertTrue(lo_span <= negative.pos < hi_span)
                self.assertEqual(negative.ref, self.genome[negative.pos])
                self.assertNotEqual(negative.alt, negative.ref)
        self.assertEqual(len({v.pos for v in variants}), len(variants))

    def test_the_draw_is_deterministic(self):
        def draw(seed):
            return sv.build_variants(self.transcripts, self.genome, self.region, positives=8,
                                     seed=seed, bins=((3, 50), (51, 300)))
        self.assertEqual(draw(5), draw(5))
        self.assertNotEqual(draw(5), draw(6))

    def test_too_few_sites_is_an_error(self):
        with self.assertRaises(common.DataError):
            sv.build_variants(self.transcripts, self.genome, self.region, positives=13)


class GIsAcceptorTIsDonor(torch.nn.Module):
    """A fake flanked splice model: acceptor = 1 where the base is G, donor = 1 where it is T,
    over the central `output` bases of each window."""

    def __init__(self, flank: int, output: int):
        super().__init__()
        self.flank, self.output = flank, output

    def forward(self, ids):
        core = ids[:, self.flank:self.flank + self.output]
        acceptor = (core == 3).float()
        donor = (core == 4).float()
        return torch.stack([1 - acceptor - donor, acceptor, donor], dim=2)


class DeltaScoreTest(unittest.TestCase):
    manifest = {"output_labels": ["neither", "acceptor", "donor"], "flank_bp": 100,
                "output_window_bp": 80}

    def test_delta_scores_hand_made(self):
        ref = np.zeros((5, 2))
        alt = np.zeros((5, 2))
        ref[2, 1], alt[2, 1] = 0.9, 0.1     # donor lost
        alt[0, 0] = 0.3                     # acceptor gained
        ds = sv.delta_scores(ref, alt)
        self.assertAlmostEqual(ds["DS_DL"], 0.8)
        self.assertAlmostEqual(ds["DS_AG"], 0.3)
        self.assertAlmostEqual(ds["DS_AL"], 0.0)
        self.assertAlmostEqual(ds["DS_DG"], 0.0)
        self.assertAlmostEqual(ds["DS"], 0.8)

    def test_scores_on_the_gene_strand_through_the_worker_window(self):
        # 2 * (distance 10 + flank 100) + 1 = 221 bases; output 80 puts the scored positions
        # 100..120 in window 1 (80..160), whose input is bases -20..260.
        genome = nets.char_ids("A" * 1000).astype(np.int64)
        genome[500] = 3  # G
        module = GIsAcceptorTIsDonor(100, 80)
        variant = sv.Variant(500, "G", "T", "+", 1, "acceptor-1", 1, "X")
        plus = sv.score_variants(module, self.manifest, genome, [variant], distance=10)[0]
        # + strand: G (acceptor) -> T (donor): acceptor lost, donor gained.
        self.assertEqual((plus["DS_AL"], plus["DS_DG"], plus["DS_AG"], plus["DS_DL"]),
                         (1.0, 1.0, 0.0, 0.0))
        # - strand: the model sees C -> A: nothing in this toy model.
        minus = sv.score_variants(module, self.manifest, genome,
                                  [sv.Variant(500, "G", "T", "-", 1, "x", 1, "X")],
                                  distance=10)[0]
        self.assertEqual(minus["DS"], 0.0)
        # - strand C -> A on the genome reads G -> T there: acceptor lost, donor gained.
        genome[500] = 2  # C
        minus = sv.score_variants(module, self.manifest, genome,
                                  [sv.Variant(500, "C", "A", "-", 1, "x", 1, "X")],
                                  distance=10)[0]
        self.assertEqual((minus["DS_AL"], minus["DS_DG"]), (1.0, 1.0))
        # A change between two bases the toy model does not score: nothing.
        genome[500] = 1
        quiet = sv.score_variants(module, self.manifest, genome,
                                  [sv.Variant(500, "A", "C", "+", 0, "x", 3, "X")],
                                  distance=10)[0]
        self.assertEqual(quiet["DS"], 0.0)

    def test_scored_positions_must_lie_in_one_window(self):
        self.assertEqual(sv.scored_window(221, (100, 121), 80, 100), (1, (-20, 260)))
        with self.assertRaises(ValueError):
            sv.scored_window(221, (70, 91), 80, 100)


class CardSectionTest(unittest.TestCase):
    """cards.with_section: how --write-cards rewrites the sections the splice evaluation owns."""

    card = "# m\n\n## Metrics\n\nold table\n\n## Figures\n\npics\n\n## Known limits\n\nx\n"

    def test_replaces_only_its_own_section(self):
        text = cards.with_section(self.card, "Metrics", "new table", "Figures")
        self.assertEqual(text, self.card.replace("old table", "new table"))

    def test_inserts_a_missing_section_before_the_named_one_and_is_idempotent(self):
        once = cards.with_section(self.card, "Variant effect", "AUROC 0.9", "Figures")
        self.assertIn("old table\n\n## Variant effect\n\nAUROC 0.9\n\n## Figures\n", once)
        self.assertLess(once.index("## Variant effect"), once.index("## Figures"))
        self.assertEqual(cards.with_section(once, "Variant effect", "AUROC 0.9", "Figures"), once)
        twice = cards.with_section(once, "Variant effect", "AUROC 0.8", "Figures")
        self.assertEqual(twice.count("## Variant effect"), 1)
        self.assertIn("AUROC 0.8", twice)
        self.assertNotIn("AUROC 0.9", twice)

    def test_appends_when_the_anchor_is_absent(self):
        text = cards.with_section("# m\n", "New", "body", "Nowhere")
        self.assertTrue(text.endswith("## New\n\nbody\n\n"))


if __name__ == "__main__":
    unittest.main()
