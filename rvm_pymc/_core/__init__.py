"""The lowest layer: the mathematics and the plumbing every other layer shares.

Nothing here imports another part of the package (except :mod:`rvm_pymc.exceptions`),
PyMC or ArviZ: validation, the one NumPy Gaussian posterior (``gaussian``), the
log evidence (``evidence``), the Newton mode and Laplace evidence (``laplace``),
the ARD updates (``ard``), the add/leave tests of the sparse fits (``sparsity``),
the choice of kernel centres, BLAS threads, parallel tasks, progress, files and
lazy attributes.
"""
