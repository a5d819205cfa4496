"""OpenSpliceAI's delta scores for the splice card's variant check (splice_variants.py), cheaply.

Scoring a variant the way the service does (splice_variants.score_variants on the converted
package) runs the five-model ensemble on one 15,000 bp REF window and one ALT window: about 37 s
a variant on the shared two cores, 6 hours for the card's 600. This module computes the same
numbers with the same weights (the published checkpoints in ../shared/data, loaded with
dnaserve_tools/openspliceai_reference.py; nothing of them is written into the repository) and
much less arithmetic, using only that every output of the network depends on the input bases
within +-flank (5,000) of it and nothing else:

- Only the context the scores need. A variant's DS reads positions variant +-distance, so the
  network is run with "valid" convolutions over those positions +-flank (10,101 bases instead of
  a 15,000 bp window whose other 4,899 scored positions are never read).
- One REF pass per junction. A positive and its two negatives lie within about 1 kb of each
  other on the same strand, so one REF pass over the union of their spans serves all three; its
  trunk activations after every residual block are kept.
- ALT only where it differs. Changing one base changes the trunk after block b only within
  +-(the receptive field of blocks 1..b) of it, and only positions within +-(distance + the
  receptive field of blocks b+1..) of the variant reach the scored ones. Each ALT block is
  computed over the intersection, from the kept REF activations with the ALT ones pasted in; the
  skip taps (1x1 convs summed into the head) read the REF trunk with the ALT part pasted in at
  the scored positions. The three ALTs of a junction run as one batch.

Every scored position therefore sees exactly the inputs and weights it sees in the service's
windows; only float rounding differs (tests/training/test_splice_variants.py checks the engine
against splice_variants.score_variants on a small network of the same architecture; the card
records the check on the real checkpoints). Scores are cached per variant in
~/.cache/dnaserve (outside the repository), so a re-run costs nothing.
"""

import hashlib
import json
import os
import time
from dataclasses import asdict
from typing import Callable, Dict, List, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F

from training import nets

CACHE_DIR = os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")),
                         "dnaserve", "openspliceai-variants")
# Part of the cache key: bump it when a change to this module changes the numbers.
ENGINE_VERSION = "1"
_ALT_IDS = {"A": 1, "C": 2, "G": 3, "T": 4}
_COMPLEMENT_ID = {1: 4, 2: 3, 3: 2, 4: 1}


class Stages:
    """One network of the OpenSpliceAI architecture (openspliceai_reference.SpliceNet or any
    module with its attribute names) as a list of valid-convolution steps: trims per block, and
    after which block each skip tap reads the trunk."""

    def __init__(self, net: torch.nn.Module):
        self.initial = net.initial_conv
        self.taps: List[Tuple[int, torch.nn.Module]] = [(0, net.initial_skip.conv)]
        self.blocks = []
        for unit in net.residual_units:
            if hasattr(unit, "conv1"):
                self.blocks.append(unit)
            else:
                self.taps.append((len(self.blocks), unit.conv))
        self.trims = [b.conv1.dilation[0] * (b.conv1.kernel_size[0] - 1) for b in self.blocks]
        self.flank = sum(self.trims)
        self.final = net.final_conv

    def block(self, index: int, x: torch.Tensor) -> torch.Tensor:
        """Block `index` on [B, C, w] with unpadded convs: [B, C, w - 2 * trim]."""
        b, trim = self.blocks[index], self.trims[index]
        h = F.conv1d(F.leaky_relu(b.batchnorm1(x), b.slope), b.conv1.weight, b.conv1.bias,
                     dilation=b.conv1.dilation[0])
        h = F.conv1d(F.leaky_relu(b.batchnorm2(h), b.slope), b.conv2.weight, b.conv2.bias,
                     dilation=b.conv2.dilation[0])
        return x[:, :, trim:x.shape[2] - trim] + h


def _onehot(ids: torch.Tensor) -> torch.Tensor:
    """Char ids [B, L] -> [B, 4, L] (A, C, G, T; PAD and N all zeros)."""
    table = torch.zeros(6, 4)
    table[1:5] = torch.eye(4)
    return F.embedding(ids.long(), table).transpose(1, 2)


