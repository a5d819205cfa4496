"""The Python mirror of the exon-chain decoder (scripts/training/annotation_decode.py) on the
same synthetic cases as tests/unit/worker/annotation_decode_test.cpp, with the same expected
results, and the gene-start metric (annotation_metrics.gene_starts). Run by ctest as
`training:python-units` with Debian's python3."""

import math
import os
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))

from training import annotation_coding as coding  # noqa: E402
from training import annotation_decode as decoding  # noqa: E402
from training import annotation_metrics as scoring  # noqa: E402
from training import annotation_splice_signal as signal  # noqa: E402


def three_exon_gene():
    """ThreeExonGene of the C++ test: sense channels and sequence (length 400)."""
    n = 400
    seq = list("C" * n)
    for at, motif in ((100, "GT"), (260, "GT"), (198, "AG"), (318, "AG"), (60, "ATG"),
                      (331, "TAA")):
        seq[at:at + len(motif)] = motif
    sense = {name: np.full(n, 0.01) for name in
             ("exon", "intron", "cds", "tss", "end", "donor", "acceptor")}
    for a, b in ((50, 100), (200, 260), (320, 360)):
        sense["exon"][a:b], sense["intron"][a:b] = 0.9, 0.05
    for a, b in ((100, 200), (260, 320)):
        sense["intron"][a:b], sense["exon"][a:b] = 0.9, 0.05
    for a, b in ((60, 100), (200, 260), (320, 334)):
        sense["cds"][a:b] = 0.9
    sense["tss"][50] = 0.9
    sense["end"][359] = 0.9
    sense["donor"][100] = sense["donor"][260] = 0.95
    sense["acceptor"][199] = sense["acceptor"][319] = 0.95
    return sense, "".join(seq)


def chain_options(**changes):
    options = decoding.DecodeOptions(
        exon_chain=True, emission_weight=0.1, start_cost=4, splice_cost=0, terminal_weight=1,
        terminal_block_bp=50, length_weight=0, site_pass_weight=1, min_orf_bp=90)
    for key, value in changes.items():
        setattr(options, key, value)
    return options


class ChainDecoderTest(unittest.TestCase):
    def test_length_prior_and_block_peaks(self):
        self.assertAlmostEqual(float(decoding.log_normal(np.array([100]), math.log(100), 1)[0]),
                               0.0)
        values = np.array([0.1, 0.5, 0.5, 0.2, 0.0, 0.01, 0.0, 0.0, 0.3, 0.9])
        self.assertEqual(list(decoding.block_peaks(values, 4, 0.0)), [1, 5, 9])
        self.assertEqual(list(decoding.block_peaks(values, 4, 0.05)), [1, 9])

    def test_best_orf(self):
        spliced = list("C" * 130)
        for at, codon in ((3, "ATG"), (99, "TAA"), (22, "ATG"), (118, "TGA")):
            spliced[at:at + 3] = codon
        spliced = "".join(spliced)
        coding = np.full(130, 0.1)
        coding[3:102] = 0.9
        options = chain_options()
        self.assertEqual(decoding.best_orf(spliced, coding, options), (3, 102))
        coding = np.where((np.arange(130) >= 22) & (np.arange(130) < 121), 0.9, 0.1)
        self.assertEqual(decoding.best_orf(spliced, coding, options), (22, 121))
        self.assertIsNone(decoding.best_orf(spliced, coding, chain_options(min_orf_bp=120)))

    def test_chain_parse_as_the_worker(self):
        sense, seq = three_exon_gene()
        self.assertEqual(decoding.chain_paths(sense, seq, chain_options()),
                         [[(50, 100), (200, 260), (320, 360)]])
        no_motif = seq[:198] + "AC" + seq[200:]
        self.assertEqual(decoding.chain_paths(sense, no_motif, chain_options()),
                         [[(50, 100), (320, 360)]])
        sense["acceptor"][199] = sense["donor"][260] = 0.02
        self.assertEqual(decoding.chain_paths(sense, seq, chain_options()),
                         [[(50, 100), (320, 360)]])
        self.assertEqual(len(decoding.chain_paths(sense, seq, chain_options(exon_weight=1.0))[0]),
                         3)
        sense["acceptor"][199] = sense["donor"][260] = 0.95
        far = chain_options(length_weight=50, intron_log_mean=math.log(1e6), intron_log_sd=1.0)
        self.assertEqual(decoding.chain_paths(sense, seq, far), [[(50, 360)]])

    def test_alternative_start_chains_as_the_worker(self):
        sense, seq = three_exon_gene()
        gene = [(50, 100), (200, 260), (320, 360)]
        o = chain_options(alternative_start_min=0.5, alternative_start_spacing_bp=20)
        self.assertEqual(decoding.alternative_start_chains(sense, seq, o, []), [gene])
        self.assertEqual(decoding.alternative_start_chains(sense, seq, o, [[(60, 100)]]), [])
        o.alternative_start_spacing_bp = 5
        self.assertEqual(decoding.alternative_start_chains(sense, seq, o, [[(60, 100)]]), [gene])
        o.alternative_start_min = 0.95
        self.assertEqual(decoding.alternative_start_chains(sense, seq, o, []), [])
        o.alternative_start_min, o.alternative_start_spacing_bp = 0.5, 20
        sense["tss"][300] = 0.8
        self.assertEqual(decoding.alternative_start_chains(sense, seq, o, [gene]),
                         [[(300, 360)]])
        o.alternative_start_spacing_bp = 300
        self.assertEqual(decoding.alternative_start_chains(sense, seq, o, []), [gene])

    def test_minus_strand_and_orf(self):
        sense, seq = three_exon_gene()
        n = len(seq)
        scores = np.zeros((n, decoding.CHANNELS), dtype=np.float32)
        scores[:, decoding.PLUS["exon"]] = scores[:, decoding.PLUS["intron"]] = 0.02
        for name, channel in decoding.MINUS.items():
            if name in sense:
                scores[:, channel] = sense[name][::-1]
        plus_sequence = seq.translate(str.maketrans("ACGT", "TGCA"))[::-1]
        options = chain_options(orf_cds=True, min_exon_mean=0.5)
        found = decoding.decode(scores, [((0, n), np.array([1.0, 0.0]))], ["mRNA", "lnc_RNA"],
                                options, plus_sequence)
        self.assertEqual(len(found), 1)
        t = found[0]

        def mirror(a, b):
            return (n - b, n - a)
        self.assertEqual(t.strand, "-")
        self.assertEqual(t.exons, [mirror(320, 360), mirror(200, 260), mirror(50, 100)])
        self.assertEqual(t.tss_position, n - 51)
        self.assertEqual(t.cds, [mirror(320, 334), mirror(200, 260), mirror(60, 100)])


