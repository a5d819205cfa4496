"""training/openspliceai_variants.py: the shortcut scoring of OpenSpliceAI's delta scores for the
splice card's variant check must give the numbers the service's windowing gives. Checked on a
small network of the same architecture (the reference module's blocks and skip taps, random
weights and batch-norm statistics; no checkpoints, no shared data), against
splice_variants.score_variants on the reference network's own "same"-padded forward; plus the
per-variant cache that makes a re-run cheap and the card section built from both models' figures.
Run by ctest as `training:python-units`."""

import os
import tempfile
import unittest
from unittest import mock

import numpy as np
import torch

from dnaserve_tools import openspliceai_reference as ref
from training import openspliceai_variants as ov
from training import splice_variants as sv

DISTANCE = 5
# (kernel, dilation) per block, a skip tap after the 2nd and the 3rd: flank 2 + 4 + 12 = 18.
BLOCKS = [(3, 1), (3, 2), (5, 3)]
TAPS_AFTER = (2, 3)


def tiny_net(seed: int) -> ref.SpliceNet:
    """A reference SpliceNet cut down to BLOCKS, with random weights and batch-norm statistics
    (so batch norm is not the identity), in eval mode."""
    torch.manual_seed(seed)
    net = ref.SpliceNet()
    units = []
    for i, (kernel, dilation) in enumerate(BLOCKS):
        units.append(ref.ResidualBlock(kernel, dilation, ref.LEAKY_SLOPE))
        if i + 1 in TAPS_AFTER:
            units.append(ref.SkipTap())
    net.residual_units = torch.nn.ModuleList(units)
    net.flank = sum(d * (k - 1) for k, d in BLOCKS)
    for module in net.modules():
        if isinstance(module, torch.nn.Conv1d):
            torch.nn.init.normal_(module.weight, std=0.15)
            torch.nn.init.normal_(module.bias, std=0.3)
        if isinstance(module, torch.nn.BatchNorm1d):
            module.running_mean.normal_(0, 0.5)
            module.running_var.uniform_(0.5, 2.0)
            module.weight.data.normal_(1, 0.2)
            module.bias.data.normal_(0, 0.2)
    return net.eval()


class WindowedEnsemble(torch.nn.Module):
    """What the service runs, the published way: char ids [B, L] -> mean of the members'
    softmax over the central L - 2 * flank bases, [B, L - 2F, 3] (same-padded convs, cropped)."""

    def __init__(self, members):
        super().__init__()
        self.members = torch.nn.ModuleList(members)

    def forward(self, ids):
        onehot = ov._onehot(ids)
        return torch.stack([m(onehot) for m in self.members]).mean(0).transpose(1, 2)


def genome(length: int = 600, seed: int = 4) -> np.ndarray:
    ids = np.random.default_rng(seed).integers(1, 5, length).astype(np.int64)
    ids[250:260] = 5  # an N run inside one group's context
    return ids


def variants():
    """Two junction groups (a positive and two negatives each), one per strand, ALTs that differ
    from the genome's base; positions leave distance + flank bases to spare."""
    g = genome()
    bases = "ACGT"
    def make(pos, strand, label, kind):
        ref_base = bases[g[pos] - 1]
        alt = bases[(g[pos]) % 4]
        return sv.Variant(pos, ref_base, alt, strand, label, kind, 1 if label else 10, "X")
    return [make(200, "+", 1, "donor+1"), make(215, "+", 0, "near:3-50"),
            make(170, "+", 0, "near:51-500"),
            make(400, "-", 1, "acceptor-1"), make(391, "-", 0, "near:3-50"),
            make(460, "-", 0, "near:51-500")]


