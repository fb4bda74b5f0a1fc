"""What an estimator's fit shows to ArviZ and PyMC: ``idata_``, ``model_``, new inputs.

A mixin of :class:`~rvm_pymc.estimators._base._BaseRVM`: the result tree
(built on first access), the fit's PyMC model in the units of the data
(:func:`rvm_pymc.models.data_unit_model`), the design matrix of new inputs over
the fit's bases and the posterior predictive draws at them.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted


class ResultViews:
    """``idata_``, ``design_matrix``, ``sample_predictions``, ``diagnostic_tree`` and the
    data-unit ``model_``."""

    def design_matrix(self, X) -> np.ndarray:
        """The design matrix of ``X`` over the bases of the fit, in the units of the data.

        Its columns are the bases of ``idata_`` (coordinate ``basis``, the
        active bases ``active_names_``), unscaled: what the data ``Phi`` of
        ``model_`` and ``idata_.constant_data`` hold for the training inputs.

        Parameters
        ----------
        X : array_like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_active)

        Examples
        --------
        Posterior predictive draws at new inputs from ``model_`` (map and nuts)::

            import pymc as pm

            with est.model_:
                pm.set_data({"Phi": est.design_matrix(X_new)},
                            coords={"obs": np.arange(len(X_new))})
                pred = pm.sample_posterior_predictive(est.idata_, predictions=True)
        """
        return self._active_design(X)

    def _data_unit_model(self, Phi, target, scale, prior):
        """``model_``: the fit's RVM in data units (:func:`~rvm_pymc.models.data_unit_model`)."""
        from rvm_pymc.models import data_unit_model

        post = self.posterior_
        fixed = None
        if post.is_type_ii:
            fixed = {"log_alpha": post.log_alpha}
            if post.log_beta is not None:
                fixed["log_beta"] = post.log_beta
            if post.log_dispersion is not None:
                fixed["log_dispersion"] = post.log_dispersion
        classes = getattr(self, "classes_", None)
        return data_unit_model(
            self._kind_of_fit(),
            Phi,
            target,
            basis_scale=scale,
            y_offset=post.y_offset,
            y_scale=self.y_scale_,
            prior=prior,
            fixed=fixed,
            basis_names=post.basis_names,
            class_names=None if classes is None else [str(c) for c in classes],
        )

    @property
    def idata_(self):
        """The fit as an ArviZ DataTree of the result schema (:mod:`rvm_pymc.results`).

        Built on first access from the estimator's one posterior (a grid search
        that never looks at it does not pay for the draws) and kept.
        """
        check_is_fitted(self, "coef_")
        if getattr(self, "_idata", None) is None:
            from rvm_pymc.estimators._io import build_tree
            from rvm_pymc.estimators._width_integration import integrates_width, latent_at

            inp = self._tree_inputs
            # a fit on the row compression kept X, not its N x active design
            Phi = self._design_of(inp["Phi"]) if inp.get("Phi_of_X") else inp["Phi"]
            if integrates_width(self) and "latent" not in inp:  # each draw at its own width
                inp = {**inp, "latent": latent_at(self, inp["constants"]["X"][1])}
            self._idata = build_tree(self.posterior_, {**inp, "Phi": Phi})
        return self._idata

    @idata_.setter
    def idata_(self, tree) -> None:
        self._idata = tree

    def sample_predictions(self, X, *, random_state=None):
        """Posterior predictive draws at new inputs, as the ArviZ ``predictions`` groups.

        Parameters
        ----------
        X : array_like of shape (n_samples, n_features)
        random_state : int, Generator or None
            Seeds the replicates (the weight draws are those of ``idata_``).

        Returns
        -------
        xarray.DataTree
            ``predictions`` (replicates ``t_obs``/``y_obs`` and the latent
            mean ``mu`` or probabilities ``p`` of every draw) and
            ``predictions_constant_data`` (``Phi`` at ``X``); see
            :func:`rvm_pymc.results.predictions`.
        """
        from rvm_pymc.estimators._width_integration import integrates_width, sample_predictions_at
        from rvm_pymc.results import predictions

        if integrates_width(self):  # each draw's design matrix at its own width
            return sample_predictions_at(self, self._validated(X), random_state)
        if getattr(self, "predictive", "rvm") == "rvm*":
            raise ValueError(
                "sample_predictions draws from the RVM posterior over the relevance vectors, "
                "not from RVM*'s (predictive='rvm*'); use predict(X, return_std=True)"
            )
        Phi = self._active_design(X)  # X checked before the draws of idata_ are made
        return predictions(self.idata_, Phi, random_state=random_state)
