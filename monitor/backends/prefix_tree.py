"""Token sequences laid out as one prefix tree, so that a shared prefix is computed once.

The two sentences of a benchmark pair agree up to their first differing token (22% of
the tokens of the four Indian-BhED axes), and every sequence a metric asks for starts
with the same BOS. Laid out as a tree, each distinct prefix is one node: a causal model
fed the nodes in one row, with each node attending to itself and its ancestors only
(``subtree_ends``) and positioned at its depth, computes for every node exactly the
hidden state it has in each sequence through it. A shared prefix's keys and values are
thus computed once and read by every continuation, which is what a key/value cache of
the prefix would give, in a single forward pass and without padding.

A log-prob needs the logits at a node's parent only, so only nodes with a child are fed
to the model (``fed_nodes``): a leaf, the last token of a sequence, is a target and
nothing reads its hidden state. Every fed node needs its logits, and a branching node's
one logits row serves all of its children.

Pure bookkeeping (numpy, no model): which nodes, at which positions, who sees whom.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """Number of leading ids ``a`` and ``b`` share."""
    n = min(len(a), len(b))
    k = 0
    while k < n and a[k] == b[k]:
        k += 1
    return k


@dataclass(frozen=True)
class PrefixTree:
    """Nodes in depth-first pre-order (a parent always precedes its children).

    ``paths[s]`` lists sequence ``s``'s nodes, root first: ``tokens[paths[s]]`` is the
    sequence. The layout depends only on the set of sequences given (they are sorted
    first), so the same sequences always give the same forward pass.
    """

    tokens: np.ndarray  # int64 [n_nodes]
    depth: np.ndarray  # int64 [n_nodes]: position id of the node in its sequences
    parent: np.ndarray  # int64 [n_nodes]: parent node, -1 for a root
    paths: list[np.ndarray]  # per input sequence, in input order

    @classmethod
    def of(cls, sequences: Sequence[Sequence[int]]) -> PrefixTree:
        seqs = [tuple(int(t) for t in s) for s in sequences]
        tokens: list[int] = []
        depth: list[int] = []
        parent: list[int] = []
        paths: list[np.ndarray] = [np.zeros(0, dtype=np.int64)] * len(seqs)
        path: list[int] = []  # nodes of the previous sequence in sorted order
        previous: tuple[int, ...] = ()
        # In sorted order, the longest prefix a sequence shares with any earlier one is
        # the one it shares with its predecessor, so new nodes are exactly its tail.
        for i in sorted(range(len(seqs)), key=seqs.__getitem__):
            seq = seqs[i]
            del path[common_prefix(previous, seq) :]
            for d in range(len(path), len(seq)):
                parent.append(path[-1] if path else -1)
                path.append(len(tokens))
                tokens.append(seq[d])
                depth.append(d)
            paths[i] = np.asarray(path[: len(seq)], dtype=np.int64)
            previous = seq
        return cls(
            tokens=np.asarray(tokens, dtype=np.int64),
            depth=np.asarray(depth, dtype=np.int64),
            parent=np.asarray(parent, dtype=np.int64),
            paths=paths,
        )

    def __len__(self) -> int:
        return len(self.tokens)

    def fed_nodes(self) -> np.ndarray:
        """Nodes with a child, ascending (so still in pre-order, ancestors first): the
        ones the model must see, and exactly the ones whose logits some log-prob needs."""
        return np.unique(self.parent[self.parent >= 0])

    def tail_nodes(self, tails: Sequence[int]) -> np.ndarray:
        """Nodes whose log-prob some sequence reads, ascending: the last ``tails[s]`` nodes
        of sequence ``s`` (``0 <= tails[s] < len(paths[s])``). With every sequence's
        whole tail (n-1) that is every non-root node."""
        need = np.zeros(len(self.tokens), dtype=bool)
        for path, tail in zip(self.paths, tails, strict=True):
            if tail:
                need[path[len(path) - tail :]] = True
        return np.flatnonzero(need)

    def subtree_ends(self, nodes: np.ndarray) -> np.ndarray:
        """Among ``nodes`` (ascending, closed under taking parents), for each ``i`` the
        index one past ``nodes[i]``'s last descendant: in pre-order a node's descendants
        follow it contiguously, so ``nodes[j]`` is ``nodes[i]`` or one of its ancestors
        exactly when ``j <= i < ends[j]``.

        Why: the attention mask is then two comparisons of an ``[n]`` vector against
        itself, which the model's device builds (``monitor.backends.hf_causal.tree_mask``):
        an ``n x n`` mask built on the host and copied over cost a GPU pass more than its
        attention (8,192 nodes: 64 MiB of bf16 per pass).
        """
        n = len(nodes)
        row = np.full(len(self.tokens), -1, dtype=np.int64)
        row[nodes] = np.arange(n)
        parents = self.parent[nodes]
        parent_row = np.where(parents >= 0, row[parents], -1)
        size = np.ones(n, dtype=np.int64)
        depth = self.depth[nodes]
        # Deepest first, so a node's size is whole before it is added to its parent's.
        for d in range(int(depth.max(initial=0)), 0, -1):
            at = np.flatnonzero(depth == d)
            np.add.at(size, parent_row[at], size[at])
        return np.arange(n) + size

    def sequence_values(self, node_values: np.ndarray) -> list[np.ndarray]:
        """Per sequence, the values of its nodes after the first (where ``node_values[j]``
        is log P(token of j | ancestors of j)), in input order."""
        return [node_values[p[1:]].copy() for p in self.paths]


def tree_batches(
    sequences: Sequence[Sequence[int]], batch_size: int, max_batch_tokens: int | None = None
) -> list[list[int]]:
    """Indices grouped into forward passes of at most ``batch_size`` sequences and (when
    given) at most ``max_batch_tokens`` tree nodes, in sorted order so that sequences
    sharing a prefix land in the same tree. A pass holds at least one sequence.

    Depends only on the sequences given, so the same call always cuts the same way.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    order = sorted(range(len(sequences)), key=lambda i: tuple(sequences[i]))
    batches: list[list[int]] = []
    current: list[int] = []
    nodes = 0
    for i in order:
        seq = sequences[i]
        new = len(seq) - (common_prefix(sequences[current[-1]], seq) if current else 0)
        too_many = len(current) >= batch_size
        too_wide = max_batch_tokens is not None and nodes + new > max_batch_tokens
        if current and (too_many or too_wide):
            batches.append(current)
            current, nodes, new = [], 0, len(seq)
        current.append(i)
        nodes += new
    if current:
        batches.append(current)
    return batches