def member_scores(net: Stages, ids: np.ndarray, sites: Sequence[int], alts: Sequence[int],
                  distance: int) -> Tuple[np.ndarray, np.ndarray]:
    """One network's softmax at sites[i] +- distance for the REF `ids` and, for each i, the same
    sequence with base sites[i] set to char id alts[i]: (REF [V, 2d+1, 3], ALT [V, 2d+1, 3]).
    Every site needs distance + flank bases of `ids` on each side."""
    flank = net.flank
    if min(sites) < distance + flank or max(sites) + distance + flank >= len(ids):
        raise ValueError("every site needs distance + flank bases either side")
    # REF, valid convolutions; trunk[s] covers positions [offset[s], offset[s] + its length).
    x = net.initial(_onehot(torch.from_numpy(ids[None])))
    trunk, offsets = [x], [0]
    for i in range(len(net.blocks)):
        x = net.block(i, x)
        trunk.append(x)
        offsets.append(offsets[-1] + net.trims[i])
    # ALT trunk of each site over the positions where it may differ and is needed: stage s
    # holds site +- half[s] (same width for every site, so the sites form one batch).
    alt_x = net.initial(_onehot(torch.tensor(list(alts))[:, None]))  # [V, C, 1]
    alt_trunk, half = [alt_x], [0]
    reach = 0
    for i, trim in enumerate(net.trims):
        reach += trim
        h = min(reach, distance + flank - reach)
        lo = [s - h - trim for s in sites]
        x_in = torch.stack([trunk[i][0, :, a - offsets[i]:a - offsets[i] + 2 * (h + trim) + 1]
                            for a in lo]).clone()
        prev = half[-1]
        start = h + trim - prev
        x_in[:, :, start:start + 2 * prev + 1] = alt_trunk[-1]
        alt_trunk.append(net.block(i, x_in))
        half.append(h)
    # Skip taps at the scored positions, REF and ALT summed in the same order as the network.
    def scored(stage: int, with_alt: bool) -> torch.Tensor:
        cols = torch.stack([trunk[stage][0, :, s - distance - offsets[stage]:
                                         s + distance + 1 - offsets[stage]] for s in sites])
        if with_alt:
            cols = cols.clone()
            h = min(half[stage], distance)
            piece = alt_trunk[stage][:, :, half[stage] - h:half[stage] + h + 1]
            cols[:, :, distance - h:distance + h + 1] = piece
        return cols
    out = []
    for with_alt in (False, True):
        skip = None
        for stage, conv in net.taps:
            tap = conv(scored(stage, with_alt))
            skip = tap if skip is None else skip + tap
        out.append(torch.softmax(net.final(skip), dim=1).transpose(1, 2).numpy())
    return out[0], out[1]


def ensemble_scores(nets_: Sequence[Stages], ids: np.ndarray, sites: Sequence[int],
                    alts: Sequence[int], distance: int) -> Tuple[np.ndarray, np.ndarray]:
    """The mean of the members' softmax (the published ensembling), REF and ALT."""
    refs, alts_ = [], []
    with torch.no_grad():
        for net in nets_:
            r, a = member_scores(net, ids, sites, alts, distance)
            refs.append(r)
            alts_.append(a)
    return np.mean(np.stack(refs), axis=0), np.mean(np.stack(alts_), axis=0)


def junction_groups(variants) -> List[List[int]]:
    """Indices of the variants that share one REF pass: a positive and the negatives after it
    (splice_variants.build_variants' order)."""
    groups: List[List[int]] = []
    for i, v in enumerate(variants):
        if v.label == 1 or not groups:
            groups.append([i])
        else:
            groups[-1].append(i)
    return groups


