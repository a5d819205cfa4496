"""Unit tests of the training code's pure parts (metrics, shuffles, tokenizers, cards, the
chromatin feature mapping). Run by ctest as `training:python-units` with the python of the
scripts/ package's venv (scripts/python-env), where `training` is installed."""

import itertools
import random
import unittest
from collections import Counter

import numpy as np

from training import cards, cli, expression, metrics, registry
from training.shuffle import dinucleotide_shuffle


def brute_auroc(scores, labels):
    pos = [s for s, y in zip(scores, labels) if y]
    neg = [s for s, y in zip(scores, labels) if not y]
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p, n in itertools.product(pos, neg))
    return wins / (len(pos) * len(neg))


def brute_ap(scores, labels):
    # Precision at each distinct threshold, weighted by the recall it adds.
    total = sum(labels)
    ap, previous_recall = 0.0, 0.0
    for t in sorted(set(scores), reverse=True):
        called = [y for s, y in zip(scores, labels) if s >= t]
        recall = sum(called) / total
        ap += (recall - previous_recall) * sum(called) / len(called)
        previous_recall = recall
    return ap


class MetricsTest(unittest.TestCase):
    def test_auroc_and_ap_match_brute_force_with_ties(self):
        rng = random.Random(3)
        for _ in range(20):
            n = rng.randint(5, 60)
            scores = [round(rng.random(), 1) for _ in range(n)]  # many ties
            labels = [rng.random() < 0.3 for _ in range(n)]
            if not any(labels) or all(labels):
                continue
            self.assertAlmostEqual(metrics.auroc(scores, labels), brute_auroc(scores, labels))
            self.assertAlmostEqual(metrics.average_precision(scores, labels),
                                   brute_ap(scores, labels))

    def test_known_values(self):
        self.assertEqual(metrics.auroc([0.9, 0.8, 0.2, 0.1], [1, 1, 0, 0]), 1.0)
        self.assertEqual(metrics.auroc([0.1, 0.2, 0.8, 0.9], [1, 1, 0, 0]), 0.0)
        self.assertTrue(np.isnan(metrics.auroc([0.1, 0.2], [1, 1])))
        self.assertAlmostEqual(metrics.average_precision([0.9, 0.8, 0.7], [1, 0, 1]),
                               (1.0 + 2 / 3) / 2)

    def test_topk(self):
        # Two true sites; the two highest scores hold one of them.
        self.assertEqual(metrics.topk_accuracy([0.9, 0.8, 0.1, 0.7], [1, 0, 0, 1]), 0.5)
        self.assertEqual(metrics.topk_accuracy([0.9, 0.1, 0.2, 0.8], [1, 0, 0, 1]), 1.0)

    def test_binary_report_rates(self):
        report = metrics.binary_report("x_", [0.9, 0.4, 0.6, 0.1], [1, 1, 0, 0])
        self.assertEqual(report["x_tpr_at_0.5"], 0.5)
        self.assertEqual(report["x_fpr_at_0.5"], 0.5)


class ShuffleTest(unittest.TestCase):
    def test_preserves_first_letter_and_dinucleotides(self):
        rng = random.Random(5)
        for _ in range(50):
            seq = "".join(rng.choice("ACGTN" if rng.random() < 0.1 else "ACGT")
                          for _ in range(rng.randint(3, 400)))
            out = dinucleotide_shuffle(seq, rng)
            self.assertEqual(len(out), len(seq))
            self.assertEqual(out[0], seq[0])
            self.assertEqual(Counter(zip(out, out[1:])), Counter(zip(seq, seq[1:])))

    def test_actually_shuffles_and_is_seeded(self):
        seq = "ACGTTGCAAGGCTTACGATCGATCGGATCCATGCA" * 10
        a = dinucleotide_shuffle(seq, random.Random(1))
        self.assertNotEqual(a, seq)
        self.assertEqual(a, dinucleotide_shuffle(seq, random.Random(1)))


