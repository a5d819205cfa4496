"""Torch building blocks shared by the training modules: input encodings that take the worker's
token ids as they are, a small transformer encoder, the training loop, export to TorchScript, and
the tokenizers re-implemented in numpy so evaluation feeds a package exactly what the worker would.

Worker token ids (worker/README.md, "Tokenizers"):
  char                 PAD=0 A=1 C=2 G=3 T=4 N=5
  kmer (builtin)       PAD=0, UNK=1 (a k-mer containing N), 2 + the k-mer read in base 4 (A=0..T=3)
"""

import math
import time
import warnings
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

# torch 1.13 warns about TransformerEncoderLayer's unused `batch_first` constant when scripting.
warnings.filterwarnings("ignore", message=".*batch_first.*ScriptModule constants.*")
warnings.filterwarnings("ignore", message=".*enable_nested_tensor.*")

# ASCII -> char id; anything outside ACGT (either case) is N, as in the worker.
_CHAR_LUT = np.full(256, 5, dtype=np.uint8)
for _i, _b in enumerate("ACGT"):
    _CHAR_LUT[ord(_b)] = _i + 1
    _CHAR_LUT[ord(_b.lower())] = _i + 1
# Char id -> complementary char id (PAD stays PAD, N stays N).
_COMPLEMENT_IDS = np.array([0, 4, 3, 2, 1, 5], dtype=np.uint8)


def char_ids(seq: str) -> np.ndarray:
    """Char-tokenizer ids of a sequence, uint8."""
    return _CHAR_LUT[np.frombuffer(seq.encode("ascii", "replace"), dtype=np.uint8)]


def reverse_complement_ids(ids: np.ndarray) -> np.ndarray:
    """Char ids of the reverse complement (works on the last axis)."""
    return _COMPLEMENT_IDS[ids[..., ::-1]]


def kmer_ids(ids: np.ndarray, k: int, stride: int = 1) -> np.ndarray:
    """Builtin k-mer ids from char ids ([..., L] -> [..., (L - k) // stride + 1]), int64."""
    ids = np.asarray(ids)
    length = ids.shape[-1]
    if length < k:
        return np.zeros(ids.shape[:-1] + (0,), dtype=np.int64)
    count = length - k + 1
    base = ids.astype(np.int64) - 1            # A=0 .. T=3, N=4, PAD=-1
    bad = (base < 0) | (base > 3)
    value = np.zeros(ids.shape[:-1] + (count,), dtype=np.int64)
    any_bad = np.zeros(ids.shape[:-1] + (count,), dtype=bool)
    for j in range(k):
        value = value * 4 + np.clip(base[..., j:j + count], 0, 3)
        any_bad |= bad[..., j:j + count]
    out = np.where(any_bad, 1, value + 2)
    return out[..., ::stride].astype(np.int64)


def tokenize(tokenizer: Dict, ids: np.ndarray) -> np.ndarray:
    """Model input for windows of char ids under a manifest tokenizer (char or builtin k-mer)."""
    kind = tokenizer["type"]
    if kind == "char":
        return ids.astype(np.int64)
    if kind == "kmer" and tokenizer.get("convention", "builtin") == "builtin":
        return kmer_ids(ids, tokenizer["k"], tokenizer["stride"])
    raise ValueError(f"tokenizer {tokenizer} is not one the training code produces")


from dnaserve_tools.make_models import sinusoid_table  # noqa: E402  (one positional table for every model)


class OneHot(nn.Module):
    """Char ids [B, L] -> one-hot [B, 4, L]; PAD and N are all-zero columns (no information)."""

    def __init__(self):
        super().__init__()
        table = torch.zeros(6, 4)
        table[1:5] = torch.eye(4)
        self.register_buffer("table", table)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return F.embedding(ids, self.table).transpose(1, 2)


class KmerEmbedding(nn.Module):
    """Builtin k-mer ids [B, T] -> embeddings [B, d, T] (PAD and UNK learnable-free zeros)."""

    def __init__(self, k: int, dim: int):
        super().__init__()
        self.embed = nn.Embedding(4 ** k + 2, dim, padding_idx=0)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.embed(ids).transpose(1, 2)


def make_encoder(d_model: int, layers: int, heads: int, dropout: float) -> nn.TransformerEncoder:
    layer = nn.TransformerEncoderLayer(d_model, heads, dim_feedforward=2 * d_model,
                                       dropout=dropout, batch_first=True, norm_first=True)
    # enable_nested_tensor=False keeps output shapes equal to input shapes (toolchain notes).
    return nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)


