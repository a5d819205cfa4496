"""Evaluation metrics, written out with numpy (Debian's python3 has no scikit-learn).

Scores are floats, labels 0/1; higher scores mean "more likely positive". Ties are handled the
way scikit-learn handles them (AUROC: average ranks; average precision: one step per distinct
score), so the figures compare with published ones.
"""

from typing import Dict, Sequence

import numpy as np


def _as_arrays(scores: Sequence[float], labels: Sequence[int]):
    s = np.asarray(scores, dtype=np.float64).ravel()
    y = np.asarray(labels, dtype=np.int64).ravel()
    if s.shape != y.shape:
        raise ValueError(f"{s.size} scores but {y.size} labels")
    return s, y


def auroc(scores: Sequence[float], labels: Sequence[int]) -> float:
    """Area under the ROC curve (Mann-Whitney U with average ranks); nan without both classes."""
    s, y = _as_arrays(scores, labels)
    positives = int(y.sum())
    negatives = y.size - positives
    if positives == 0 or negatives == 0:
        return float("nan")
    order = np.argsort(s, kind="mergesort")
    sorted_scores = s[order]
    ranks = np.empty(s.size, dtype=np.float64)
    # Average rank (1-based) over each run of equal scores.
    boundaries = np.flatnonzero(np.diff(sorted_scores)) + 1
    starts = np.concatenate(([0], boundaries))
    ends = np.concatenate((boundaries, [s.size]))
    run_rank = (starts + ends + 1) / 2.0
    ranks[order] = np.repeat(run_rank, ends - starts)
    rank_sum = ranks[y == 1].sum()
    return float((rank_sum - positives * (positives + 1) / 2.0) / (positives * negatives))


def average_precision(scores: Sequence[float], labels: Sequence[int]) -> float:
    """Area under the precision-recall curve as a step sum (scikit-learn's average precision)."""
    s, y = _as_arrays(scores, labels)
    positives = int(y.sum())
    if positives == 0:
        return float("nan")
    order = np.argsort(-s, kind="mergesort")
    s, y = s[order], y[order]
    # One threshold per distinct score: the last index of each run of equal scores.
    last = np.concatenate((np.flatnonzero(np.diff(s)), [s.size - 1]))
    tp = np.cumsum(y)[last]
    predicted = last + 1
    precision = tp / predicted
    recall = tp / positives
    previous_recall = np.concatenate(([0.0], recall[:-1]))
    return float(np.sum((recall - previous_recall) * precision))


def topk_accuracy(scores: Sequence[float], labels: Sequence[int]) -> float:
    """SpliceAI's top-k accuracy: with k the number of true sites, the fraction of the k
    highest-scoring positions that are true sites."""
    s, y = _as_arrays(scores, labels)
    k = int(y.sum())
    if k == 0:
        return float("nan")
    top = np.argpartition(-s, k - 1)[:k]
    return float(y[top].sum() / k)


def rate_at(scores: Sequence[float], threshold: float) -> float:
    """Fraction of scores at or above `threshold`."""
    s = np.asarray(scores, dtype=np.float64).ravel()
    return float((s >= threshold).mean()) if s.size else float("nan")


def binary_report(prefix: str, scores: Sequence[float], labels: Sequence[int],
                  threshold: float = 0.5) -> Dict[str, float]:
    """AUROC, average precision, and the positive and negative call rates at `threshold`."""
    s, y = _as_arrays(scores, labels)
    return {
        f"{prefix}auroc": auroc(s, y),
        f"{prefix}auprc": average_precision(s, y),
        f"{prefix}tpr_at_{threshold:g}": rate_at(s[y == 1], threshold),
        f"{prefix}fpr_at_{threshold:g}": rate_at(s[y == 0], threshold),
    }
