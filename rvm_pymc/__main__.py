"""``python -m rvm_pymc``: the ``rvm-pymc`` command line (see :mod:`rvm_pymc.cli`)."""

import sys

from rvm_pymc.cli import main

sys.exit(main())