class CardsTest(unittest.TestCase):
    def test_table_round_trip_and_compare(self):
        values = {"auroc": 0.91234, "heldout_tss": 201, "auprc": float("nan")}
        table = cards.metrics_table(values, {"auroc": "AUROC"})
        parsed = cards.parse_metrics("# card\n\n" + table + "\n| other | row |\n")
        self.assertEqual(parsed["heldout_tss"], 201)
        self.assertAlmostEqual(parsed["auroc"], 0.9123)
        self.assertTrue(np.isnan(parsed["auprc"]))
        self.assertEqual(cards.compare(values, parsed), [])
        problems = cards.compare({"auroc": 0.95, "heldout_tss": 201, "new": 1.0}, parsed)
        self.assertEqual(len(problems), 3)  # changed, not in card, in card but not recomputed

    def test_carried_metrics_and_prediction_counts(self):
        card = {"exon_f1": 0.40, "exon_predicted": 1068, "exon_reference": 1290,
                "previous_exon_f1": 0.39, "find_genes_recall": 0.58}
        recomputed = {"exon_f1": 0.4005, "exon_predicted": 1067, "exon_reference": 1290}
        carried = ("previous_", "find_genes_")
        self.assertEqual(cards.carried_metrics(card, carried),
                         {"previous_exon_f1": 0.39, "find_genes_recall": 0.58})
        self.assertEqual(cards.carried_metrics(card, ()), {})
        self.assertEqual(cards.compare(recomputed, card, carried=carried), [])
        # Without the prefixes the card's other runs are "not recomputed".
        self.assertEqual(len(cards.compare(recomputed, card)), 2)
        # A count of predictions may move by 0.2% of itself, nothing else may.
        far = dict(recomputed, exon_predicted=1065)
        self.assertEqual(len(cards.compare(far, card, carried=carried)), 1)
        reference = dict(recomputed, exon_reference=1289)
        self.assertEqual(len(cards.compare(reference, card, carried=carried)), 1)

    def test_front_matter_metrics_match_by_type(self):
        manifest = {"task": "annotation", "id": "annotation-human", "trained": True,
                    "is_default": True}
        metrics = {"b": 0.5, "a": 12}
        expected = cards.front_matter(manifest, metrics, {}, [])
        shuffled = cards.front_matter(manifest, {"a": 12, "b": 0.5}, {}, [])
        self.assertEqual(cards.compare_front_matter(expected, shuffled), [])
        changed = cards.front_matter(manifest, {"a": 13, "b": 0.5}, {}, [])
        self.assertEqual(len(cards.compare_front_matter(expected, changed)), 1)
        missing = cards.front_matter(manifest, {"b": 0.5}, {}, [])
        self.assertTrue(any("a: missing" in p
                            for p in cards.compare_front_matter(expected, missing)))


try:
    import torch  # noqa: F401
    from training import chromatin, nets
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False


@unittest.skipUnless(HAVE_TORCH, "python3-torch is not installed")
class TokenizerTest(unittest.TestCase):
    def test_char_ids_and_reverse_complement(self):
        ids = nets.char_ids("ACGTNacgtx")
        self.assertEqual(ids.tolist(), [1, 2, 3, 4, 5, 1, 2, 3, 4, 5])
        self.assertEqual(nets.reverse_complement_ids(nets.char_ids("AACGN")).tolist(),
                         nets.char_ids("NCGTT").tolist())

    def test_builtin_kmer_ids_follow_the_worker(self):
        # worker/README.md: AAAAAA=2, AAAAAC=3, TTTTTT=4097, any N -> UNK=1.
        ids = nets.kmer_ids(nets.char_ids("AAAAAACTTTTTTN"), 6, 1)
        self.assertEqual(ids[0], 2)
        self.assertEqual(ids[1], 3)
        self.assertEqual(ids[7], 4097)
        self.assertEqual(ids[8], 1)
        self.assertEqual(len(ids), 14 - 6 + 1)
        self.assertEqual(nets.kmer_ids(nets.char_ids("AAAAAACTTTTTTN"), 6, 6).tolist(),
                         [2, int(ids[6])])


