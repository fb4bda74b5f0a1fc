"""The lowest layer: NumPy mathematics and plumbing shared by every other layer (no PyMC)."""
