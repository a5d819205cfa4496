"""Dinucleotide-preserving shuffle (Altschul & Erickson 1985), the usual composition-matched
negative set for promoter classifiers whose data has positives only.

The sequence is read as a walk on a multigraph (one edge per adjacent pair of letters). A random
Eulerian walk with the same first letter uses every edge once, so the shuffled sequence has
exactly the same first letter, letter counts and dinucleotide counts as the input. The walk is
drawn by the classic method: a random arborescence of "last exits" towards the final letter
(Wilson-style random walk), then every other exit list shuffled.
"""

import random
from typing import Dict, List


def dinucleotide_shuffle(seq: str, rng: random.Random) -> str:
    if len(seq) <= 2:
        return seq
    letters = sorted(set(seq))
    exits: Dict[str, List[str]] = {c: [] for c in letters}
    for a, b in zip(seq, seq[1:]):
        exits[a].append(b)
    last = seq[-1]
    # Random arborescence rooted at `last`: for every other letter with exits, the exit taken
    # last must lead (eventually) to `last`, or the walk would strand edges.
    in_tree = {last}
    last_exit: Dict[str, str] = {}
    for start in letters:
        node = start
        while node not in in_tree:
            last_exit[node] = rng.choice(exits[node])
            node = last_exit[node]
        node = start
        while node not in in_tree:
            in_tree.add(node)
            node = last_exit[node]
    lists: Dict[str, List[str]] = {}
    for c in letters:
        edges = list(exits[c])
        if c in last_exit:
            edges.remove(last_exit[c])
            rng.shuffle(edges)
            edges.append(last_exit[c])
        else:
            rng.shuffle(edges)
        lists[c] = edges
    out = [seq[0]]
    position = {c: 0 for c in letters}
    node = seq[0]
    for _ in range(len(seq) - 1):
        nxt = lists[node][position[node]]
        position[node] += 1
        out.append(nxt)
        node = nxt
    return "".join(out)
