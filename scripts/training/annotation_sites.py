"""The annotation model's splice-site channels, taken from the splice model.

The annotation network's own four site channels (trained on one chromosome with a class-balanced
loss) pick the right base too rarely for exact introns: on the decoder-tuning block an intron
never matched exactly. The splice model (splice-human, top-k 0.67 on the held-out region) is far
sharper, so the served annotation model is a composite: the annotation network's 13 structure
channels plus four site channels computed by the splice network on the same window, on both
strands. Both are frozen TorchScript modules; the composite is scripted around them.

Conventions differ by one base: the splice model labels exon bases (SpliceAI: donor = last exonic
base before an intron, acceptor = first exonic base after it, in transcript orientation), the
decoder reads the intron's first and last bases (worker/windowing/annotation_decode.h). In plus
coordinates, for an intron [a, b]:
    donor_plus[a]    = donor probability of base a - 1 on '+'
    acceptor_plus[b] = acceptor probability of base b + 1 on '+'
    acceptor_minus[a] = acceptor probability of base a - 1 on '-'
    donor_minus[b]    = donor probability of base b + 1 on '-'
"""

import io
import os
from typing import List, Optional, Tuple

from training import common

SPLICE_ID = "splice-human"
STRUCTURE_CHANNELS = 13  # annotation_data.LABELS before the four site channels


def splice_package(out_dir: str) -> str:
    """The splice package the composite embeds: the one trained into `out_dir` by the same
    run when there is one (scripts/train-models trains splice before annotation), else the
    committed one (`--only annotation`)."""
    for root in (out_dir, os.path.join(common.ROOT, "worker", "packages")):
        path = os.path.join(root, SPLICE_ID)
        if os.path.isfile(os.path.join(path, "manifest.json")):
            return path
    raise FileNotFoundError(f"no {SPLICE_ID} package in {out_dir} or worker/packages")


def load_splice(package_dir: str):
    """(frozen splice module, its flank in bp, index of acceptor, index of donor)."""
    from training import nets
    manifest, module = nets.load_package(package_dir)
    labels = manifest["output_labels"]
    return module, int(manifest["flank_bp"]), labels.index("acceptor"), labels.index("donor")


def plain_script_module(module):
    """A saved and reloaded copy of a scripted module, in eval mode. A module scripted in this
    process (export() in training) keeps its Python class's type, which TorchScript will not
    accept as an attribute of another scripted module; the reloaded copy is a plain
    ScriptModule."""
    import torch

    buffer = io.BytesIO()
    torch.jit.save(module, buffer)
    buffer.seek(0)
    copy = torch.jit.load(buffer)
    copy.eval()
    return copy