class ShortcutMatchesTheWindowsTest(unittest.TestCase):
    def setUp(self):
        self.members = [tiny_net(1), tiny_net(2)]
        self.flank = self.members[0].flank
        # Output windows of 16 put the scored positions (flank .. flank + 2d + 1 = 18..29) in
        # window 1, whose input reaches past the submitted sequence: N there, as in the worker.
        self.manifest = {"output_labels": list(ref.CLASSES), "flank_bp": self.flank,
                         "output_window_bp": 16}

    def windowed(self, chosen):
        with torch.no_grad():
            return sv.score_variants(WindowedEnsemble(self.members), self.manifest, genome(),
                                     chosen, distance=DISTANCE)

    def test_stages_read_the_architecture(self):
        stages = ov.Stages(self.members[0])
        self.assertEqual(stages.trims, [2, 4, 12])
        self.assertEqual(stages.flank, 18)
        self.assertEqual([after for after, _ in stages.taps], [0, 2, 3])

    def test_each_group_scores_like_the_service_windows(self):
        chosen = variants()
        stages = [ov.Stages(m) for m in self.members]
        fast = []
        with torch.no_grad():
            for group in ov.junction_groups(chosen):
                fast += ov.group_scores(stages, genome(), [chosen[i] for i in group], DISTANCE,
                                        ref.CLASSES)
        slow = self.windowed(chosen)
        self.assertEqual(len(fast), len(chosen))
        for v, a, b in zip(chosen, fast, slow):
            for key in ("DS_AG", "DS_AL", "DS_DG", "DS_DL", "DS"):
                # float rounding only (the converter's export bound; the service rounds to 1e-4)
                self.assertLess(abs(a[key] - b[key]), 1e-5, msg=(v, key))
        # The toy network reacts to the changes: the comparison is not one of zeros.
        self.assertGreater(min(s["DS"] for s in slow), 1e-3)

    def test_one_variant_alone_scores_as_in_its_group(self):
        chosen = variants()
        stages = [ov.Stages(m) for m in self.members]
        with torch.no_grad():
            group = ov.group_scores(stages, genome(), chosen[:3], DISTANCE, ref.CLASSES)
            alone = ov.group_scores(stages, genome(), chosen[1:2], DISTANCE, ref.CLASSES)
        self.assertLess(abs(group[1]["DS"] - alone[0]["DS"]), 1e-5)

    def test_too_little_sequence_is_an_error(self):
        stages = [ov.Stages(self.members[0])]
        near_start = sv.Variant(10, "A", "C", "+", 1, "donor+1", 1, "X")
        with self.assertRaises(ValueError):
            ov.member_scores(stages[0], genome(), [near_start.pos], [2], DISTANCE)

    def test_a_group_on_two_strands_is_refused(self):
        chosen = variants()
        with self.assertRaises(ValueError):
            ov.group_scores([ov.Stages(self.members[0])], genome(), [chosen[0], chosen[3]],
                            DISTANCE, ref.CLASSES)

    def test_junction_groups_follow_the_draw_order(self):
        self.assertEqual(ov.junction_groups(variants()), [[0, 1, 2], [3, 4, 5]])


class CacheTest(unittest.TestCase):
    """cached_scores: scores go to a file outside the repository per variant; a second run reads
    them back without loading the checkpoints; a new variant is scored alone."""

    def test_second_run_reads_the_cache(self):
        members = [tiny_net(3)]
        chosen = variants()
        with tempfile.TemporaryDirectory() as scratch:
            checkpoints = os.path.join(scratch, "checkpoints")
            os.makedirs(checkpoints)
            with open(os.path.join(checkpoints, "model_a.pt"), "wb") as handle:
                handle.write(b"stand-in checkpoint bytes")
            with mock.patch.object(ov, "CACHE_DIR", os.path.join(scratch, "cache")), \
                    mock.patch.object(ref, "load_ensemble", return_value=members) as load:
                first, info = ov.cached_scores(checkpoints, genome(), chosen[:3], DISTANCE,
                                               log=lambda line: None)
                self.assertEqual(load.call_count, 1)
                self.assertTrue(info["cache"].startswith(os.path.join(scratch, "cache")))
                again, _ = ov.cached_scores(checkpoints, genome(), chosen[:3], DISTANCE,
                                            log=lambda line: None)
                self.assertEqual(load.call_count, 1)  # nothing recomputed
                self.assertEqual(first, again)
                both, info = ov.cached_scores(checkpoints, genome(), chosen, DISTANCE,
                                              log=lambda line: None)
                self.assertEqual(load.call_count, 2)  # only the second group was scored
                self.assertEqual(both[:3], first)
                with open(info["cache"], encoding="utf-8") as handle:
                    self.assertEqual(len(handle.readlines()), 6)
                # Other checkpoints (other bytes) do not read these scores.
                with open(os.path.join(checkpoints, "model_a.pt"), "ab") as handle:
                    handle.write(b"!")
                ov.cached_scores(checkpoints, genome(), chosen[:3], DISTANCE,
                                 log=lambda line: None)
                self.assertEqual(load.call_count, 3)
        with torch.no_grad():
            direct = ov.group_scores([ov.Stages(members[0])], genome(), chosen[:3], DISTANCE,
                                     ref.CLASSES)
        self.assertEqual([d["DS"] for d in direct], [f["DS"] for f in first])


