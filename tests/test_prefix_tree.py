"""PrefixTree and tree_batches: the bookkeeping behind prefix sharing, checked by hand."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from monitor.backends.hf_causal import tree_mask
from monitor.backends.prefix_tree import PrefixTree, common_prefix, tree_batches

# BOS = 1. Two "pairs" sharing prefixes, a sequence that is a prefix of another, a
# duplicate, and a sequence with another first token (a second root).
SEQS = [
    (1, 5, 6, 7),
    (1, 5, 6, 8, 9),
    (1, 5),
    (1, 3, 4),
    (1, 5, 6, 7),
    (2, 3),
]


def test_common_prefix() -> None:
    assert common_prefix((1, 5, 6), (1, 5, 7)) == 2
    assert common_prefix((1, 5), (1, 5, 6)) == 2
    assert common_prefix((), (1,)) == 0
    assert common_prefix((2,), (1,)) == 0


def test_every_distinct_prefix_is_one_node() -> None:
    tree = PrefixTree.of(SEQS)
    # Distinct prefixes: 1 | 1 3 | 1 3 4 | 1 5 | 1 5 6 | 1 5 6 7 | 1 5 6 8 | 1 5 6 8 9 |
    # 2 | 2 3  -> 10 nodes, against 22 tokens fed one sequence at a time.
    assert len(tree) == 10
    for seq, path in zip(SEQS, tree.paths, strict=True):
        assert tuple(tree.tokens[path]) == seq
        assert list(tree.depth[path]) == list(range(len(seq)))
        assert tree.parent[path[0]] == -1
        assert list(tree.parent[path[1:]]) == list(path[:-1])
    np.testing.assert_array_equal(tree.paths[0], tree.paths[4])
    # Pre-order: a parent always comes before its children.
    assert all(p < i for i, p in enumerate(tree.parent) if p >= 0)


def test_fed_nodes_are_the_nodes_with_a_child() -> None:
    tree = PrefixTree.of(SEQS)
    fed = tree.fed_nodes()
    # Leaves (never inputs): 1 3 4, 1 5 6 7, 1 5 6 8 9, 2 3. "1 5" is a whole sequence
    # but also a prefix of others, so it is fed.
    leaves = {(1, 3, 4), (1, 5, 6, 7), (1, 5, 6, 8, 9), (2, 3)}
    prefixes = {tuple(tree.tokens[p[: k + 1]]): p[k] for p in tree.paths for k in range(len(p))}
    assert {prefixes[s] for s in leaves}.isdisjoint(fed.tolist())
    assert sorted(fed.tolist()) == sorted(v for k, v in prefixes.items() if k not in leaves)
    assert list(fed) == sorted(fed)


def _ancestors(tree: PrefixTree, node: int) -> set[int]:
    out = {node}
    while tree.parent[node] >= 0:
        node = int(tree.parent[node])
        out.add(node)
    return out


def _attends(tree: PrefixTree, nodes: np.ndarray) -> np.ndarray:
    """The model's mask among ``nodes`` as ``hf_causal`` builds it, as booleans."""
    mask = tree_mask(torch.from_numpy(tree.subtree_ends(nodes)), torch.float32)
    return (mask[0, 0] == 0).numpy()


def test_tree_mask_is_causal_attention_within_each_sequence() -> None:
    tree = PrefixTree.of(SEQS)
    nodes = np.arange(len(tree))
    mask = _attends(tree, nodes)
    for i in nodes:
        assert set(np.flatnonzero(mask[i]).tolist()) == _ancestors(tree, int(i))
    fed = tree.fed_nodes()
    np.testing.assert_array_equal(_attends(tree, fed), mask[np.ix_(fed, fed)])


@pytest.mark.parametrize("seed", range(5))
def test_subtree_ends_give_the_ancestor_sets_of_a_random_tree(seed: int) -> None:
    # Deep branching trees with several roots: the ranges ``j <= i < ends[j]`` the
    # device builds the mask from must be exactly each fed node's ancestors and itself.
    rng = np.random.default_rng(seed)
    seqs = [tuple(rng.integers(0, 3, size=rng.integers(1, 12))) for _ in range(60)]
    tree = PrefixTree.of(seqs)
    fed = tree.fed_nodes()
    mask = _attends(tree, fed)
    for i, node in enumerate(fed):
        assert set(fed[mask[i]].tolist()) == _ancestors(tree, int(node))


def test_sequence_values_read_each_path_after_its_first_node() -> None:
    tree = PrefixTree.of(SEQS)
    values = np.arange(len(tree), dtype=np.float64) / 10
    out = tree.sequence_values(values)
    for seq, v, path in zip(SEQS, out, tree.paths, strict=True):
        assert len(v) == len(seq) - 1
        np.testing.assert_array_equal(v, values[path[1:]])


def test_layout_depends_only_on_the_set_of_sequences() -> None:
    a = PrefixTree.of(SEQS)
    b = PrefixTree.of(list(reversed(SEQS)))
    np.testing.assert_array_equal(a.tokens, b.tokens)
    np.testing.assert_array_equal(a.parent, b.parent)
    for pa, pb in zip(a.paths, reversed(b.paths), strict=True):
        np.testing.assert_array_equal(pa, pb)


def test_tree_batches_keep_shared_prefixes_together() -> None:
    seqs = [(1, 9, 9), (1, 5, 6, 7), (1, 2), (1, 5, 6, 8), (1, 9, 8)]
    # Sorted: (1 2) (1 5 6 7) (1 5 6 8) (1 9 8) (1 9 9): pairs land side by side.
    assert tree_batches(seqs, 2) == [[2, 1], [3, 4], [0]]
    assert tree_batches(list(reversed(seqs)), 2) == [[2, 3], [1, 0], [4]]
    # Node budget: (1 2), (1 5 6 7), (1 5 6 8) are 6 nodes; (1 9 8) would add 2 more.
    assert tree_batches(seqs, 16, max_batch_tokens=7) == [[2, 1, 3], [4, 0]]
    # A sequence over the budget still gets a pass of its own.
    assert tree_batches([(1, 2, 3, 4)], 16, max_batch_tokens=2) == [[0]]
    with pytest.raises(ValueError):
        tree_batches(seqs, 0)
