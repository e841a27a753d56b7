"""The yardstick of learning on a synthetic market: the oracle through the real env, and the
fraction of its excess return over buy-and-hold that an agent captures.

The market and the oracle's target weights are data (`finrl_tutorial.data.synthetic`); running
them through the env with full costs is a backtest, so it lives here, above the envs.
"""
from __future__ import annotations

from dataclasses import replace

from ..data.synthetic import SyntheticMarket
from ..envs import EnvConfig
from ..metrics import cumulative_return
from .runner import EpisodeRecord, run_policy


def oracle_record(synthetic: SyntheticMarket, split: str = "test", env_config: EnvConfig | None = None,
                  **kwargs) -> EpisodeRecord:
    """The oracle of ``synthetic`` through the real env on ``split`` with full costs (``action_mode``
    forced to ``weights``; everything else from ``env_config``). ``kwargs`` go to ``run_policy``."""
    config = replace(env_config or EnvConfig(), action_mode="weights")
    return run_policy(synthetic.oracle(split), synthetic.market.splits[split], config, **kwargs)


def excess_return(record: EpisodeRecord, baseline_record: EpisodeRecord) -> float:
    """``R_record - R_baseline``: the difference of the two cumulative returns over the split."""
    return cumulative_return(record.wealth) - cumulative_return(baseline_record.wealth)


def oracle_capture(agent_record: EpisodeRecord, oracle_record: EpisodeRecord,
                   baseline_record: EpisodeRecord) -> float:
    """Fraction of the oracle's excess return the agent captures: ``(R_agent - R_bh) / (R_oracle - R_bh)``.

    ``R`` is each record's cumulative return over the split; the baseline is normally
    ``buy_and_hold_baseline`` on the same split. 1 = as good as the oracle, 0 = no better than
    buy-and-hold, negative = worse. ``nan`` when the oracle does not beat the baseline (there is
    no excess to capture, e.g. on the ``none`` market), rather than a meaningless ratio.
    """
    excess = excess_return(oracle_record, baseline_record)
    if not excess > 0:
        return float("nan")
    return excess_return(agent_record, baseline_record) / excess


__all__ = ["excess_return", "oracle_capture", "oracle_record"]
