"""The package's version (one place: the package root and the command line read it)."""

VERSION = "0.1.0.dev0"