def composite(annotation, splice_dir: str):
    """A scripted, frozen module: char ids [B, L] -> ([B, L, 17] probabilities, [B, T] types),
    the annotation module's outputs with channels 13-16 from the splice module."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    from training.annotation_data import COMPLEMENT_IDS

    splice, flank, acceptor, donor = load_splice(splice_dir)
    annotation = plain_script_module(annotation)

    class AnnotationWithSites(nn.Module):
        def __init__(self):
            super().__init__()
            self.annotation = annotation
            self.splice = splice
            self.flank = flank
            self.acceptor = acceptor
            self.donor = donor
            self.structure_channels = STRUCTURE_CHANNELS
            self.register_buffer("complement", torch.tensor(COMPLEMENT_IDS, dtype=torch.long))

        def sites(self, ids: torch.Tensor) -> torch.Tensor:
            """[B, L] -> [B, L, 3] splice probabilities, N beyond the window."""
            padded = F.pad(ids, [self.flank, self.flank], value=5.0)
            return self.splice(padded)

        def forward(self, ids: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
            structure, types = self.annotation(ids)
            plus = self.sites(ids)
            minus = torch.flip(self.sites(torch.flip(self.complement[ids], [1])), [1])
            zero = torch.zeros_like(plus[:, :1, 0])
            donor_plus = torch.cat([zero, plus[:, :-1, self.donor]], 1)
            acceptor_plus = torch.cat([plus[:, 1:, self.acceptor], zero], 1)
            donor_minus = torch.cat([minus[:, 1:, self.donor], zero], 1)
            acceptor_minus = torch.cat([zero, minus[:, :-1, self.acceptor]], 1)
            site = torch.stack([donor_plus, acceptor_plus, donor_minus, acceptor_minus], 2)
            return torch.cat([structure[:, :, :self.structure_channels], site], 2), types

    model = AnnotationWithSites().eval()
    return torch.jit.freeze(torch.jit.script(model))


# --- transcript-start evidence from the promoter model ---------------------------------------
#
# The annotation network's own TSS channels hardly rank annotated starts: on DECODER_TUNING the
# top 45 peaks (one per 2 kb, 45 annotated genes) lie within 2 kb of the start of 4 of them,
# the promoter network's (sliding 2,000 bp windows every 250 bp over the genome) of 21 (top 90:
# 7 and 26). So the served TSS channels are the promoter network's: run on 2,000 bp windows
# centred every `stride` bases of the window (N beyond it), on both strands, each base taking
# the probability of the window centred in its block of `stride` bases.

PROMOTER_ID = "promoter-human"
TSS_STRIDE_BP = 512
TSS_CHANNELS = (5, 11)  # TSS_plus, TSS_minus in annotation_data.LABELS


def promoter_package(out_dir: str) -> str:
    """The promoter package the composite embeds (as splice_package)."""
    for root in (out_dir, os.path.join(common.ROOT, "worker", "packages")):
        path = os.path.join(root, PROMOTER_ID)
        if os.path.isfile(os.path.join(path, "manifest.json")):
            return path
    raise FileNotFoundError(f"no {PROMOTER_ID} package in {out_dir} or worker/packages")


def with_promoter_tss(annotated, promoter_dir: str, stride: int = TSS_STRIDE_BP,
                      only_tss: bool = False):
    """A scripted, frozen module: the 17-channel annotation module `annotated` (a composite)
    with its TSS channels replaced by the promoter track (see above). `only_tss`: every other
    channel zero and no annotation pass (to measure the track alone; the worker's stitching
    treats channels independently)."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    from training import nets
    from training.annotation_data import COMPLEMENT_IDS

    manifest, promoter = nets.load_package(promoter_dir)
    context = int(manifest["context_window_bp"])
    annotated = plain_script_module(annotated)

    class AnnotationWithPromoterTss(nn.Module):
        def __init__(self):
            super().__init__()
            self.annotated = annotated
            self.promoter = promoter
            self.context = context
            self.stride = stride
            self.only_tss = only_tss
            self.tss_plus = TSS_CHANNELS[0]
            self.tss_minus = TSS_CHANNELS[1]
            self.register_buffer("complement", torch.tensor(COMPLEMENT_IDS, dtype=torch.long))

        def track(self, ids: torch.Tensor) -> torch.Tensor:
            """[B, L] sense ids -> [B, L]: per block of `stride` bases the promoter probability
            of the window centred on the block's middle base."""
            batch, length = ids.size(0), ids.size(1)
            blocks = (length + self.stride - 1) // self.stride
            half = self.context // 2
            padded = F.pad(ids, [half, half + blocks * self.stride - length], value=5.0)
            windows = padded[:, self.stride // 2:].unfold(1, self.context, self.stride)
            windows = windows[:, :blocks].reshape(batch * blocks, self.context)
            probabilities = self.promoter(windows).reshape(batch, blocks)
            return probabilities.repeat_interleave(self.stride, dim=1)[:, :length]

        def forward(self, ids: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
            plus = self.track(ids)
            minus = torch.flip(self.track(torch.flip(self.complement[ids], [1])), [1])
            if self.only_tss:
                out = torch.zeros(ids.size(0), ids.size(1), 17)
                types = torch.zeros(ids.size(0), 2)
            else:
                out, types = self.annotated(ids)
            return torch.cat([out[:, :, :self.tss_plus], plus.unsqueeze(2),
                              out[:, :, self.tss_plus + 1:self.tss_minus], minus.unsqueeze(2),
                              out[:, :, self.tss_minus + 1:]], 2), types

    model = AnnotationWithPromoterTss().eval()
    return torch.jit.freeze(torch.jit.script(model))


# --- one module, both strands in one pass -------------------------------------------------
#
# The composite above computes its splice-site and TSS channels on both strands of its window
# in every forward pass (the splice and promoter networks run on the window and on its reverse
# complement), so the worker's reverse-complement pass, which the request default asks for,
# used to run both networks a second time on windows cut elsewhere: about 43% of the two
# passes' time. The strand-complete composite is the same computation with a second input: per
# row, whether those channels are wanted, and a third: the window's real neighbours, which the
# two networks see instead of N. The manifest names the channels (`strand_complete_labels`) and
# the neighbours (`neighbour_bp`), and the worker's reverse pass asks for the structure network
# alone (worker/README.md).

# The channels the splice and promoter networks fill, in annotation_data.LABELS.
STRAND_COMPLETE_LABELS = ["TSS_plus", "TSS_minus", "donor_plus", "acceptor_plus",
                          "donor_minus", "acceptor_minus"]
# The window's real neighbouring bases the module receives on each side (manifest
# `neighbour_bp`): the splice network's flank, and half the promoter network's window. Without
# them both networks saw N beyond the window, which the reverse pass's windows, cut elsewhere,
# used to make up for: on the decoder-tuning block, skipping the reverse pass's networks cost
# exon F1 0.414 -> 0.368 with N around the windows and 0.414 -> 0.401 with the neighbours.
NEIGHBOUR_BP = 1000
# With the TSS channels computed in both passes (strand_complete's tss_every_pass), the
# channels only the forward pass computes.
TSS_EVERY_PASS_LABELS = STRAND_COMPLETE_LABELS[2:]
# The served composite: None = the two composites (with_promoter_tss(composite(...))), else
# strand_complete's options. Neither strand-complete attempt met its rule (annotation.py, the
# block after DECODER_TUNING's settings), so the package stays as it was.
SERVED_OPTIONS: Optional[dict] = None


def served_labels() -> List[str]:
    """The strand_complete_labels of a module composed with SERVED_OPTIONS."""
    if SERVED_OPTIONS is None:
        return []
    return TSS_EVERY_PASS_LABELS if SERVED_OPTIONS.get("tss_every_pass") else STRAND_COMPLETE_LABELS


def served(annotation, splice_dir: str, promoter_dir: str):
    """The composite the package ships (SERVED_OPTIONS)."""
    if SERVED_OPTIONS is None:
        return with_promoter_tss(composite(annotation, splice_dir), promoter_dir)
    return strand_complete(annotation, splice_dir, promoter_dir, neighbour=NEIGHBOUR_BP,
                           **SERVED_OPTIONS)


def takes_wanted(module) -> bool:
    """Whether a scripted annotation module is strand_complete's (takes the second input)."""
    return [a.name for a in module.forward.schema.arguments][2:3] == ["wanted"]


def strand_complete(annotation, splice_dir: str, promoter_dir: str,
                    stride: int = TSS_STRIDE_BP, neighbour: int = 0,
                    smooth_tss: bool = False, tss_every_pass: bool = False):
    """A scripted, frozen module: (char ids [B, L], wanted [B] int64 or absent, neighbours
    [B, 2 * neighbour] char ids or absent) -> ([B, L, 17] probabilities, [B, T] types).
    `neighbours`: the `neighbour` bases before the window, then the `neighbour` after it (N
    beyond the sequence); the splice and promoter networks see them instead of N. Absent (or
    all N): equal to with_promoter_tss(composite(annotation, splice_dir), promoter_dir) on every
    row with wanted != 0 (all rows when `wanted` is absent). Rows with wanted == 0 run the
    annotation network alone: their TSS and splice-site channels are 0. The annotation network
    sees the window alone either way. `smooth_tss`: the TSS track smoothed (see smoothed).
    `tss_every_pass`: rows with wanted == 0 still get their TSS channels (only the splice-site
    channels are 0 there; the manifest then lists only those, TSS_EVERY_PASS_LABELS)."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    from training import nets
    from training.annotation_data import COMPLEMENT_IDS

    splice, flank, acceptor, donor = load_splice(splice_dir)
    promoter_manifest, promoter = nets.load_package(promoter_dir)
    context = int(promoter_manifest["context_window_bp"])
    annotation = plain_script_module(annotation)

    class StrandCompleteAnnotation(nn.Module):
        def __init__(self):
            super().__init__()
            self.annotation = annotation
            self.splice = splice
            self.promoter = promoter
            self.flank = flank
            self.acceptor = acceptor
            self.donor = donor
            self.context = context
            self.stride = stride
            self.neighbour = neighbour
            self.smooth_tss = smooth_tss
            self.tss_every_pass = tss_every_pass
            self.structure_channels = STRUCTURE_CHANNELS
            self.tss_plus = TSS_CHANNELS[0]
            self.tss_minus = TSS_CHANNELS[1]
            self.register_buffer("complement", torch.tensor(COMPLEMENT_IDS, dtype=torch.long))

        def around(self, wide: torch.Tensor, left: int, right: int) -> torch.Tensor:
            """The window of `wide` (its `neighbour` bases each side of it) with `left` and
            `right` bases around it: its own neighbours as far as they go, N beyond."""
            have = self.neighbour
            length = wide.size(1) - 2 * have
            start = max(have - left, 0)
            end = have + length + min(right, have)
            return F.pad(wide[:, start:end], [max(left - have, 0), max(right - have, 0)],
                         value=5.0)

        def sites(self, wide: torch.Tensor) -> torch.Tensor:
            """[B, neighbour + L + neighbour] -> [B, L, 3] splice probabilities."""
            return self.splice(self.around(wide, self.flank, self.flank))

        def track(self, wide: torch.Tensor) -> torch.Tensor:
            """As AnnotationWithPromoterTss.track, with the window's neighbours: [B, L]."""
            batch, length = wide.size(0), wide.size(1) - 2 * self.neighbour
            blocks = (length + self.stride - 1) // self.stride
            half = self.context // 2
            padded = self.around(wide, half, half + blocks * self.stride - length)
            windows = padded[:, self.stride // 2:].unfold(1, self.context, self.stride)
            windows = windows[:, :blocks].reshape(batch * blocks, self.context)
            probabilities = self.promoter(windows).reshape(batch, blocks)
            if self.smooth_tss:
                return self.smoothed(probabilities)[:, :length]
            return probabilities.repeat_interleave(self.stride, dim=1)[:, :length]

        def smoothed(self, probabilities: torch.Tensor) -> torch.Tensor:
            """[B, blocks] promoter probabilities, one per block of `stride` bases -> [B,
            blocks * stride]: each base of block k takes 0.75 P_k + 0.25 P_n, P_n the block
            whose centre is nearer (the window's first and last blocks stand in for the blocks
            beyond them). The mean of the grid with its half-block-shifted copy, the copy's
            values interpolated between block centres: what the old reverse pass's second
            grid (offset by the request length mod 512) added, without running the promoter
            network for it."""
            stride = self.stride
            before = torch.cat([probabilities[:, :1], probabilities[:, :-1]], 1)
            after = torch.cat([probabilities[:, 1:], probabilities[:, -1:]], 1)
            first_half = (torch.arange(stride) < stride // 2).repeat(probabilities.size(1))
            nearer = torch.where(first_half, before.repeat_interleave(stride, dim=1),
                                 after.repeat_interleave(stride, dim=1))
            return 0.75 * probabilities.repeat_interleave(stride, dim=1) + 0.25 * nearer

        def tss_both(self, wide: torch.Tensor) -> torch.Tensor:
            """[R, neighbour + L + neighbour] -> [R, L, 2]: TSS plus, TSS minus."""
            reverse = torch.flip(self.complement[wide], [1])
            return torch.stack([self.track(wide), torch.flip(self.track(reverse), [1])], 2)

        def sites_both(self, wide: torch.Tensor) -> torch.Tensor:
            """[R, neighbour + L + neighbour] -> [R, L, 4]: donor plus, acceptor plus, donor
            minus, acceptor minus, as the two composites compute them."""
            reverse = torch.flip(self.complement[wide], [1])
            plus = self.sites(wide)
            minus = torch.flip(self.sites(reverse), [1])
            zero = torch.zeros_like(plus[:, :1, 0])
            donor_plus = torch.cat([zero, plus[:, :-1, self.donor]], 1)
            acceptor_plus = torch.cat([plus[:, 1:, self.acceptor], zero], 1)
            donor_minus = torch.cat([minus[:, 1:, self.donor], zero], 1)
            acceptor_minus = torch.cat([zero, minus[:, :-1, self.acceptor]], 1)
            return torch.stack([donor_plus, acceptor_plus, donor_minus, acceptor_minus], 2)

        def forward(self, ids: torch.Tensor, wanted: Optional[torch.Tensor] = None,
                    neighbours: Optional[torch.Tensor] = None
                    ) -> Tuple[torch.Tensor, torch.Tensor]:
            structure, types = self.annotation(ids)
            if neighbours is None:
                wide = F.pad(ids, [self.neighbour, self.neighbour], value=5.0)
            else:
                wide = torch.cat([neighbours[:, :self.neighbour], ids,
                                  neighbours[:, self.neighbour:]], 1)
            # One call site of tss_both and of sites_both: each one inlines its network twice
            # into the frozen graph (a second one doubled the worker's memory after loading).
            batch, length = ids.size(0), ids.size(1)
            rows = torch.arange(batch) if wanted is None else torch.nonzero(wanted != 0).flatten()
            tss_rows = torch.arange(batch) if self.tss_every_pass else rows
            tss = torch.zeros(batch, length, 2, dtype=structure.dtype)
            if tss_rows.numel() > 0:
                every = tss_rows.numel() == batch
                computed = self.tss_both(wide if every else wide.index_select(0, tss_rows))
                tss = computed if every else tss.index_copy(0, tss_rows, computed)
            splice_sites = torch.zeros(batch, length, 4, dtype=structure.dtype)
            if rows.numel() > 0:
                every = rows.numel() == batch
                computed = self.sites_both(wide if every else wide.index_select(0, rows))
                splice_sites = computed if every else splice_sites.index_copy(0, rows, computed)
            tracks = torch.cat([tss, splice_sites], 2)
            s = structure
            return torch.cat([s[:, :, :self.tss_plus], tracks[:, :, 0:1],
                              s[:, :, self.tss_plus + 1:self.tss_minus], tracks[:, :, 1:2],
                              s[:, :, self.tss_minus + 1:self.structure_channels],
                              tracks[:, :, 2:6]], 2), types

    model = StrandCompleteAnnotation().eval()
    return torch.jit.freeze(torch.jit.script(model))