@unittest.skipUnless(HAVE_TORCH, "python3-torch is not installed")
class ChromatinMappingTest(unittest.TestCase):
    NAMES = ["HepG2|DNase|None", "HepG2|CTCF|None", "HepG2|CTCF|None", "K562|c-Myc|IFNa30",
             "HCT-116|TCF7L2|None", "K562|eGFP-JunD|None", "K562|JunD|None"]

    def test_aliases_treatments_and_unmapped_pairs(self):
        m = chromatin.map_pairs(self.NAMES, ["HepG2|CTCF", "K562|MYC", "HCT116|TCF7L2",
                                             "K562|JUND", "A549|GATA3"])
        self.assertEqual(m.feature_pair[0], -1)                  # DNase: no labels
        self.assertEqual(m.feature_pair[1], m.feature_pair[2])   # both HepG2 CTCF features
        self.assertNotEqual(m.feature_pair[3], -1)               # MYC -> c-Myc, any treatment
        self.assertNotEqual(m.feature_pair[4], -1)               # HCT116 -> HCT-116
        self.assertEqual(m.feature_pair[5], -1)                  # tagged construct: not mapped
        self.assertNotEqual(m.feature_pair[6], -1)
        self.assertEqual(m.unmapped_pairs, ["A549|GATA3"])

    def test_unlearned_outputs_are_exactly_zero(self):
        m = chromatin.map_pairs(self.NAMES, ["HepG2|CTCF", "K562|JUND"])
        for kmer, tokenizer in ((0, {"type": "char"}),
                                (chromatin.K, {"type": "kmer", "k": chromatin.K, "stride": 1})):
            net = chromatin.ChromatinNet(kmer, m.feature_pair, len(m.pairs)).eval()
            ids = np.random.default_rng(kmer).integers(1, 6, size=(3, 1000)).astype(np.uint8)
            with torch.no_grad():
                out = net(torch.from_numpy(nets.tokenize(tokenizer, ids)))
            self.assertEqual(tuple(out.shape), (3, len(self.NAMES)))
            for i, p in enumerate(m.feature_pair):
                if p < 0:
                    self.assertTrue(bool((out[:, i] == 0).all()))
                else:
                    self.assertTrue(bool((out[:, i] > 0).all()))

    def test_both_strands_score_alike(self):
        # The module averages a window with its reverse complement, so submitting either strand
        # gives the same probabilities (char ids and 5-mer tokens alike), and its own reverse
        # complement of the tokens is what the worker's tokenizer makes of the reverse strand.
        m = chromatin.map_pairs(self.NAMES, ["HepG2|CTCF", "K562|JUND"])
        ids = np.random.default_rng(7).integers(1, 6, size=(2, 1000)).astype(np.uint8)
        for kmer, tokenizer in ((0, {"type": "char"}),
                                (chromatin.K, {"type": "kmer", "k": chromatin.K, "stride": 1})):
            torch.manual_seed(kmer)
            net = chromatin.ChromatinNet(kmer, m.feature_pair, len(m.pairs)).eval()
            forward = torch.from_numpy(nets.tokenize(tokenizer, ids))
            reverse = torch.from_numpy(nets.tokenize(tokenizer, nets.reverse_complement_ids(ids)))
            self.assertTrue(torch.equal(net.reverse_complement(forward), reverse))
            with torch.no_grad():
                a, b = net(forward), net(reverse)
                one_strand = torch.sigmoid(net.logits(forward))
            self.assertTrue(torch.allclose(a, b, atol=1e-6))
            # ...while one strand alone does differ (the averaging is what makes them equal).
            self.assertFalse(torch.allclose(one_strand, torch.sigmoid(net.logits(reverse)),
                                            atol=1e-6))

    def test_bin_labels_need_more_than_half_a_bin(self):
        peaks = {"A|X": np.array([[0, 101], [250, 350], [400, 1000]])}
        labels = chromatin.bin_labels(peaks, ["A|X"], 1200)
        self.assertEqual(labels[:, 0].tolist(), [1, 0, 1, 1, 1, 0])



