"""Output paths of the command line, checked before any fitting by making (and removing)
an empty file where the output will go."""

from __future__ import annotations

import errno
import os

from rvm_pymc.cli._errors import UsageError

__all__ = ["check_output_dir", "check_output_file", "file_system_type", "image_formats"]


def image_formats() -> dict[str, str]:
    """The image types matplotlib writes: suffix (without the dot) -> description."""
    from matplotlib.backend_bases import FigureCanvasBase

    return FigureCanvasBase.get_supported_filetypes()


def file_system_type(path: str) -> str | None:
    """The type of the file system holding ``path`` (``proc``, ``tmpfs``, ...; None unknown)."""
    target = os.path.realpath(path)
    best, kind = "", None
    try:
        with open("/proc/self/mounts", encoding="utf-8") as fh:
            for line in fh:
                fields = line.split()
                if len(fields) < 3:
                    continue
                point = fields[1].replace("\\040", " ")
                inside = target == point or target.startswith(point.rstrip("/") + "/")
                if inside and len(point) >= len(best):
                    best, kind = point, fields[2]
    except OSError:
        return None
    return kind


def _why_not(directory: str, exc: OSError) -> str:
    """Why no file can be created in the existing ``directory``, in words that name it."""
    reason = exc.strerror or str(exc)
    if exc.errno == errno.EROFS:
        return f"{directory} is on a read-only file system"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return f"no permission to create files in {directory} ({reason})"
    if exc.errno == errno.ENOSPC:
        return f"the file system of {directory} is full ({reason})"
    if exc.errno == errno.ENOENT and os.path.isdir(directory):
        # a virtual file system (/proc, /sys) that takes no new files
        kind = file_system_type(directory)
        system = f"a {kind} file system" if kind else "a file system"
        return f"{directory} is on {system}, which takes no new files"
    return f"cannot create files in {directory} ({reason})"


def _probe(option: str, directory: str, base: str, creating: str) -> None:
    """UsageError (naming ``creating``) unless a file can be created in ``directory``."""
    from rvm_pymc._core import files

    try:
        probe = files.temporary_file(directory, base)
    except OSError as exc:
        raise UsageError(
            f"argument {option}: cannot create {creating}: {_why_not(directory, exc)}"
        ) from None
    os.unlink(probe)


def check_output_file(option: str, path: str, *, image: bool = False) -> None:
    """UsageError (naming ``option``) for a file ``path`` the command could not write, or
    with ``image`` whose suffix is no image type matplotlib writes."""
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
    _probe(option, directory, os.path.basename(target), path)
    if os.path.exists(target) and not os.access(target, os.W_OK):
        raise UsageError(f"argument {option}: {path} exists and is not writable")


def check_output_dir(option: str, path: str) -> None:
    """UsageError (naming ``option``) for a directory the command could not create or write."""
    target = os.path.realpath(path)
    if os.path.exists(target) and not os.path.isdir(target):
        raise UsageError(f"argument {option}: {path} exists and is not a directory")
    if os.path.isdir(target):
        _probe(option, target, "rvm-pymc", f"files in {path}")
        return
    parent = os.path.dirname(target)
    if os.path.exists(parent) and not os.path.isdir(parent):
        raise UsageError(f"argument {option}: {parent} is a file, not a directory")
    if not os.path.isdir(parent):
        raise UsageError(f"argument {option}: the directory {parent} does not exist")
    _probe(option, parent, os.path.basename(target), path)