def true_frame_ratios(sense, n):
    """TrueFrameRatios of the C++ test: +0.5 at each ORF base's codon position, else -0.5."""
    rows = np.full((3, n), -0.5)
    k = 0
    for a, b in ((60, 100), (200, 260), (320, 334)):
        for i in range(a, b):
            rows[k % 3, i] = 0.5
            k += 1
    for q in range(3):
        sense[f"llr{q}"] = rows[q]


def coding_text(groups):
    """An order-1 table whose three coding groups are `groups` (ln P of A C G T) for every
    context, the non-coding one flat."""
    flat = " -1.386294 -1.386294 -1.386294 -1.386294"
    return "order 1\n" + "".join(context + groups * 3 + flat + "\n" for context in "ACGT")


class FramedChainTest(unittest.TestCase):
    """The cases of the C++ tests of ChainParseFramed and CodingModel, same expectations."""

    def test_framed_chain_as_the_worker(self):
        sense, seq = three_exon_gene()
        true_frame_ratios(sense, len(seq))
        o = chain_options(coding_weight=1.0)
        gene = [(50, 100), (200, 260), (320, 360)]
        self.assertEqual(decoding.chain_paths_framed(sense, seq, o), [(gene, (60, 334))])
        stopped = seq[:229] + "TAA" + seq[232:]
        self.assertEqual(decoding.chain_paths_framed(sense, stopped, o), [(gene, (60, 232))])
        out_of_frame = seq[:230] + "TAA" + seq[233:]
        self.assertEqual(decoding.chain_paths_framed(sense, out_of_frame, o)[0][1], (60, 334))
        shifted = seq[:316] + "AG" + seq[318:]
        sense_shifted = {k: v.copy() for k, v in sense.items()}
        sense_shifted["acceptor"][317] = 0.99
        self.assertEqual(decoding.chain_paths(sense_shifted, shifted, o),
                         [[(50, 100), (200, 260), (318, 360)]])
        self.assertEqual(decoding.chain_paths_framed(sense_shifted, shifted, o),
                         [(gene, (60, 334))])
        no_atg = seq[:60] + "CCC" + seq[63:]
        self.assertEqual(decoding.chain_paths_framed(sense, no_atg, o),
                         [(decoding.chain_paths(sense, no_atg, o)[0], None)])
        self.assertEqual(decoding.chain_paths_framed(sense, "", o), [])

    def test_coding_ratios_and_tables_as_the_worker(self):
        likely_c = " -2.302585 -0.356675 -2.302585 -2.302585"
        unlikely_c = " -1.203973 -2.302585 -1.203973 -1.203973"
        flat = " -1.386294 -1.386294 -1.386294 -1.386294"
        text = "# test table\n\norder 1\n" + "".join(
            c + (likely_c if c == "C" else flat) + flat + (unlikely_c if c == "C" else flat)
            + flat + "\n" for c in "ACGT")
        model = coding.CodingModel.from_text(text)
        r = model.llr("ACCNCcG")
        likely, unlikely = math.log(0.7 / 0.25), math.log(0.1 / 0.25)
        self.assertEqual(list(r[:, 0]), [0.0, 0.0, 0.0])
        self.assertAlmostEqual(r[0, 2], likely, places=5)
        self.assertAlmostEqual(r[1, 2], 0.0, places=5)
        self.assertAlmostEqual(r[2, 2], unlikely, places=5)
        self.assertEqual(list(r[:, 3]) + list(r[:, 4]), [0.0] * 6)
        self.assertAlmostEqual(r[0, 5], likely, places=5)
        self.assertAlmostEqual(r[2, 6], math.log(0.3 / 0.25), places=5)
        seq = "ATGAAATAGCTGAtaa"
        n = len(seq)
        sums = coding.frame_sums(np.array([[1.0] * n, [2.0] * n, [3.0] * n]))
        self.assertEqual((sums[0, 3], sums[0, 4], sums[1, 1], sums[1, 2]), (6.0, 7.0, 3.0, 4.0))
        stops = coding.next_stops(seq)
        self.assertEqual((stops[0, 0], stops[0, 7], stops[1, 0], stops[1, 2], stops[1, 11],
                          stops[2, 0], stops[0, n]), (6, n + 3, 1, 10, 13, n + 3, n + 3))
        # A model's text reads back to the same numbers.
        again = coding.CodingModel.from_text(model.text("comment"))
        self.assertTrue(np.array_equal(again.log_cds, model.log_cds))

    def test_decode_reads_the_cds_off_the_framed_chain(self):
        sense, seq = three_exon_gene()
        n = len(seq)
        sense["cds"][:] = 0.01
        seq = seq[:102] + "A" * 96 + seq[198:262] + "A" * 56 + seq[318:]
        scores = np.zeros((n, decoding.CHANNELS), dtype=np.float32)
        scores[:, decoding.PLUS["exon"]] = scores[:, decoding.PLUS["intron"]] = 0.02
        for name, channel in decoding.MINUS.items():
            if name in sense:
                scores[:, channel] = sense[name][::-1]
        plus_sequence = seq.translate(str.maketrans("ACGT", "TGCA"))[::-1]
        model = coding.CodingModel.from_text(
            coding_text(" -2.302585 -0.356675 -2.302585 -2.302585"))
        options = chain_options(coding_weight=0.5, coding=model)
        found = decoding.decode(scores, [((0, n), np.array([1.0, 0.0]))], ["mRNA", "lnc_RNA"],
                                options, plus_sequence)
        self.assertEqual(len(found), 1)

        def mirror(a, b):
            return (n - b, n - a)
        self.assertEqual(found[0].exons, [mirror(320, 360), mirror(200, 260), mirror(50, 100)])
        self.assertEqual(found[0].cds, [mirror(320, 334), mirror(200, 260), mirror(60, 100)])
        options.coding_weight = 0
        self.assertEqual(decoding.decode(scores, [((0, n), np.array([1.0, 0.0]))],
                                         ["mRNA", "lnc_RNA"], options, plus_sequence)[0].cds, [])