class ParallelTrainingOrderTest(unittest.TestCase):
    def test_every_module_has_an_expected_time(self):
        # A module without one would make `scripts/train-models --jobs` fail before training.
        self.assertEqual(set(registry.EXPECTED_MINUTES), set(registry.MODULES))

    def test_longest_chain_first_ties_in_registry_order(self):
        order = cli.parallel_order(registry.MODULES)
        self.assertEqual(sorted(order), sorted(registry.MODULES))
        chains = [cli.chain_minutes(n, registry.MODULES) for n in order]
        self.assertEqual(chains, sorted(chains, reverse=True))
        self.assertEqual(cli.parallel_order(["expression", "chromatin", "promoter"]),
                         ["chromatin", "promoter", "expression"])

    def test_a_module_comes_after_what_it_needs(self):
        order = cli.parallel_order(registry.MODULES)
        for name, needs in registry.NEEDS.items():
            for need in needs:
                self.assertLess(order.index(need), order.index(name))
        # splice's chain holds the annotation that waits for it, when both are in the run
        self.assertEqual(cli.chain_minutes("splice", registry.MODULES),
                         registry.EXPECTED_MINUTES["splice"]
                         + registry.EXPECTED_MINUTES["annotation"])
        self.assertEqual(cli.chain_minutes("splice", ["splice", "promoter"]),
                         registry.EXPECTED_MINUTES["splice"])

    def test_next_ready_waits_for_needs_in_this_run_only(self):
        names = ["splice", "annotation", "promoter"]
        self.assertEqual(cli.next_ready(["annotation", "promoter"], names, set()), "promoter")
        self.assertIsNone(cli.next_ready(["annotation"], names, set()))
        # annotation embeds promoter-human's TSS track too: it waits for both
        self.assertIsNone(cli.next_ready(["annotation"], names, {"splice"}))
        self.assertEqual(cli.next_ready(["annotation"], names, {"splice", "promoter"}),
                         "annotation")
        self.assertEqual(cli.next_ready(["annotation"], ["splice", "annotation"], {"splice"}),
                         "annotation")
        # without splice or promoter in the run, annotation embeds the committed packages
        self.assertEqual(cli.next_ready(["annotation"], ["annotation"], set()), "annotation")


