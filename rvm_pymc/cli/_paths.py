"""Output paths of the command line, checked before any fitting.

A path is tried the truthful way (also as root, also on a read-only file
system): an empty file is made where the output will go and removed again.
"""

from __future__ import annotations

import os

from rvm_pymc.cli._errors import UsageError

__all__ = ["check_output_dir", "check_output_file", "image_formats"]


def image_formats() -> dict[str, str]:
    """The image types matplotlib writes: suffix (without the dot) -> description."""
    from matplotlib.backend_bases import FigureCanvasBase

    return FigureCanvasBase.get_supported_filetypes()


def _probe(option: str, directory: str, base: str) -> None:
    """UsageError unless a file can be created in ``directory`` (the probe is removed)."""
    from rvm_pymc._core import files

    try:
        probe = files.temporary_file(directory, base)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise UsageError(f"argument {option}: cannot write to {directory}: {reason}") from None
    os.unlink(probe)


def check_output_file(option: str, path: str, *, image: bool = False) -> None:
    """Refuse a file the command could not write, before any fitting.

    Parameters
    ----------
    option : str
        The option that names the file (``--output``, ``--out``), for messages.
    path : str
        The file to be written.
    image : bool, default False
        The file is a figure: its suffix must be an image type matplotlib writes.

    Raises
    ------
    UsageError
        If the path is a directory, its directory does not exist or is not
        writable, an existing file is not writable, or (``image``) the suffix
        is not an image type.
    """
    if image:
        suffix = os.path.splitext(path)[1].lower().lstrip(".")
        formats = image_formats()
        if suffix not in formats:
            raise UsageError(
                f"argument {option}: {path!r} must end in an image type matplotlib writes "
                f"({', '.join('.' + f for f in sorted(formats))}), or be 'none'"
            )
    target = os.path.realpath(path)
    directory = os.path.dirname(target)
    if os.path.isdir(target):
        raise UsageError(f"argument {option}: {path} is a directory")
    if not os.path.isdir(directory):
        raise UsageError(f"argument {option}: the directory {directory} does not exist")
    _probe(option, directory, os.path.basename(target))
    if os.path.exists(target) and not os.access(target, os.W_OK):
        raise UsageError(f"argument {option}: {path} exists and is not writable")


def check_output_dir(option: str, path: str) -> None:
    """Refuse an output directory the command could not create or write, before any fitting.

    Parameters
    ----------
    option : str
        The option that names the directory (``--out``), for messages.
    path : str
        The directory: it exists, or its parent does and it can be made there.

    Raises
    ------
    UsageError
        If the path is a file, its parent does not exist, or no file can be
        written where the directory is or would be.
    """
    target = os.path.realpath(path)
    if os.path.exists(target) and not os.path.isdir(target):
        raise UsageError(f"argument {option}: {path} exists and is not a directory")
    if os.path.isdir(target):
        _probe(option, target, "rvm-pymc")
        return
    parent = os.path.dirname(target)
    if os.path.exists(parent) and not os.path.isdir(parent):
        raise UsageError(f"argument {option}: {parent} is a file, not a directory")
    if not os.path.isdir(parent):
        raise UsageError(f"argument {option}: the directory {parent} does not exist")
    _probe(option, parent, os.path.basename(target))
