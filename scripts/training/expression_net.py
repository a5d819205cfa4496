"""The expression model: (char ids [B, 9198], description byte ids [B, D]) -> [B] ln(TPM + 1).

    prediction = level(x) + spread(x) * sum_c w_c(description) * (m_c + sum_k u_k(x) V[k, c])

- x: normalised k-mer spectra of the TSS window (k-mer counts over a few TSS-relative regions,
  divided by the region's k-mer total) and the promoter's predicted TF binding
  (`PromoterChromatin`: the chromatin-human network on 1,000 bp windows tiling TSS +-2 kb, mean
  and max of ln(p + floor) per learned (cell line, TF) pair), standardised with the training
  genes' mean and spread.
- level(x) (the gene's mean over the contexts), ln spread(x) (its across-context standard
  deviation) and the loadings u(x) are linear in x (ridge regressions, fitted in closed form by
  scripts/training/expression.py; the loadings are a fixed mix of one ridge on the spectra and
  one on the binding features).
- m (the training genes' mean scaled within-gene deviation per context) and V (the top K
  principal components of the training genes' within-gene profiles, centred and scaled to unit
  spread) are per-context parameters from the training matrix: they carry how the 56 contexts
  differ from each other.
- w(description): `ContextMatcher`, the character-trigram rule of expression_context.py; the best
  context (ties averaged), or all contexts equally when the best similarity is below the
  threshold.
The output is clamped at 0 (ln(TPM + 1) >= 0).
"""

from typing import List, Sequence

import torch
from torch import nn

WINDOW_BP = 9198


class KmerSpectrum(nn.Module):
    """Normalised k-mer counts of bases [lo, hi) of the window (A, C, G, T are ids 1..4; a k-mer
    touching any other id is skipped) -> [B, 4**k]."""

    def __init__(self, lo: int, hi: int, k: int):
        super().__init__()
        self.lo, self.hi, self.k = lo, hi, k
        self.size = 4 ** k

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        piece = ids[:, self.lo:self.hi]
        valid = (piece >= 1) & (piece <= 4)
        base = (piece - 1).clamp(0, 3)
        n = self.hi - self.lo - self.k + 1
        code = torch.zeros_like(base[:, :n])
        ok = torch.ones_like(valid[:, :n])
        for j in range(self.k):
            code = code * 4 + base[:, j:j + n]
            ok = ok & valid[:, j:j + n]
        counts = torch.zeros(ids.size(0), self.size, dtype=torch.float32)
        counts = counts.scatter_add(1, code, ok.to(torch.float32))
        return counts / counts.sum(dim=1, keepdim=True).clamp(min=1.0)


class ContextMatcher(nn.Module):
    """Description byte ids [B, D] (byte + 1, 0 = padding) -> context weights [B, C] by the
    trigram rule of expression_context.py (stored as a sparse wording matrix)."""

    def __init__(self, vocab: Sequence[int], entry_wording: Sequence[int],
                 entry_vocab: Sequence[int], entry_value: Sequence[float],
                 per_context: Sequence[Sequence[int]], threshold: float):
        super().__init__()
        widest = max(len(w) for w in per_context)
        table = torch.full((len(per_context), widest), -1, dtype=torch.int64)
        for c, wordings in enumerate(per_context):
            table[c, :len(wordings)] = torch.tensor(list(wordings), dtype=torch.int64)
        self.register_buffer("vocab", torch.tensor(list(vocab), dtype=torch.int64))
        self.register_buffer("entry_wording", torch.tensor(list(entry_wording), dtype=torch.int64))
        self.register_buffer("entry_vocab", torch.tensor(list(entry_vocab), dtype=torch.int64))
        self.register_buffer("entry_value", torch.tensor(list(entry_value), dtype=torch.float64))
        self.register_buffer("wordings_of", table.clamp(min=0))
        self.register_buffer("no_wording", table < 0)
        self.wordings = sum(len(w) for w in per_context)
        self.threshold = float(threshold)

    def similarities(self, row: torch.Tensor) -> torch.Tensor:
        """One description's byte ids [D] -> per-context similarity [C] (float64)."""
        data = row[row > 0] - 1
        data = torch.where((data >= 65) & (data <= 90), data + 32, data)
        keep = ((data >= 97) & (data <= 122)) | ((data >= 48) & (data <= 57))
        space = torch.full([1], 32, dtype=torch.int64)
        text = torch.cat([space, torch.where(keep, data, torch.full_like(data, 32)), space])
        codes = text[:-2] * 65536 + text[1:-1] * 256 + text[2:]
        codes = codes[codes != (32 * 65536 + 32 * 256 + 32)]
        contexts = self.wordings_of.size(0)
        if codes.numel() == 0:
            return torch.zeros(contexts, dtype=torch.float64)
        unique, counts = torch.unique(codes, return_counts=True)
        counts = counts.to(torch.float64)
        norm = torch.sqrt((counts * counts).sum())
        where = torch.searchsorted(self.vocab, unique).clamp(max=self.vocab.numel() - 1)
        hit = self.vocab[where] == unique
        query = torch.zeros(self.vocab.numel(), dtype=torch.float64)
        query[where[hit]] = counts[hit]
        per_wording = torch.zeros(self.wordings, dtype=torch.float64).index_add(
            0, self.entry_wording, self.entry_value * query[self.entry_vocab]) / norm
        return per_wording[self.wordings_of].masked_fill(self.no_wording, -1.0).max(dim=1).values

    def forward(self, text: torch.Tensor) -> torch.Tensor:
        rows: List[torch.Tensor] = []
        for b in range(text.size(0)):
            sims = self.similarities(text[b])
            best = sims.max()
            if bool(best >= self.threshold):
                chosen = (sims >= best - 1e-9).to(torch.float32)
            else:
                chosen = torch.ones(sims.size(0), dtype=torch.float32)
            rows.append(chosen / chosen.sum())
        return torch.stack(rows)