class ExpressionFittingTest(unittest.TestCase):
    def test_block_folds_are_contiguous_and_keep_neighbours_out_of_the_fit(self):
        rng = np.random.default_rng(5)
        positions = rng.integers(0, 10_000_000, size=97)
        folds = expression.block_folds(positions, folds=5, buffer_bp=300_000)
        self.assertEqual(len(folds), 5)
        tested = np.concatenate([test for _, test in folds])
        self.assertEqual(sorted(tested.tolist()), list(range(97)))  # every gene tested once
        for fit, test in folds:
            lo, hi = positions[test].min(), positions[test].max()
            # No other fold's gene lies inside the block: blocks are contiguous stretches.
            inside = np.flatnonzero((positions >= lo) & (positions <= hi))
            self.assertEqual(sorted(inside.tolist()), sorted(test.tolist()))
            # The fit holds exactly the genes more than the buffer away from the block.
            far = np.flatnonzero((positions < lo - 300_000) | (positions > hi + 300_000))
            self.assertEqual(fit.tolist(), far.tolist())
            self.assertFalse(set(fit.tolist()) & set(test.tolist()))

    def test_rank_shapes_follow_the_within_gene_order_with_unit_spread(self):
        targets = np.array([[0.0, 5.0, 1.0, 1.0],
                            [2.0, 2.0, 2.0, 2.0],
                            [1.0, 100.0, 2.0, 3.0]])
        shapes = expression.within_gene_shapes(targets, "rank")
        np.testing.assert_allclose(shapes[0].mean(), 0.0, atol=1e-12)
        np.testing.assert_allclose(shapes[0].std(), 1.0)
        # Ties share a rank; an extreme value counts as one rank, not as its size.
        self.assertEqual(shapes[0][2], shapes[0][3])
        self.assertTrue(shapes[0][0] < shapes[0][2] < shapes[0][1])
        np.testing.assert_array_equal(shapes[1], np.zeros(4))  # a flat gene has no shape
        np.testing.assert_allclose(shapes[2], expression.within_gene_shapes(
            np.array([[1.0, 4.0, 2.0, 3.0]]), "rank")[0])
        scaled = expression.within_gene_shapes(targets, "scaled")
        self.assertGreater(scaled[2][1] - scaled[2][3], 1.5)  # the outlier dominates
        with self.assertRaises(ValueError):
            expression.within_gene_shapes(targets, "log")

    def test_fit_learns_a_feature_driven_tissue_pattern(self):
        # Two kinds of gene: feature 0 says which half of the contexts a gene is high in.
        rng = np.random.default_rng(11)
        kind = rng.integers(0, 2, size=80)
        features = np.c_[kind + 0.1 * rng.standard_normal(80), rng.standard_normal((80, 5))]
        pattern = np.where(np.arange(12) < 6, 1.0, -1.0)
        targets = 3.0 + np.outer(2 * kind - 1, pattern) + 0.3 * rng.standard_normal((80, 12))
        form = expression.Form(level_alpha=1.0, kmer_alpha=1.0, chromatin_alpha=1.0,
                               kmer_share=1.0, components=2)
        fit = expression.Fit(features[:60], targets[:60], features.shape[1], form)
        predicted = fit.profiles(features[60:])
        within = expression.row_spearman(predicted, targets[60:])
        self.assertGreater(np.median(within), 0.6)
        np.testing.assert_allclose(predicted.mean(), targets[60:].mean(), atol=0.5)

    @staticmethod
    def two_block_genes(seed: int):
        """Genes whose tissue pattern is told by the second feature block only (columns 3-5,
        the 'binding' block); the first block (columns 0-2) is noise."""
        rng = np.random.default_rng(seed)
        kind = rng.integers(0, 2, size=100)
        features = np.c_[rng.standard_normal((100, 3)),
                         kind + 0.1 * rng.standard_normal(100), rng.standard_normal((100, 2))]
        pattern = np.where(np.arange(12) < 6, 1.0, -1.0)
        targets = 3.0 + np.outer(2 * kind - 1, pattern) + 0.3 * rng.standard_normal((100, 12))
        return features, targets

    def test_loadings_mix_the_two_blocks_by_their_share(self):
        features, targets = self.two_block_genes(3)
        forms = {share: expression.Form(level_alpha=1.0, kmer_alpha=1.0, chromatin_alpha=1.0,
                                        kmer_share=share, components=2)
                 for share in (0.0, 0.5, 1.0)}
        fits = {share: expression.Fit(features[:70], targets[:70], 3, form)
                for share, form in forms.items()}
        within = {share: np.median(expression.row_spearman(fit.profiles(features[70:]),
                                                           targets[70:]))
                  for share, fit in fits.items()}
        self.assertGreater(within[0.0], 0.6)   # the loadings read the informative block
        self.assertLess(within[1.0], 0.3)      # the noise block alone cannot tell
        # The mix is one linear map: its loadings are the shares' weighted sum, and the level
        # (one ridge on all features) does not depend on the share.
        np.testing.assert_allclose(fits[0.5].weights[:, 2:],
                                   0.5 * fits[0.0].weights[:, 2:] + 0.5 * fits[1.0].weights[:, 2:])
        np.testing.assert_allclose(fits[0.5].weights[:, :2], fits[1.0].weights[:, :2])
        self.assertFalse(fits[0.0].weights[:3, 2:].any())  # share 0: no spectra rows
        self.assertFalse(fits[1.0].weights[3:, 2:].any())  # share 1: no binding rows

    def test_fold_parts_assemble_what_out_of_fold_fits(self):
        features, targets = self.two_block_genes(8)
        positions = np.arange(100) * 50_000
        folds = expression.block_folds(positions, folds=4, buffer_bp=100_000)
        parts = expression.FoldParts(folds, features, targets, 3)
        for share, k in ((0.0, 4), (0.35, 8), (1.0, 12)):
            form = expression.Form(level_alpha=expression.LEVEL_ALPHAS[1],
                                   kmer_alpha=expression.LOADING_ALPHAS[0],
                                   chromatin_alpha=expression.CHROMATIN_ALPHAS[2],
                                   kmer_share=share, components=k)
            np.testing.assert_allclose(parts.predict(form),
                                       expression.out_of_fold(folds, features, targets, 3, form),
                                       rtol=1e-9, atol=1e-9)