def group_scores(nets_: Sequence[Stages], genome_ids: np.ndarray, variants, distance: int,
                 classes: Sequence[str]) -> List[Dict[str, float]]:
    """DS_* of variants on one strand (a junction group) from one REF pass; the same sequence,
    orientation and scored positions as splice_variants.score_variants."""
    from training import splice_variants as sv
    strand = variants[0].strand
    if any(v.strand != strand for v in variants):
        raise ValueError("a junction group is scored on one strand")
    margin = distance + nets_[0].flank
    lo = min(v.pos for v in variants) - margin
    hi = max(v.pos for v in variants) + margin + 1
    ids = np.full(hi - lo, 5, dtype=np.int64)
    a, b = max(lo, 0), min(hi, len(genome_ids))
    ids[a - lo:b - lo] = genome_ids[a:b]
    if strand == "-":
        ids = np.ascontiguousarray(nets.reverse_complement_ids(ids))
        sites = [hi - 1 - v.pos for v in variants]
        alts = [_COMPLEMENT_ID[_ALT_IDS[v.alt]] for v in variants]
    else:
        sites = [v.pos - lo for v in variants]
        alts = [_ALT_IDS[v.alt] for v in variants]
    ref, alt = ensemble_scores(nets_, ids, sites, alts, distance)
    acc, don = classes.index("acceptor"), classes.index("donor")
    return [sv.delta_scores(ref[i][:, [acc, don]], alt[i][:, [acc, don]])
            for i in range(len(variants))]


def checkpoint_digest(paths: Sequence[str]) -> str:
    digest = hashlib.sha256()
    for path in paths:
        with open(path, "rb") as handle:
            digest.update(handle.read())
    digest.update(ENGINE_VERSION.encode())
    return digest.hexdigest()[:16]


def variant_key(v, distance: int) -> str:
    return json.dumps([asdict(v), distance], sort_keys=True)


def cached_scores(checkpoints: str, genome_ids: np.ndarray, variants, distance: int,
                  log: Callable[[str], None] = print) -> Tuple[List[Dict[str, float]], Dict]:
    """OpenSpliceAI's DS_* of `variants` (splice_variants.build_variants' order, whole junction
    groups), with the scoring seconds and 5-minute load average summed over the runs that
    computed them. Each group's scores are appended to a cache file of the checkpoints and this
    engine as soon as they exist, so an interrupted run resumes where it stopped."""
    from dnaserve_tools import openspliceai_reference as ref
    paths = ref.checkpoint_paths(checkpoints)
    os.makedirs(CACHE_DIR, exist_ok=True)
    cache = os.path.join(CACHE_DIR, f"scores-{checkpoint_digest(paths)}.jsonl")
    known: Dict[str, Dict] = {}
    if os.path.isfile(cache):
        with open(cache, encoding="utf-8") as handle:
            for line in handle:
                if line.strip():
                    row = json.loads(line)
                    known[row["key"]] = row
    groups = junction_groups(variants)
    todo = [g for g in groups if any(variant_key(variants[i], distance) not in known for i in g)]
    if todo:
        log(f"  scoring {sum(len(g) for g in todo)} variants ({len(todo)} junctions) with "
            f"OpenSpliceAI (cached in {cache})")
        members = [Stages(m) for m in ref.load_ensemble(checkpoints)]
        with open(cache, "a", encoding="utf-8") as handle:
            for n, group in enumerate(todo):
                t0 = time.monotonic()
                chosen = [variants[i] for i in group]
                scores = group_scores(members, genome_ids, chosen, distance, ref.CLASSES)
                seconds = (time.monotonic() - t0) / len(group)
                load = os.getloadavg()[1]
                for v, s in zip(chosen, scores):
                    row = {"key": variant_key(v, distance), "scores": s, "seconds": seconds,
                           "load": load}
                    known[row["key"]] = row
                    handle.write(json.dumps(row) + "\n")
                handle.flush()
                if (n + 1) % 10 == 0:
                    log(f"    {n + 1}/{len(todo)} junctions")
    rows = [known[variant_key(v, distance)] for v in variants]
    return [r["scores"] for r in rows], {
        "seconds": float(sum(r["seconds"] for r in rows)),
        # a junction's wall time (median: robust to a run paused for someone's benchmark)
        "junction_seconds": float(np.median([r["seconds"] for r in rows])
                                  * len(rows) / len(groups)),
        "load": float(np.mean([r["load"] for r in rows])), "cache": cache}
