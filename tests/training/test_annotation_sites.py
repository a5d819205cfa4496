"""The annotation composite's splice-site and TSS channels (scripts/training/annotation_sites.py):
which splice or promoter output lands on which base and channel, checked with stand-in networks
whose outputs are the bases themselves."""

import json
import os
import tempfile
import unittest

try:
    import torch
    from torch import nn
except ImportError:  # pragma: no cover - Debian's python3-torch is installed by install-deps
    torch = None

A, C, G, T, N = 1, 2, 3, 4, 5
FLANK = 3


if torch is not None:
    class FakeSplice(nn.Module):
        """[B, L + 2F] ids -> [B, L, 3] (neither, acceptor, donor): acceptor = base is A,
        donor = base is G, so a site's value names the base it was computed on."""

        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            core = ids[:, 3:ids.size(1) - 3]
            acceptor = (core == 1).float()
            donor = (core == 3).float()
            return torch.stack([1 - acceptor - donor, acceptor, donor], 2)

    class FakeAnnotation(nn.Module):
        def forward(self, ids: torch.Tensor):
            return (torch.full((ids.size(0), ids.size(1), 17), 0.25),
                    torch.full((ids.size(0), 2), 0.5))

    class FakePromoter(nn.Module):
        """[B, W] ids -> [B]: the id of the window's centre base (index W // 2) / 10, so a
        track value names the base its window was centred on (N = 0.5)."""

        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            return ids[:, ids.size(1) // 2].float() / 10.0


@unittest.skipIf(torch is None, "skipped: /usr/bin/python3 cannot import torch")
class CompositeSitesTest(unittest.TestCase):
    def setUp(self):
        from training import annotation_sites
        self.sites = annotation_sites
        self.dir = tempfile.mkdtemp()
        torch.jit.script(FakeSplice()).save(os.path.join(self.dir, "model.pt"))
        with open(os.path.join(self.dir, "manifest.json"), "w", encoding="utf-8") as handle:
            json.dump({"weights": "model.pt", "flank_bp": FLANK,
                       "output_labels": ["neither", "acceptor", "donor"]}, handle)

    def test_site_channels_sit_on_the_intron_edges_of_both_strands(self):
        bases = [A, C, G, T, G, A, C, T, N, C, A, G]
        ids = torch.tensor([bases])
        # Frozen in this process, as training.annotation.export() returns it.
        network = torch.jit.freeze(torch.jit.script(FakeAnnotation().eval()))
        model = self.sites.composite(network, self.dir)
        structure, types = model(ids)
        self.assertEqual(tuple(structure.shape), (1, len(bases), 17))
        self.assertEqual(tuple(types.shape), (1, 2))
        self.assertTrue(torch.all(structure[0, :, :13] == 0.25))
        got = structure[0, :, 13:].tolist()
        n = len(bases)
        for k in range(n):
            before = bases[k - 1] if k > 0 else None
            after = bases[k + 1] if k + 1 < n else None
            # '+': a donor is scored on the exon base before the intron's first base, an
            # acceptor on the exon base after its last. '-' reads the reverse complement: its
            # donor (a G there) is a C after the intron in plus coordinates, its acceptor (an A
            # there) a T before it.
            expected = [float(before == G), float(after == A),
                        float(after == C), float(before == T)]
            self.assertEqual(got[k], expected, f"base {k}")

    def test_the_splice_package_of_the_same_run_comes_first(self):
        out = tempfile.mkdtemp()
        committed = self.sites.splice_package(out)
        self.assertTrue(committed.endswith(os.path.join("worker", "packages", "splice-human")))
        fresh = os.path.join(out, "splice-human")
        os.makedirs(fresh)
        with open(os.path.join(fresh, "manifest.json"), "w", encoding="utf-8") as handle:
            handle.write("{}")
        self.assertEqual(self.sites.splice_package(out), fresh)


@unittest.skipIf(torch is None, "skipped: /usr/bin/python3 cannot import torch")
class PromoterTssTest(unittest.TestCase):
    WINDOW, STRIDE = 6, 4

    def setUp(self):
        from training import annotation_sites
        self.sites = annotation_sites
        self.dir = tempfile.mkdtemp()
        torch.jit.script(FakePromoter()).save(os.path.join(self.dir, "model.pt"))
        with open(os.path.join(self.dir, "manifest.json"), "w", encoding="utf-8") as handle:
            json.dump({"weights": "model.pt", "context_window_bp": self.WINDOW,
                       "output_labels": ["promoter"]}, handle)

    def test_tss_channels_take_the_window_centred_in_each_block_on_both_strands(self):
        bases = [A, C, G, T, G, A, C, T, N, C]  # 10 bases: blocks of 4, the last one short
        n, stride = len(bases), self.STRIDE
        complement = {A: T, C: G, G: C, T: A, N: N}
        annotated = torch.jit.freeze(torch.jit.script(FakeAnnotation().eval()))
        model = self.sites.with_promoter_tss(annotated, self.dir, stride)
        out, types = model(torch.tensor([bases, bases[::-1]]))
        self.assertEqual(tuple(out.shape), (2, n, 17))
        self.assertTrue(torch.all(types == 0.5))
        plus, minus = self.sites.TSS_CHANNELS
        others = [c for c in range(17) if c not in (plus, minus)]
        self.assertTrue(torch.all(out[:, :, others] == 0.25))
        for k in range(n):
            # '+': the window centred on the middle base of k's block; beyond the sequence, N.
            centre = k // stride * stride + stride // 2
            expected_plus = (bases[centre] if centre < n else N) / 10
            # '-': the same on the reverse complement, whose base r is plus base n - 1 - r.
            r = n - 1 - k
            rc_centre = r // stride * stride + stride // 2
            expected_minus = (complement[bases[n - 1 - rc_centre]] if rc_centre < n else N) / 10
            self.assertAlmostEqual(float(out[0, k, plus]), expected_plus, 6, f"base {k}")
            self.assertAlmostEqual(float(out[0, k, minus]), expected_minus, 6, f"base {k}")
        # Each row of the batch is its own sequence.
        self.assertAlmostEqual(float(out[1, 0, plus]), bases[::-1][stride // 2] / 10, 6)

    def test_only_tss_leaves_the_other_channels_at_zero(self):
        annotated = torch.jit.freeze(torch.jit.script(FakeAnnotation().eval()))
        model = self.sites.with_promoter_tss(annotated, self.dir, self.STRIDE, only_tss=True)
        out, types = model(torch.tensor([[A, C, G, T, A, C, G, T]]))
        plus, minus = self.sites.TSS_CHANNELS
        others = [c for c in range(17) if c not in (plus, minus)]
        self.assertTrue(torch.all(out[:, :, others] == 0))
        self.assertTrue(torch.all(types == 0))
        self.assertTrue(torch.all(out[:, :, plus] > 0))



if torch is not None:
    class VaryingAnnotation(nn.Module):
        """Structure channels that depend on the base (so rows differ), types per row."""

        def forward(self, ids: torch.Tensor):
            values = ids.float().unsqueeze(2) / 10.0 + torch.arange(17).float() / 100.0
            return values, torch.stack([ids[:, 0].float(), ids[:, -1].float()], 1)


@unittest.skipIf(torch is None, "skipped: /usr/bin/python3 cannot import torch")
class StrandCompleteTest(unittest.TestCase):
    """annotation_sites.strand_complete: the two composites' computation in one module, with
    a second input that leaves the TSS and splice-site channels out per row."""

    def setUp(self):
        from training import annotation_sites
        self.sites = annotation_sites
        self.splice_dir, self.promoter_dir = tempfile.mkdtemp(), tempfile.mkdtemp()
        torch.jit.script(FakeSplice()).save(os.path.join(self.splice_dir, "model.pt"))
        with open(os.path.join(self.splice_dir, "manifest.json"), "w", encoding="utf-8") as h:
            json.dump({"weights": "model.pt", "flank_bp": FLANK,
                       "output_labels": ["neither", "acceptor", "donor"]}, h)
        torch.jit.script(FakePromoter()).save(os.path.join(self.promoter_dir, "model.pt"))
        with open(os.path.join(self.promoter_dir, "manifest.json"), "w", encoding="utf-8") as h:
            json.dump({"weights": "model.pt", "context_window_bp": 6,
                       "output_labels": ["promoter"]}, h)
        self.network = torch.jit.freeze(torch.jit.script(VaryingAnnotation().eval()))
        self.ids = torch.tensor([[A, C, G, T, G, A, C, T, N, C, A, G],
                                 [G, G, A, T, C, A, A, T, C, G, T, A],
                                 [T, T, G, A, C, C, A, G, N, N, A, C]])

    def test_equals_the_two_composites_and_skips_rows_asked_to(self):
        stride = 4
        old = self.sites.with_promoter_tss(
            self.sites.composite(self.network, self.splice_dir), self.promoter_dir, stride)
        new = self.sites.strand_complete(self.network, self.splice_dir, self.promoter_dir,
                                         stride)
        self.assertTrue(self.sites.takes_wanted(new))
        self.assertFalse(self.sites.takes_wanted(old))
        expected, expected_types = old(self.ids)
        for wanted in (None, torch.ones(3, dtype=torch.int64)):
            got, types = new(self.ids) if wanted is None else new(self.ids, wanted)
            self.assertTrue(torch.equal(got, expected))
            self.assertTrue(torch.equal(types, expected_types))
        skipped = [self.sites.TSS_CHANNELS[0], self.sites.TSS_CHANNELS[1], 13, 14, 15, 16]
        kept = [c for c in range(17) if c not in skipped]
        got, types = new(self.ids, torch.tensor([0, 1, 0]))
        self.assertTrue(torch.equal(got[1], expected[1]))
        self.assertTrue(torch.equal(got[:, :, kept], expected[:, :, kept]))
        self.assertTrue(torch.all(got[[0, 2]][:, :, skipped] == 0))
        self.assertTrue(torch.equal(types, expected_types))
        got, _ = new(self.ids, torch.zeros(3, dtype=torch.int64))
        self.assertTrue(torch.all(got[:, :, skipped] == 0))
        self.assertTrue(torch.equal(got[:, :, kept], expected[:, :, kept]))

    def test_the_served_labels_follow_the_served_options(self):
        saved = self.sites.SERVED_OPTIONS
        try:
            self.sites.SERVED_OPTIONS = None
            self.assertEqual(self.sites.served_labels(), [])
            self.assertFalse(self.sites.takes_wanted(
                self.sites.served(self.network, self.splice_dir, self.promoter_dir)))
            self.sites.SERVED_OPTIONS = {"tss_every_pass": True}
            self.assertEqual(self.sites.served_labels(), self.sites.TSS_EVERY_PASS_LABELS)
            self.sites.SERVED_OPTIONS = {"smooth_tss": True}
            self.assertEqual(self.sites.served_labels(), self.sites.STRAND_COMPLETE_LABELS)
            self.assertTrue(self.sites.takes_wanted(
                self.sites.served(self.network, self.splice_dir, self.promoter_dir)))
        finally:
            self.sites.SERVED_OPTIONS = saved

    def test_tss_every_pass_skips_only_the_splice_sites(self):
        stride = 4
        full = self.sites.strand_complete(self.network, self.splice_dir, self.promoter_dir,
                                          stride)
        new = self.sites.strand_complete(self.network, self.splice_dir, self.promoter_dir,
                                         stride, tss_every_pass=True)
        expected, expected_types = full(self.ids)
        tss = list(self.sites.TSS_CHANNELS)
        splice_sites = [13, 14, 15, 16]
        self.assertEqual(self.sites.TSS_EVERY_PASS_LABELS,
                         ["donor_plus", "acceptor_plus", "donor_minus", "acceptor_minus"])
        got, types = new(self.ids, torch.tensor([0, 1, 0]))
        self.assertTrue(torch.equal(got[1], expected[1]))
        self.assertTrue(torch.all(got[[0, 2]][:, :, splice_sites] == 0))
        self.assertTrue(torch.all(expected[[0, 2]][:, :, splice_sites].sum() > 0))
        kept = [c for c in range(17) if c not in splice_sites]
        self.assertTrue(torch.equal(got[:, :, kept], expected[:, :, kept]))
        self.assertTrue(torch.equal(types, expected_types))
        got, _ = new(self.ids, torch.zeros(3, dtype=torch.int64))
        self.assertTrue(torch.equal(got[:, :, tss], expected[:, :, tss]))

    def test_smoothed_tss_mixes_each_block_with_its_nearer_neighbour(self):
        stride = 4
        raw = self.sites.strand_complete(self.network, self.splice_dir, self.promoter_dir,
                                         stride)
        new = self.sites.strand_complete(self.network, self.splice_dir, self.promoter_dir,
                                         stride, smooth_tss=True)
        expected, expected_types = raw(self.ids)
        got, types = new(self.ids)
        n = self.ids.size(1)  # 12: three whole blocks on either strand

        def smoothed(track):
            # track: one block's value on each of its bases, in the strand's own order.
            out = []
            for k in range(n):
                block, offset = divmod(k, stride)
                nearer = block - 1 if offset < stride // 2 else block + 1
                nearer = min(max(nearer, 0), n // stride - 1)
                out.append(0.75 * track[block * stride] + 0.25 * track[nearer * stride])
            return torch.tensor(out)

        plus, minus = self.sites.TSS_CHANNELS
        for row in range(self.ids.size(0)):
            want_plus = smoothed(expected[row, :, plus].tolist())
            want_minus = smoothed(expected[row, :, minus].flip(0).tolist()).flip(0)
            self.assertTrue(torch.allclose(got[row, :, plus], want_plus, atol=1e-6))
            self.assertTrue(torch.allclose(got[row, :, minus], want_minus, atol=1e-6))
        # The raw track differs between blocks, so smoothing changed it; nothing else changed.
        self.assertFalse(torch.equal(got[:, :, plus], expected[:, :, plus]))
        others = [c for c in range(17) if c not in (plus, minus)]
        self.assertTrue(torch.equal(got[:, :, others], expected[:, :, others]))
        self.assertTrue(torch.equal(types, expected_types))

    def test_neighbours_are_what_the_networks_see_beyond_the_window(self):
        import numpy as np
        from training import annotation_decode as decoding
        # 10 bases, TSS blocks of 4: the third block's window is centred on base 10, one past
        # the window: the first neighbour after it, or N without neighbours.
        new = self.sites.strand_complete(self.network, self.splice_dir, self.promoter_dir, 4,
                                         neighbour=2)
        ids = torch.tensor([[A, C, G, T, G, A, C, T, N, C]])
        after = torch.tensor([[G, G, T, A]])  # 2 before the window (G, G), 2 after it (T, A)
        with_neighbours, _ = new(ids, torch.ones(1, dtype=torch.int64), after)
        without, _ = new(ids)
        plus = self.sites.TSS_CHANNELS[0]
        self.assertAlmostEqual(float(with_neighbours[0, 9, plus]), T / 10, 6)
        self.assertAlmostEqual(float(without[0, 9, plus]), N / 10, 6)
        self.assertTrue(torch.equal(with_neighbours[0, :8, plus], without[0, :8, plus]))
        # '-' reads the reverse complement: its third block's centre is one base before the
        # window, the last neighbour before it (G), complemented.
        minus = self.sites.TSS_CHANNELS[1]
        self.assertAlmostEqual(float(with_neighbours[0, 0, minus]), C / 10, 6)
        self.assertAlmostEqual(float(without[0, 0, minus]), N / 10, 6)
        others = [c for c in range(17) if c not in self.sites.TSS_CHANNELS]
        self.assertTrue(torch.equal(with_neighbours[0, :, others], without[0, :, others]))
        # The mirror cuts them from the pass's sequence, N beyond it.
        source = np.array([A, C, G, T, G, A, C, T, N, C, A, G], dtype=np.int64)
        self.assertEqual(decoding.neighbour_ids(source, 0, 4, 2).tolist(), [N, N, G, A])
        self.assertEqual(decoding.neighbour_ids(source, 4, 4, 2).tolist(), [G, T, N, C])
        self.assertEqual(decoding.neighbour_ids(source, 8, 4, 2).tolist(), [C, T, N, N])

    def test_the_mirror_takes_them_from_the_forward_pass(self):
        import numpy as np
        from training import annotation_data, annotation_decode as decoding
        labels = annotation_data.LABELS
        manifest = {"output_labels": labels,
                    "strand_complete_labels": self.sites.STRAND_COMPLETE_LABELS}
        complete = decoding.strand_complete_channels(manifest)
        self.assertEqual(complete, [labels.index(x) for x in labels
                                    if x in self.sites.STRAND_COMPLETE_LABELS])
        self.assertEqual(decoding.strand_complete_channels({"output_labels": labels}), [])
        new = self.sites.strand_complete(self.network, self.splice_dir, self.promoter_dir, 4)
        rng = np.random.default_rng(5)
        ids = rng.integers(1, 5, 50).astype(np.int64)  # windows of 16: cut at 16, 32, 48
        forward, _ = decoding.stitch(new, ids, 16, reverse_complement=False,
                                     strand_complete=complete)
        both, _ = decoding.stitch(new, ids, 16, strand_complete=complete)
        full, _ = decoding.stitch(new, ids, 16)
        others = [c for c in range(17) if c not in complete]
        self.assertTrue(np.array_equal(both[:, complete], forward[:, complete]))
        self.assertTrue(np.array_equal(both[:, others], full[:, others]))
        self.assertFalse(np.array_equal(full[:, complete], forward[:, complete]))

if __name__ == "__main__":
    unittest.main()