def results(subset: bool, reference: bool):
    """Card inputs as splice_variants.evaluate returns them (made-up figures)."""
    out = {"variant_seconds": 300.0, "variant_load": 3.0}
    prefixes = ["variant_"] + (["variant_subset_"] if subset else [])
    if reference:
        prefixes.append("openspliceai_variant_subset_" if subset else "openspliceai_variant_")
        out.update({"openspliceai_variant_seconds": 900.0, "openspliceai_variant_load": 9.0,
                    "openspliceai_variant_junction_seconds": 4.0})
    for prefix in prefixes:
        small = prefix.endswith("subset_")
        theirs = prefix.startswith("openspliceai")
        out.update({prefix + "positives": 20 if small else 200,
                    prefix + "negatives": 40 if small else 400,
                    prefix + "auroc_ds": 0.97 if theirs else 0.9,
                    prefix + "auroc_ds_low": 0.95 if theirs else 0.87,
                    prefix + "auroc_ds_high": 0.99 if theirs else 0.93,
                    prefix + "auroc_ds_3_50bp": 0.96 if theirs else 0.85,
                    prefix + "auroc_ds_51_500bp": 0.98 if theirs else 0.95,
                    prefix + "median_ds_positive": 0.8 if theirs else 0.5,
                    prefix + "median_ds_negative": 0.001})
    return out


class CardSectionTest(unittest.TestCase):
    def test_full_set_compares_both_models_on_every_variant(self):
        text = sv.card_section(results(subset=False, reference=True))
        self.assertIn("| on all 600 variants | splice-human | OpenSpliceAI MANE (10k) |", text)
        self.assertIn("| AUROC of DS | 0.9000 | 0.9700 |", text)
        self.assertIn("| positives | 200 | 200 |", text)
        self.assertIn("supersedes", text)
        self.assertIn("900 s for its 600 variants, a median 4 s a junction", text)

    def test_a_subset_says_what_was_run(self):
        text = sv.card_section(results(subset=True, reference=True))
        self.assertIn("| on the 60 variants OpenSpliceAI scored |", text)
        self.assertIn("| positives | 20 | 20 |", text)
        self.assertIn("first 20 positives in draw order", text)
        self.assertIn("about 0.2 h for all of them", text)  # 4 s a junction x 200
        self.assertIn("AUROC of DS 0.9000", text)  # splice-human on all of them, too

    def test_without_the_checkpoints_the_column_says_so(self):
        text = sv.card_section(results(subset=False, reference=False))
        self.assertIn("| AUROC of DS | 0.9000 | not computed |", text)

    def test_openspliceai_figures_stay_out_of_the_metrics_table(self):
        for key in results(subset=True, reference=True):
            if key.startswith("openspliceai_"):
                self.assertIn(key, sv.NOT_COMPARED)
        for key in results(subset=False, reference=True):
            if key.startswith("openspliceai_"):
                self.assertIn(key, sv.NOT_COMPARED)
        self.assertNotIn("variant_auroc_ds", sv.NOT_COMPARED)
        self.assertNotIn("variant_subset_auroc_ds", sv.NOT_COMPARED)


class SubsetTest(unittest.TestCase):
    def test_first_positives_with_their_negatives(self):
        chosen = variants()
        self.assertEqual(sv.openspliceai_subset(chosen, 1), chosen[:3])
        self.assertEqual(sv.openspliceai_subset(chosen, 2), chosen)
        self.assertEqual(sv.openspliceai_subset(chosen, 5), chosen)


if __name__ == "__main__":
    unittest.main()
