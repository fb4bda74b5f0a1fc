"""NUTS's log density of the builders' models: PyMC's function, compiled once for every M.

The builders' models (:class:`~rvm_pymc.models.RVMModel`) cut the raveled
vector of free variables at offsets computed from their dimension lengths
(their ``logp_dlogp_function``), so that cross-validation folds with another
number of bases reuse the compiled function.  Compiled in ``FAST_COMPILE``
(no Numba or C compilation): the graphs are compared, not timed.
"""

import io

import numpy as np
import pymc as pm
import pytensor
import pytest
from pymc.model.core import Model

from rvm_pymc import models

pytestmark = pytest.mark.pymc
FAST = "FAST_COMPILE"


def _problem(n, m, seed=0):
    rng = np.random.default_rng(seed)
    Phi = np.column_stack([np.ones(n), rng.standard_normal((n, m - 1))])
    t = Phi @ rng.standard_normal(m) + 0.3 * rng.standard_normal(n)
    return Phi, t


def _build(kind, m, n=30):
    Phi, t = _problem(n, m)
    if kind == "marginal":
        return models.regression_marginal(Phi, t, low_rank=False)
    if kind == "low_rank":
        return models.regression_marginal(Phi, t, low_rank=True)
    if kind == "joint":
        return models.regression_joint(Phi, t, parametrization="non_centred")
    if kind == "binary":
        return models.classification_binary(Phi, (t > 0).astype(int))
    if kind == "softmax":
        return models.classification_softmax(Phi, np.digitize(t, np.quantile(t, [0.33, 0.67])))
    if kind == "rbf":
        X = np.random.default_rng(1).uniform(-3, 3, (n, 1))
        return models.regression_marginal_rbf(X, np.sinc(X[:, 0]), centres=X[: m - 1])
    raise ValueError(kind)


def _pymc_own(model, grad_vars, point, **kwargs):
    """PyMC's own raveled function (constant cut points), bypassing the override."""
    return Model._logp_dlogp_function(
        model, tuple(grad_vars), ravel_inputs=True, initial_point=point, mode=FAST, **kwargs
    )


def _assert_same(fn, ref, q):
    """Value and gradient of ``fn`` at ``q`` equal to those of PyMC's ``ref``;
    returns ``ref``'s value and ``fn``'s gradient."""
    (logp, grad), (logp_ref, grad_ref) = fn._pytensor_function(q), ref._pytensor_function(q)
    np.testing.assert_allclose(logp, logp_ref, rtol=1e-12)
    np.testing.assert_allclose(grad, grad_ref, rtol=1e-9, atol=1e-9)
    return logp_ref, grad


def _point(model, seed):
    rng = np.random.default_rng(seed)
    point = model.initial_point()
    return {k: np.asarray(v + rng.normal(scale=0.5, size=np.shape(v))) for k, v in point.items()}


@pytest.mark.parametrize("kind", ["marginal", "low_rank", "joint", "binary", "softmax", "rbf"])
def test_value_and_gradient_are_pymcs(kind):
    model = _build(kind, m=7)
    point = _point(model, 3)
    fn = model.logp_dlogp_function(ravel_inputs=True, initial_point=point, mode=FAST)
    ref = _pymc_own(model, model.continuous_value_vars, point)
    ref.set_extra_values(point)
    q = np.concatenate([np.ravel(point[v.name]) for v in model.continuous_value_vars])
    logp_ref, grad = _assert_same(fn, ref, q)
    assert np.isfinite(logp_ref) and grad.shape == q.shape
    # and through the public call on a RaveledVars, as PyMC's samplers call it
    from pymc.blocking import DictToArrayBijection

    raveled = DictToArrayBijection.map(
        {v.name: point[v.name] for v in model.continuous_value_vars}
    )
    np.testing.assert_allclose(fn(raveled)[0], logp_ref, rtol=1e-12)


def test_a_subset_of_variables_keeps_the_others_as_extra_values():
    model = _build("joint", m=6)
    point = _point(model, 4)
    grad_vars = [model.rvs_to_values[model["log_alpha"]], model.rvs_to_values[model["w_raw"]]]
    fn = model.logp_dlogp_function(grad_vars, ravel_inputs=True, initial_point=point, mode=FAST)
    q = np.concatenate([point["log_alpha"], point["w_raw"]])
    logp, grad = fn._pytensor_function(q)
    full = float(model.compile_logp(mode=FAST)(point))
    np.testing.assert_allclose(logp, full, rtol=1e-12)
    assert grad.shape == q.shape
    # a new log_beta set as an extra value moves the density
    moved = dict(point, log_beta=point["log_beta"] + 1.0)
    fn.set_extra_values(moved)
    np.testing.assert_allclose(
        fn._pytensor_function(q)[0], float(model.compile_logp(mode=FAST)(moved)), rtol=1e-12
    )


def test_tempered_weights_the_data_term():
    model = _build("marginal", m=5)
    point = _point(model, 5)
    q = np.concatenate([point["log_alpha"], [point["log_beta"]]])
    fn = model.logp_dlogp_function(
        tempered=True, ravel_inputs=True, initial_point=point, mode=FAST
    )
    ref = Model._logp_dlogp_function(
        model,
        tuple(model.continuous_value_vars),
        tempered=True,
        ravel_inputs=True,
        initial_point=point,
        mode=FAST,
    )
    for weight in (0.0, 0.37):
        fn.set_weights(np.array([weight]))
        ref.set_weights(np.array([weight]))
        _assert_same(fn, ref, q)
    fn.set_weights(np.array([0.0]))
    prior = float(model.compile_fn(model.varlogp, mode=FAST)(point))
    np.testing.assert_allclose(fn._pytensor_function(q)[0], prior, rtol=1e-12)


