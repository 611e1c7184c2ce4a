"""Bradley–Terry, the Indic-Bias paper's Elo and cluster-bootstrap intervals, against
hand-computed cases and an independent fit with statsmodels."""

from __future__ import annotations

import math

import numpy as np
import pytest
import statsmodels.api as sm
from scipy.optimize import brentq, minimize
from scipy.special import expit, log_expit

from monitor.metrics.intervals import wilson
from monitor.metrics.ranking import (
    PAPER_RIDGE,
    bradley_terry,
    cluster_rate,
    paper_elo,
    rank_with_intervals,
    subject_seed,
)


def _games(pairs: dict[tuple[int, int], int]) -> tuple[np.ndarray, np.ndarray]:
    """{(winner, loser): count} -> winner and loser arrays."""
    w = [a for (a, _), n in pairs.items() for _ in range(n)]
    l_ = [b for (_, b), n in pairs.items() for _ in range(n)]
    return np.array(w), np.array(l_)


def test_two_players_hand_case() -> None:
    # A beats B three times, B beats A once: the MLE has theta_A - theta_B = ln 3.
    w, l_ = _games({(0, 1): 3, (1, 0): 1})
    theta = bradley_terry(2, w, l_, ridge=0.0)
    assert theta[0] - theta[1] == pytest.approx(math.log(3), abs=1e-6)
    assert theta.sum() == pytest.approx(0, abs=1e-9)
    # The default weak ridge moves it by a negligible amount.
    assert bradley_terry(2, w, l_)[0] - bradley_terry(2, w, l_)[1] == pytest.approx(
        math.log(3), abs=0.01
    )


def test_three_players_score_equations_and_statsmodels() -> None:
    # A>B 3:1, B>C 2:2, A>C 4:1, C>A 1 more: every player wins and loses, MLE exists.
    w, l_ = _games({(0, 1): 3, (1, 0): 1, (1, 2): 2, (2, 1): 2, (0, 2): 4, (2, 0): 2})
    theta = bradley_terry(3, w, l_, ridge=0.0)
    # Score equations of the MLE: each player's wins equal its expected wins.
    for i in range(3):
        wins = np.sum(w == i)
        expected = sum(
            expit(theta[i] - theta[j])
            * (np.sum((w == i) & (l_ == j)) + np.sum((w == j) & (l_ == i)))
            for j in range(3)
            if j != i
        )
        assert expected == pytest.approx(wins, abs=1e-5)
    # The same model as a logistic regression without intercept (statsmodels), player 2
    # as the reference: every game once as "first player won" = 1.
    X = np.zeros((len(w), 2))
    for row, (a, b) in enumerate(zip(w, l_, strict=True)):
        if a < 2:
            X[row, a] += 1
        if b < 2:
            X[row, b] -= 1
    # Randomise which side is listed first so the regression sees both outcomes.
    rng = np.random.default_rng(0)
    flip = rng.random(len(w)) < 0.5
    y = np.where(flip, 0.0, 1.0)
    Xf = np.where(flip[:, None], -X, X)
    fit = sm.Logit(y, Xf).fit(disp=0)
    ref = np.array([fit.params[0], fit.params[1], 0.0])
    assert theta - theta[2] == pytest.approx(ref, abs=1e-4)


def test_paper_elo_two_players_solved_by_hand() -> None:
    w, l_ = _games({(0, 1): 5, (1, 0): 2})

    # theta_A = t = -theta_B minimises ridge*t^2 - 5 log s(2t) - 2 log s(-2t).
    def grad(t: float) -> float:
        return 2 * PAPER_RIDGE * t - 2 * 5 * expit(-2 * t) + 2 * 2 * expit(2 * t)

    t = brentq(grad, -10, 10)
    elo = paper_elo(2, w, l_)
    assert elo[0] == pytest.approx(1000 + 400 * t / math.log(10), abs=1e-3)
    assert elo[1] == pytest.approx(1000 - 400 * t / math.log(10), abs=1e-3)


