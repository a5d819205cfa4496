"""Description matching: which training context (Roadmap epigenome) a free-text description
resembles, by character-trigram cosine similarity against the wordings each context was trained
with. The same rule runs in three places and must stay identical:

- here (`trigram_counts`, `similarities`, `match`): the card's figures and the package manifest;
- inside the exported model (`expression_net.ContextMatcher`): the prediction is made for the
  best-matching context;
- in the worker (worker/tasks/description_match.cc): the `description_match` it reports.

Rule: ASCII letters lower-cased, every byte outside [a-z0-9] becomes a space, one space is added
at each end, and the text's trigrams (three consecutive bytes; three spaces are skipped) are
counted. A context's similarity is the largest cosine between the description's trigram counts
and those of one of its wordings. The description is `matched` when the best similarity is at
least THRESHOLD; below it the model predicts the mean over all contexts and the response says
matched = false.
"""

import math
from collections import Counter
from typing import Dict, List, Sequence, Tuple

METHOD = "char-trigram-cosine"
# "liver" against the wording "Liver" scores 1.0, "heart" against "Fetal Heart" 0.67, an
# unrelated word such as "xylophone" about 0.1 at most: 0.4 keeps one shared word of a short
# description a match and rejects text that merely shares a few letters.
THRESHOLD = 0.4
SPACE = 32


def normalise(data: bytes) -> bytes:
    out = bytearray([SPACE])
    for c in data:
        if 65 <= c <= 90:
            c += 32
        out.append(c if (97 <= c <= 122 or 48 <= c <= 57) else SPACE)
    out.append(SPACE)
    return bytes(out)


def trigram_code(a: int, b: int, c: int) -> int:
    return (a << 16) | (b << 8) | c


ALL_SPACES = trigram_code(SPACE, SPACE, SPACE)


def trigram_counts(text) -> Counter:
    data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    n = normalise(data)
    codes = (trigram_code(n[i], n[i + 1], n[i + 2]) for i in range(len(n) - 2))
    return Counter(code for code in codes if code != ALL_SPACES)


def cosine(a: Counter, b: Counter) -> float:
    na = math.sqrt(sum(v * v for v in a.values()))
    nb = math.sqrt(sum(v * v for v in b.values()))
    if na == 0 or nb == 0:
        return 0.0
    return sum(v * b.get(k, 0) for k, v in a.items()) / (na * nb)


def similarities(description, contexts: Sequence[Sequence[str]]) -> List[float]:
    """Per context (a list of its wordings): the best wording's cosine with `description`."""
    query = trigram_counts(description)
    return [max((cosine(query, trigram_counts(w)) for w in wordings), default=0.0)
            for wordings in contexts]


def match(description, ids: Sequence[str], names: Sequence[str],
          contexts: Sequence[Sequence[str]], threshold: float = THRESHOLD,
          top: int = 3) -> Dict:
    """The `description_match` object the worker reports: best first, ties in context order."""
    sims = similarities(description, contexts)
    order = sorted(range(len(sims)), key=lambda i: (-sims[i], i))
    return {"matched": bool(sims and sims[order[0]] >= threshold),
            "contexts": [{"id": ids[i], "name": names[i], "similarity": sims[i]}
                         for i in order[:top]]}


def sparse_wordings(contexts: Sequence[Sequence[str]]) -> Tuple[List[int], List[int], List[int],
                                                                 List[float], List[List[int]]]:
    """The wordings as the model stores them: (vocabulary of trigram codes, sorted; per entry
    its wording and vocabulary index and the wording's L2-normalised count; per context the
    indices of its wordings)."""
    counted = [trigram_counts(w) for wordings in contexts for w in wordings]
    vocab = sorted({code for c in counted for code in c})
    where = {code: i for i, code in enumerate(vocab)}
    entry_wording, entry_vocab, entry_value = [], [], []
    for w, counts in enumerate(counted):
        norm = math.sqrt(sum(v * v for v in counts.values())) or 1.0
        for code, value in sorted(counts.items()):
            entry_wording.append(w)
            entry_vocab.append(where[code])
            entry_value.append(value / norm)
    per_context, start = [], 0
    for wordings in contexts:
        per_context.append(list(range(start, start + len(wordings))))
        start += len(wordings)
    return vocab, entry_wording, entry_vocab, entry_value, per_context
