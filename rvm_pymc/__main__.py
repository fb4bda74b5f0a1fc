import sys

from rvm_pymc.cli import main

sys.exit(main())