def test_paper_elo_equals_the_papers_regression_design() -> None:
    """The paper's code: logistic regression, no intercept, L2 with C = 1, X = +-ln 10,
    Elo = 400 beta + 1000. Fitted here directly in beta, independently of our code."""
    w, l_ = _games({(0, 1): 4, (1, 0): 2, (1, 2): 3, (2, 1): 1, (0, 2): 2, (2, 0): 2})
    rng = np.random.default_rng(1)
    first_is_winner = rng.random(len(w)) < 0.5
    id1 = np.where(first_is_winner, w, l_)
    id2 = np.where(first_is_winner, l_, w)
    X = np.zeros((len(w), 3))
    X[np.arange(len(w)), id1] = math.log(10)
    X[np.arange(len(w)), id2] = -math.log(10)
    y = first_is_winner.astype(float)

    def loss(beta: np.ndarray) -> float:
        z = X @ beta
        return 0.5 * beta @ beta - float(np.sum(y * log_expit(z) + (1 - y) * log_expit(-z)))

    beta = minimize(loss, np.zeros(3), method="BFGS", options={"gtol": 1e-10}).x
    assert paper_elo(3, w, l_) == pytest.approx(400 * beta + 1000, abs=1e-3)


def test_cluster_rate_is_wider_than_wilson_when_clusters_move_together() -> None:
    # 20 stereotypes x 10 pairs each; every pair of a stereotype has the same outcome.
    wins = [10] * 9 + [0] * 11
    decided = [10] * 20
    r = cluster_rate(wins, decided, seed=7)
    assert (r.k, r.n, r.clusters) == (90, 200, 20)
    lo, hi = wilson(90, 200)
    assert r.ci_low <= r.value <= r.ci_high
    assert (r.ci_high - r.ci_low) > 2.5 * (hi - lo)  # design effect ~10 on the variance
    again = cluster_rate(wins, decided, seed=7)
    assert (again.ci_low, again.ci_high) == (r.ci_low, r.ci_high)  # reproducible


def test_cluster_rate_edge_cases() -> None:
    # Fewer than ten clusters: a Wilson interval with the clusters as the units, so four
    # pairs won out of four in two stereotypes are far from certain.
    two = cluster_rate([2, 2], [2, 2], seed=1)
    assert two.method.startswith("cluster-level Wilson (2 clusters")
    assert (two.value, two.ci_high) == (1.0, 1.0)
    lo, _ = wilson(2, 2)
    assert two.ci_low == pytest.approx(lo, abs=1e-9) and two.ci_low < 0.4
    one = cluster_rate([3], [4], seed=1)
    assert one.ci_low <= 0.75 <= one.ci_high and one.ci_high - one.ci_low > 0.5
    same = cluster_rate([2] * 12, [4] * 12, seed=1)  # many clusters, all the same rate
    assert (same.value, same.ci_low, same.ci_high) == (0.5, 0.5, 0.5)
    empty = cluster_rate([0, 0], [0, 0], seed=1)
    assert (empty.n, empty.value) == (0, None)


def test_rank_with_intervals_orders_and_repeats() -> None:
    rng = np.random.default_rng(3)
    strength = np.array([1.5, 0.5, -0.5, -1.5])
    w, l_, clusters = [], [], []
    for c in range(60):  # 60 "stereotypes" of 4 games each
        for _ in range(4):
            a, b = rng.choice(4, size=2, replace=False)
            win = a if rng.random() < expit(strength[a] - strength[b]) else b
            w.append(win)
            l_.append(b if win == a else a)
            clusters.append(f"s{c}")
    r = rank_with_intervals(
        ["a", "b", "c", "d"], np.array(w), np.array(l_), np.array(clusters), seed=5, resamples=100
    )
    assert list(r.rank) == [1, 2, 3, 4]
    assert np.all(r.ci_low <= r.theta) and np.all(r.theta <= r.ci_high)
    assert np.all(r.rank_low <= r.rank) and np.all(r.rank <= r.rank_high)
    assert r.rank_high[0] < r.rank_low[3]  # the strongest and weakest are told apart
    assert list(np.argsort(-r.elo)) == [0, 1, 2, 3]
    r2 = rank_with_intervals(
        ["a", "b", "c", "d"], np.array(w), np.array(l_), np.array(clusters), seed=5, resamples=100
    )
    assert np.array_equal(r.ci_low, r2.ci_low) and np.array_equal(r.ci_high, r2.ci_high)


def test_subject_seed_is_stable() -> None:
    assert subject_seed("indic-taxonomy", "caste") == subject_seed("indic-taxonomy", "caste")
    assert subject_seed("indic-taxonomy", "caste") != subject_seed("indic-taxonomy", "tribe")