FLAT = " -1.386294 -1.386294 -1.386294 -1.386294"
LIKELY_G = " -2.302585 -2.302585 -0.356675 -2.302585"


def signal_row(offset, site_group, after_t_only=False):
    """Row of the C++ splice_signal_test: `site_group` after every previous base (or only
    after a T), flat at non-sites."""
    return (str(offset) + "".join(site_group if (not after_t_only or prev == 3) else FLAT
                                  for prev in range(4)) + FLAT * 4 + "\n")


def signal_text():
    return ("# test table\n\ndonor 0 2\n" + signal_row(0, LIKELY_G) + signal_row(1, FLAT)
            + "acceptor -1 1\n" + signal_row(-1, LIKELY_G, after_t_only=True))


class SpliceSignalTest(unittest.TestCase):
    def test_scores_as_the_worker(self):
        model = signal.SpliceSignal.from_text(signal_text())
        likely, unlikely = math.log(0.7 / 0.25), math.log(0.1 / 0.25)
        donor, _ = model.scores("AGCgTNGA")
        self.assertEqual(donor[0], 0.0)
        self.assertAlmostEqual(donor[1], likely, places=5)
        self.assertAlmostEqual(donor[2], unlikely, places=5)
        self.assertAlmostEqual(donor[3], likely, places=5)
        self.assertEqual(list(donor[4:]), [0.0] * 4)
        _, acceptor = model.scores("TGAGC")
        self.assertEqual(list(acceptor[:2]), [0.0, 0.0])
        self.assertAlmostEqual(acceptor[2], likely, places=5)
        self.assertAlmostEqual(acceptor[3], 0.0, places=5)
        self.assertAlmostEqual(acceptor[4], 0.0, places=5)
        again = signal.SpliceSignal.from_text(model.text("comment"))
        self.assertTrue(np.array_equal(again.log_site["acceptor"], model.log_site["acceptor"]))
        with self.assertRaises(ValueError):
            signal.SpliceSignal.from_text(signal_text().split("acceptor")[0])

    def test_motif_positions(self):
        donors, acceptors = signal.motif_positions("CGTAGGCAG")
        self.assertEqual(list(donors), [1, 5])
        self.assertEqual(list(acceptors), [5])  # the AG at 7, 8 would resume at n

    def test_signal_weighs_the_site_terms_as_the_worker(self):
        sense, seq = three_exon_gene()
        o = chain_options()
        sense["acceptor"][199] = 0.02
        sense["donor"][260] = 0.02
        skipped = [[(50, 100), (320, 360)]]
        self.assertEqual(decoding.chain_paths(sense, seq, o), skipped)
        n = len(seq)
        sense["donor_signal"], sense["acceptor_signal"] = np.zeros(n), np.zeros(n)
        sense["acceptor_signal"][200] = 6.0
        sense["donor_signal"][260] = 6.0
        self.assertEqual(decoding.chain_paths(sense, seq, o), skipped)
        o.signal_weight = 1.0
        self.assertEqual(decoding.chain_paths(sense, seq, o),
                         [[(50, 100), (200, 260), (320, 360)]])
        confident, seq = three_exon_gene()
        confident["donor_signal"], confident["acceptor_signal"] = np.zeros(n), np.zeros(n)
        confident["acceptor_signal"][200] = -20.0
        self.assertEqual(decoding.chain_paths(confident, seq, o), skipped)
        o.signal_weight = 0.0
        self.assertEqual(len(decoding.chain_paths(confident, seq, o)[0]), 3)


