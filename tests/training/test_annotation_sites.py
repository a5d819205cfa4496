"""The annotation composite's splice-site channels (scripts/training/annotation_sites.py): which
splice output lands on which base and channel, checked with stand-in networks whose outputs are
the bases themselves."""

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


if __name__ == "__main__":
    unittest.main()