def test_variables_in_another_order_than_the_models():
    model = _build("joint", m=6)
    point = _point(model, 6)
    order = ["w_raw", "log_beta", "log_alpha"]
    grad_vars = [model.rvs_to_values[model[name]] for name in order]
    fn = model.logp_dlogp_function(grad_vars, ravel_inputs=True, initial_point=point, mode=FAST)
    ref = _pymc_own(model, grad_vars, point)
    q = np.concatenate([np.ravel(point[name]) for name in order])
    _assert_same(fn, ref, q)


def test_a_dims_model_of_ones_own_inside_rvmmodel():
    # pymc.dims value variables are XTensorVariables; PyMC's own cut converts them
    import pymc.dims as pmd

    with models.RVMModel(coords={"a": range(4)}) as model:
        pmd.Normal("x", dims="a")
        pmd.HalfNormal("s")
    point = _point(model, 7)
    grad_vars = model.continuous_value_vars
    fn = model.logp_dlogp_function(ravel_inputs=True, initial_point=point, mode=FAST)
    ref = _pymc_own(model, grad_vars, point)
    q = np.concatenate([np.ravel(point[v.name]) for v in grad_vars])
    _assert_same(fn, ref, q)


def _graph_text(fn) -> str:
    """The compiled graph of a ``ValueGradFunction``, as text (what the caches key on)."""
    out = io.StringIO()
    pytensor.dprint(fn._pytensor_function.maker.fgraph, file=out, print_type=True)
    return out.getvalue()


def _compiled_graph(model, mode=FAST):
    return _graph_text(model.logp_dlogp_function(ravel_inputs=True, mode=mode))


@pytest.mark.parametrize("kind", ["marginal", "low_rank", "joint", "softmax"])
def test_the_compiled_graph_holds_no_number_of_bases(kind):
    # what the compile caches key on: two numbers of bases, one graph
    assert _compiled_graph(_build(kind, m=9, n=40)) == _compiled_graph(_build(kind, m=12, n=31))


def test_the_default_rewrites_keep_it_free_of_the_number_of_bases():
    # the rewrites of the default (Numba) mode, run by the Python linker: no compile
    from pytensor.compile.mode import get_default_mode

    mode = get_default_mode().clone(linker="py")
    graphs = [_compiled_graph(_build("low_rank", m=m, n=n), mode) for m, n in ((9, 40), (12, 31))]
    assert graphs[0] == graphs[1]


def test_pymcs_own_cut_holds_the_number_of_bases():
    # the premise: without the override the two graphs differ (constant cut points)
    graphs = []
    for m in (9, 12):
        model = _build("marginal", m=m, n=40)
        fn = _pymc_own(model, model.continuous_value_vars, model.initial_point())
        graphs.append(_graph_text(fn))
    assert graphs[0] != graphs[1]


def test_nuts_samples_through_the_shape_free_function():
    JOINED_NAME = "joined_inputs"  # the name of the builders' one raveled input

    model = _build("marginal", m=6, n=40)
    with model:
        _, step = pm.init_nuts(chains=1, random_seed=1, compile_kwargs={"mode": FAST})
        assert [v.name for v in step._logp_dlogp_func._grad_vars] == [JOINED_NAME]  # ours
        tree = pm.sample(
            draws=30,
            tune=30,
            chains=1,
            cores=1,
            random_seed=1,
            progressbar=False,
            compile_kwargs={"mode": FAST},
            compute_convergence_checks=False,
        )
    draws = tree.posterior["log_alpha"].values
    assert draws.shape == (1, 30, 6) and np.isfinite(draws).all()
    assert np.unique(draws[0, :, 0]).size > 1  # it moved


def _inplace_elemwise(fn) -> int:
    """How many elementwise nodes of ``fn``'s compiled graph overwrite an input."""
    from pytensor.tensor.elemwise import Elemwise

    nodes = fn._pytensor_function.maker.fgraph.apply_nodes
    return sum(isinstance(n.op, Elemwise) and bool(n.op.destroy_map) for n in nodes)


def test_nuts_density_on_numba_has_no_inplace_elementwise_unless_asked():
    # in-place elementwise operations cost Numba about 4 s of compile on the collapsed
    # model (16.3-17.2 s against 12.0-12.6 s); a mode the caller gives is used as given
    from pytensor.compile.mode import get_default_mode

    if type(get_default_mode().linker).__name__ != "NumbaLinker":
        pytest.skip("the default mode is not Numba's")
    model = _build("marginal", 12)
    default = model.logp_dlogp_function(ravel_inputs=True)
    # the rewrites left out of the default mode, exactly: the in-place elementwise ones
    excluded = default._pytensor_function.maker.mode.provided_optimizer.exclude
    assert set(excluded) - set(get_default_mode().provided_optimizer.exclude) == {
        "inplace_elemwise"
    }
    given = model.logp_dlogp_function(ravel_inputs=True, mode=get_default_mode())
    assert _inplace_elemwise(default) == 0
    assert _inplace_elemwise(given) > 0  # the same graph compiled with them has some
    q = np.concatenate([np.full(12, 0.3), [0.1]])
    for a, b in zip(default._pytensor_function(q), given._pytensor_function(q), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12)