class GeneStartsTest(unittest.TestCase):
    def test_recall_and_precision(self):
        reference = [
            scoring.Structure("+", [(1000, 1200), (3000, 3100)], gene="A"),
            scoring.Structure("+", [(5000, 5200)], gene="A"),           # A's second start
            scoring.Structure("-", [(20000, 20500), (22000, 22100)], gene="B"),  # 5' at 22099
            scoring.Structure("+", [(40000, 40100)], gene="C"),
        ]
        predicted = [("+", 6900),    # within 2 kb of A's start at 5000
                     ("+", 22000),   # B's start, but the wrong strand
                     ("-", 24099),   # 2,000 bp from B's 5' end: counts
                     ("-", 40000)]   # C's start on the wrong strand
        m = scoring.gene_starts(predicted, reference, "x_")
        self.assertEqual(m["x_gene_start_genes"], 3)
        self.assertEqual(m["x_gene_start_found"], 2)
        self.assertAlmostEqual(m["x_gene_start_recall"], 2 / 3)
        self.assertEqual(m["x_gene_start_matching"], 2)
        self.assertAlmostEqual(m["x_gene_start_precision"], 0.5)
        self.assertEqual(scoring.gene_starts([], reference, "x_")["x_gene_start_recall"], 0.0)
        self.assertEqual(scoring.gene_starts([("+", 1)], [], "x_")["x_gene_start_precision"],
                         0.0)


if __name__ == "__main__":
    unittest.main()