class ConvTransformerTrunk(nn.Module):
    """[B, C_in, L] features -> [B, 2 * d] pooled summary.

    Two conv + max-pool stages shorten the sequence (pools[0] x pools[1]), then a small pre-norm
    transformer encoder attends over the remaining positions; mean and max pooling follow.
    """

    def __init__(self, in_channels: int, channels: int, d_model: int, kernels: Tuple[int, int],
                 pools: Tuple[int, int], layers: int, heads: int, max_positions: int,
                 dropout: float):
        super().__init__()
        self.conv1 = nn.Conv1d(in_channels, channels, kernels[0], padding=kernels[0] // 2)
        self.conv2 = nn.Conv1d(channels, d_model, kernels[1], padding=kernels[1] // 2)
        self.pool1, self.pool2 = pools
        self.register_buffer("positions", sinusoid_table(max_positions, d_model))
        self.encoder = make_encoder(d_model, layers, heads, dropout)
        self.norm = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.max_pool1d(F.relu(self.conv1(x)), self.pool1)
        x = F.max_pool1d(F.relu(self.conv2(x)), self.pool2)
        h = x.transpose(1, 2)
        h = h + self.positions[: h.size(1)]
        h = self.norm(self.encoder(self.dropout(h)))
        return torch.cat([h.mean(dim=1), h.max(dim=1).values], dim=1)


class LogitView(nn.Module):
    """Training view of a net with a `logits` method: losses on logits are numerically safer
    than on the probabilities the exported module returns."""

    def __init__(self, net: nn.Module):
        super().__init__()
        self.net = net

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.net.logits(ids)


# ---------------------------------------------------------------------------------------------
# Training and export


def load_package(package_dir: str):
    """(manifest dict, TorchScript module in eval mode) of a package directory."""
    import json
    import os
    with open(os.path.join(package_dir, "manifest.json"), encoding="utf-8") as handle:
        manifest = json.load(handle)
    module = torch.jit.load(os.path.join(package_dir, manifest["weights"]))
    module.eval()
    return manifest, module


def set_threads(n: int = 2) -> None:
    torch.set_num_threads(n)


def parameter_count(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def export(model: nn.Module, example: Tuple[torch.Tensor, ...], atol: float = 1e-4):
    """Scripted, frozen module of `model` (eval mode), checked against eager on `example`."""
    model = model.eval()
    with torch.no_grad():
        eager = model(*example)
        scripted = torch.jit.freeze(torch.jit.script(model))
        exported = scripted(*example)
    if eager.shape != exported.shape or not torch.allclose(eager, exported, atol=atol):
        raise RuntimeError("TorchScript output differs from eager")
    return scripted


def time_forward(module, example: Tuple[torch.Tensor, ...], repeats: int = 20) -> float:
    """Median CPU milliseconds of one forward pass on one thread (after a warm-up).

    Thread CPU time, not wall time: on a shared machine other processes inflate wall time, while
    the work of one single-threaded forward pass is what the 50 ms target is about."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.no_grad():
            for _ in range(3):
                module(*example)
            times = []
            for _ in range(repeats):
                started = time.thread_time()
                module(*example)
                times.append((time.thread_time() - started) * 1000.0)
    finally:
        torch.set_num_threads(previous)
    return float(np.median(times))


def predict_batches(module, inputs: np.ndarray, batch: int = 64) -> np.ndarray:
    """Runs `module` over rows of `inputs` (int64) in batches; concatenated numpy output."""
    outs = []
    with torch.no_grad():
        for start in range(0, len(inputs), batch):
            x = torch.from_numpy(np.ascontiguousarray(inputs[start:start + batch]))
            outs.append(module(x).float().numpy())
    return np.concatenate(outs) if outs else np.zeros((0,))


class Log:
    """Progress lines on stderr, prefixed with the model id and the elapsed time."""

    def __init__(self, name: str):
        self.name = name
        self.started = time.monotonic()
        self.cpu_started = time.process_time()

    def __call__(self, message: str) -> None:
        import sys
        print(f"[{self.name} {time.monotonic() - self.started:7.1f}s wall "
              f"{self.cpu() :7.1f}s cpu] {message}", file=sys.stderr, flush=True)

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def cpu(self) -> float:
        """CPU seconds of this process (all threads) since the log started: on a shared machine
        the honest measure of the work, wall time being inflated by other processes."""
        return time.process_time() - self.cpu_started


def fit(model: nn.Module, epoch_data: Callable[[int], Tuple[np.ndarray, np.ndarray]],
        loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
        to_input: Callable[[np.ndarray], torch.Tensor], epochs: int, lr: float, batch: int,
        rng: np.random.Generator, log: Log,
        validate: Optional[Callable[[nn.Module], float]] = None,
        weight_decay: float = 1e-2) -> Dict[str, float]:
    """Trains `model` with AdamW and a one-cycle learning rate.

    `epoch_data(epoch)` returns (inputs, targets) of one epoch; `to_input` turns a batch of input
    rows into the model's tensor (e.g. char ids -> k-mer ids). When `validate` is given it runs
    after each epoch on the validation slice (never the held-out region) and the best epoch's
    weights are kept. Returns {"epochs": ..., "best_epoch": ..., "validation": ...}.
    """
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    inputs, targets = epoch_data(0)
    steps = epochs * ((len(inputs) + batch - 1) // batch)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=lr, total_steps=steps + 1,
                                                   pct_start=0.15)
    best = (-math.inf, -1, None)
    for epoch in range(epochs):
        if epoch > 0:
            inputs, targets = epoch_data(epoch)
        order = rng.permutation(len(inputs))
        model.train()
        total, seen = 0.0, 0
        for start in range(0, len(order), batch):
            rows = order[start:start + batch]
            if len(rows) < 2:
                continue
            x = to_input(inputs[rows])
            y = torch.from_numpy(np.ascontiguousarray(targets[rows]))
            loss = loss_fn(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            if schedule.last_epoch < steps:
                schedule.step()
            total += float(loss) * len(rows)
            seen += len(rows)
        model.eval()
        score = validate(model) if validate else -float(epoch)
        if validate is None or score > best[0]:
            best = (score, epoch, {k: v.detach().clone() for k, v in model.state_dict().items()})
        log(f"epoch {epoch + 1}/{epochs}: loss {total / max(seen, 1):.4f}"
            + (f", validation {score:.4f}" if validate else ""))
    if best[2] is not None and validate is not None:
        model.load_state_dict(best[2])
    model.eval()
    return {"epochs": epochs, "best_epoch": best[1] + 1,
            "validation": best[0] if validate else float("nan")}
