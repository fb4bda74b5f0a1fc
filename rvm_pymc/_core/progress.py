"""The ``rvm_pymc`` logger: one-line notes before work that may take long.

Configured as PyMC configures its own ``pymc`` logger (which prints
"Initializing NUTS using jitter+adapt_diag..."): when the application has
not set up logging (no handler on the root logger), INFO messages go to
stderr; otherwise they follow the application's configuration.  Silence them
with ``logging.getLogger("rvm_pymc").setLevel(logging.WARNING)``.
"""

from __future__ import annotations

import logging

__all__ = ["log"]

log = logging.getLogger("rvm_pymc")
if not logging.root.handlers:
    log.setLevel(logging.INFO)
    if not log.handlers:
        log.addHandler(logging.StreamHandler())