class PromoterChromatin(nn.Module):
    """Char ids [B, L] -> [B, 2P]: a chromatin network (the chromatin-human package's frozen
    module, char ids [N, width] -> [N, 919] probabilities) run on `count` windows of `width`
    bases starting at `first` and every `step` bases after it; of its outputs the P `columns`
    (one per learned (cell line, TF) pair), as ln(p + floor), averaged and maximised over the
    windows. With `placements` > 1 the windows are that many interleaved placements (window i
    belongs to placement i % placements): the mean and the max are taken within each
    placement and then averaged over the placements. The network runs on at most `chunk`
    windows per call: for 1,000 bp windows, 40 in one call made activations above glibc's
    largest dynamic mmap threshold (32 MB), so every forward mapped, faulted in and unmapped
    them (40 windows took 22 ms against 4.1 ms for 20; 9.7 ms with the threshold lifted)."""

    def __init__(self, chromatin: nn.Module, first: int, count: int, step: int, width: int,
                 columns: Sequence[int], floor: float, placements: int = 1, chunk: int = 20):
        super().__init__()
        if placements < 1 or count % placements != 0:
            raise ValueError(f"{count} windows do not split into {placements} placements")
        if chunk < 1:
            raise ValueError(f"chunk must be positive, not {chunk}")
        self.chromatin = chromatin
        self.first, self.count, self.step, self.width = first, count, step, width
        self.placements = int(placements)
        self.chunk = int(chunk)
        self.register_buffer("columns", torch.tensor(list(columns), dtype=torch.int64))
        self.floor = float(floor)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        batch = ids.size(0)
        span = ids[:, self.first:self.first + (self.count - 1) * self.step + self.width]
        windows = span.unfold(1, self.width, self.step).reshape(batch * self.count, self.width)
        pieces: List[torch.Tensor] = []
        for start in range(0, windows.size(0), self.chunk):
            pieces.append(self.chromatin(windows[start:start + self.chunk])
                          .index_select(1, self.columns))
        probabilities = torch.cat(pieces)
        x = torch.log(probabilities.reshape(batch, self.count // self.placements,
                                            self.placements, -1) + self.floor)
        return torch.cat([x.mean(dim=1).mean(dim=1), x.amax(dim=1).mean(dim=1)], dim=1)


class ExpressionModel(nn.Module):
    def __init__(self, regions: Sequence[Sequence[int]], chromatin: PromoterChromatin,
                 feature_mean, feature_scale, weights, bias, components, context_mean,
                 matcher: ContextMatcher):
        """regions: (lo, hi, k) per spectrum; chromatin: the promoter's predicted TF binding
        (features after the spectra); weights [F, 2 + K] and bias [2 + K] map standardised
        features to (level, ln spread, loadings); components [K, C]; context_mean [C]."""
        super().__init__()
        self.spectra = nn.ModuleList([KmerSpectrum(lo, hi, k) for lo, hi, k in regions])
        self.chromatin = chromatin
        as_tensor = lambda a: torch.as_tensor(a, dtype=torch.float32).clone()  # noqa: E731
        self.register_buffer("feature_mean", as_tensor(feature_mean))
        self.register_buffer("feature_scale", as_tensor(feature_scale))
        self.register_buffer("weights", as_tensor(weights))
        self.register_buffer("bias", as_tensor(bias))
        self.register_buffer("components", as_tensor(components))
        self.register_buffer("context_mean", as_tensor(context_mean))
        self.matcher = matcher

    def features(self, ids: torch.Tensor) -> torch.Tensor:
        parts = [spectrum(ids) for spectrum in self.spectra]
        parts.append(self.chromatin(ids))
        return (torch.cat(parts, dim=1) - self.feature_mean) / self.feature_scale

    def profiles(self, ids: torch.Tensor) -> torch.Tensor:
        """[B, C]: the prediction in every training context."""
        out = self.features(ids) @ self.weights + self.bias
        spread = torch.exp(out[:, 1:2])
        return out[:, :1] + spread * (self.context_mean + out[:, 2:] @ self.components)

    def forward(self, ids: torch.Tensor, text: torch.Tensor) -> torch.Tensor:
        weights = self.matcher(text)
        return (self.profiles(ids) * weights).sum(dim=1).clamp(min=0.0)