@unittest.skipUnless(HAVE_TORCH, "python3-torch is not installed")
class PromoterChromatinTest(unittest.TestCase):
    @staticmethod
    def first_base_network(outputs: int):
        """A stand-in network: output j of a window is (its first id + j) / 100."""
        import torch
        from torch import nn

        class FirstBase(nn.Module):
            def __init__(self):
                super().__init__()
                self.outputs = outputs  # an attribute: TorchScript cannot close over a local

            def forward(self, ids: torch.Tensor) -> torch.Tensor:
                first = ids[:, :1].to(torch.float32)
                return (first + torch.arange(self.outputs, dtype=torch.float32)) / 100.0

        return FirstBase()

    def test_windows_tile_the_span_and_features_are_mean_and_max_of_ln_p(self):
        import torch
        from training.expression_net import PromoterChromatin

        ids = torch.zeros(2, 40, dtype=torch.int64)
        ids[0, 5], ids[0, 9], ids[0, 13] = 1, 2, 3   # the first bases of the three windows
        ids[1, 5], ids[1, 9], ids[1, 13] = 4, 4, 4
        module = PromoterChromatin(self.first_base_network(4), first=5, count=3, step=4, width=10,
                                   columns=[3, 1], floor=0.5)
        out = module(ids)
        self.assertEqual(list(out.shape), [2, 4])
        p = np.array([[1, 2, 3], [4, 4, 4]], dtype=np.float64)[:, :, None]
        p = (p + np.array([3, 1])[None, None, :]) / 100.0   # columns 3 and 1, in that order
        x = np.log(p + 0.5)
        expected = np.c_[x.mean(axis=1), x.max(axis=1)]
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)
        scripted = torch.jit.script(module)  # the served module is scripted
        np.testing.assert_allclose(scripted(ids).numpy(), expected, rtol=1e-6)

    def test_interleaved_placements_average_each_placements_mean_and_max(self):
        import torch
        from training.expression_net import PromoterChromatin

        network = self.first_base_network(3)
        # Four windows starting at 2, 5, 8, 11: placement 0 holds windows 0 and 2, placement 1
        # windows 1 and 3.
        ids = torch.zeros(1, 30, dtype=torch.int64)
        firsts = [7, 1, 2, 9]
        for i, value in enumerate(firsts):
            ids[0, 2 + 3 * i] = value
        module = PromoterChromatin(network, first=2, count=4, step=3, width=6,
                                   columns=[0, 2], floor=0.1, placements=2)
        x = np.log((np.array(firsts, dtype=np.float64)[:, None] + np.array([0, 2])) / 100.0
                   + 0.1)
        a, b = x[[0, 2]], x[[1, 3]]
        expected = np.r_[(a.mean(axis=0) + b.mean(axis=0)) / 2,
                         (a.max(axis=0) + b.max(axis=0)) / 2][None, :]
        # Not the max over all four windows: the placements' maxima are averaged.
        self.assertFalse(np.allclose(expected[0, 2:], x.max(axis=0)))
        np.testing.assert_allclose(module(ids).numpy(), expected, rtol=1e-6)
        np.testing.assert_allclose(torch.jit.script(module)(ids).numpy(), expected, rtol=1e-6)
        # The network's calls are cut into chunks of windows; any chunk gives the same features.
        for chunk in (1, 3, 100):
            chunked = PromoterChromatin(network, first=2, count=4, step=3, width=6,
                                        columns=[0, 2], floor=0.1, placements=2, chunk=chunk)
            np.testing.assert_allclose(torch.jit.script(chunked)(ids.repeat(3, 1)).numpy(),
                                       np.repeat(expected, 3, axis=0), rtol=1e-6)
        with self.assertRaises(ValueError):
            PromoterChromatin(network, first=2, count=5, step=3, width=6, columns=[0],
                              floor=0.1, placements=2)


if __name__ == "__main__":
    unittest.main()
