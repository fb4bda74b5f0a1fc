"""The noise precision of the fast regression solver: MacKay's update, safeguarded.

:func:`update_noise` moves ``beta`` of a
:class:`rvm_pymc.reference._sequential_state.SequentialState`
(the state of the sequential algorithm, passed in; this module does not import
it) by MacKay's step, halved in ``log beta`` until the objective does not
decrease; the update itself is :func:`rvm_pymc._core.ard.mackay_beta`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from rvm_pymc._core.ard import mackay_beta
from rvm_pymc._core.gaussian import factor_inverse

if TYPE_CHECKING:
    from rvm_pymc.priors import HyperPrior

__all__ = ["update_noise"]


def update_noise(st: Any, prior: HyperPrior, n: int) -> float:
    """MacKay update of beta, safeguarded so that the objective never decreases.

    The MacKay step ``beta = (N - sum(gamma) + 2c) / (rss + 2d)`` points uphill in
    ``log beta`` but can overshoot; the step in ``log beta`` is halved until the
    objective (log evidence + ``c log beta - d beta``) does not decrease
    beyond the rounding of the evidence.  Each trial is a fresh factorisation
    (``st.factorise``); only the accepted one is committed (``st.commit``).
    Returns ``|d log beta|`` of the accepted step (``inf`` if none was found).
    """

    def objective(lml: float, beta: float) -> float:
        return lml + prior.c * np.log(beta) - prior.d * beta

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
