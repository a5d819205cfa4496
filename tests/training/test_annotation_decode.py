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

from training import annotation_decode as decoding  # noqa: E402
from training import annotation_metrics as scoring  # noqa: E402


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
