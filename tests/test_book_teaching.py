"""The figure of the reference page "Selection and overfitting" (``finrl_tutorial.book.teaching``):
the best of many noise strategies, drawn against the Sharpe ratio luck is expected to reach.
(The other readings of ``teaching`` are tested in tests/test_book.py, section (d).)"""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import finrl_tutorial as ft  # noqa: E402
from finrl_tutorial.book import teaching  # noqa: E402


def test_best_of_noise_draws_the_noise_families_of_pbo_example_and_their_sr0():
    noise = teaching.best_of_noise(trials=5, days=100, draws=40)
    assert noise["best"].shape == (40,) and (noise["trials"], noise["days"], noise["draws"]) == (5, 100, 40)
    # draw d is pbo_example's noise family of seed d: the same best Sharpe ratio
    for seed in (0, 3):
        assert noise["best"][seed] == pytest.approx(teaching.pbo_example(trials=5, days=100, seed=seed)["noise"]["best_sharpe"])
    assert noise["expected_max_sharpe"] == pytest.approx(ft.metrics.expected_max_sharpe(5, noise["sharpe_variance"]))
    # a noise trial's Sharpe ratio over 100 days spreads by about sqrt(252 / 100)
    assert noise["sharpe_variance"] == pytest.approx(252 / 100, rel=0.3)
    with pytest.raises(ValueError, match="trials"):
        teaching.best_of_noise(trials=1)


def test_the_best_of_noise_figure_draws_every_draw_sr0_and_the_edge():
    noise = teaching.best_of_noise(trials=5, days=100, draws=40)
    fig, ax = plt.subplots()
    teaching.plot_best_of_noise(noise, ax, edge_sharpe=2.0, table_draws=10)
    heights = [patch.get_height() for patch in ax.patches]
    assert len(heights) == 40 and sum(heights) == 40  # 40 bins holding every draw once
    vertical = {line.get_label(): line.get_xdata()[0] for line in ax.get_lines() if len(set(line.get_xdata())) == 1
                and line.get_label().startswith(("SR0", "one real edge"))}
    assert len(vertical) == 2
    assert [x for label, x in vertical.items() if label.startswith("SR0")] == [pytest.approx(noise["expected_max_sharpe"])]
    assert [x for label, x in vertical.items() if label.startswith("one real edge")] == [2.0]
    ticks = [line for line in ax.get_lines() if line.get_marker() == "|"]
    assert len(ticks) == 1 and np.allclose(ticks[0].get_xdata(), noise["best"][:10])
    assert "annualised" in ax.get_xlabel() and "Sharpe" in ax.get_xlabel() and "draws" in ax.get_ylabel()
    plt.close(fig)
    # without an edge or the table's draws: only the bars and SR0
    fig, ax = plt.subplots()
    teaching.plot_best_of_noise(noise, ax)
    assert not any(line.get_label().startswith("one real edge") or line.get_marker() == "|" for line in ax.get_lines())
    plt.close(fig)


def test_p_value_shows_three_decimals_and_a_bound_below_them():
    from finrl_tutorial.book.teaching import p_value

    assert [p_value(p) for p in (0.0004, 0.00099, 0.001, 0.0123, 0.5)] == ["< 0.001", "< 0.001", "0.001", "0.012", "0.500"]
    assert p_value(float("nan")) == ""
