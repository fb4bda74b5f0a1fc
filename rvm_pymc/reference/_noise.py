"""The noise precision of the fast regression solver: MacKay's update, safeguarded."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from rvm_pymc._core.ard import mackay_beta
from rvm_pymc._core.evidence import log_beta_prior
from rvm_pymc._core.gaussian import factor_inverse

if TYPE_CHECKING:
    from rvm_pymc.priors import HyperPrior

__all__ = ["update_noise"]


def update_noise(st: Any, prior: HyperPrior, n: int) -> float:
    """MacKay's update of beta, halved in ``log beta`` until the objective does not decrease.

    Each trial is a fresh factorisation; returns ``|d log beta|`` accepted (``inf``: none).
    """

    def objective(lml: float, beta: float) -> float:
        return lml + log_beta_prior(beta, prior)

    f = st.factor()  # rss and gamma from the fresh factor of this state
    st.lml, st.rss = f.lml, f.rss
    old_obj = objective(f.lml, st.beta)
    gamma = 1.0 - st.alpha * factor_inverse(f.L, f.p).diagonal()
    step = np.log(mackay_beta(n, float(np.sum(gamma)), st.rss, prior, st.beta_max)) - np.log(
        st.beta
    )
    if step == 0.0:
        return 0.0
    log_beta0 = np.log(st.beta)
    for _ in range(40):
        beta = float(np.exp(log_beta0 + step))
        trial = st.factorise(beta=beta)  # the evidence alone; S, Q for the accepted step only
        if trial is not None and objective(trial.lml, beta) >= old_obj - f.rounding:
            st.commit(beta=beta, fresh=trial)
            return abs(step)
        step *= 0.5
    return np.inf  # no acceptable step: never read as 'beta has settled'
