"""As root, PostgreSQL runs as ``nobody``, who must be able to reach its binaries.

PostgreSQL refuses to run as root, so the embedded provider runs it as ``nobody``.
The binaries live in the venv's ``site-packages``; when the venv sits under a
directory only root may enter (a checkout under ``/root``, anything made by
``mktemp -d``, pytest's own ``/tmp/pytest-of-root``), ``nobody`` cannot pass it,
and ``exec`` of ``initdb`` fails with EACCES. Opening up the user's directories
is not ours to do. Instead, the install tree is mirrored into the provider's own
directory, which ``nobody`` owns: hard links where the filesystem allows (no
bytes copied, the files' own modes), copies where it does not. The mirror goes
with the provider's directory, SIGKILL included (the watchdog removes it).
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

__all__ = ["blocking_dir", "mirror"]


def _passable(st: os.stat_result, uid: int, gid: int) -> bool:
    """Whether ``uid``/``gid`` (with no supplementary groups, as ``_launch.py`` leaves
    them) may search a directory with these permissions."""
    if st.st_uid == uid:
        return bool(st.st_mode & stat.S_IXUSR)
    if st.st_gid == gid:
        return bool(st.st_mode & stat.S_IXGRP)
    return bool(st.st_mode & stat.S_IXOTH)


def blocking_dir(path: Path, uid: int, gid: int) -> Path | None:
    """The outermost directory on the way to ``path`` that ``uid`` cannot pass (None: none)."""
    path = path.resolve()
    for directory in [*reversed(path.parents), path]:
        if not _passable(directory.stat(), uid, gid):
            return directory
    return None


def mirror(source: Path, target: Path, *, within: Path) -> Path:
    """Recreate the tree ``source`` at ``target`` (directories 0755, files linked or copied).

    Built under a temporary name and renamed into place, so a mirror interrupted
    half-way is never mistaken for a whole one. ``within`` is the existing directory
    ``target`` goes under, and is never created here: a provider closed meanwhile has
    removed it, and the mirror then fails (FileNotFoundError) instead of leaving a
    new directory behind that no one removes.
    """
    if target.exists():
        return target
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    below = within
    for part in partial.parent.relative_to(within).parts:
        below = below / part
        below.mkdir(mode=0o755, exist_ok=True)
    for root, dirs, files in os.walk(source):
        here = partial / Path(root).relative_to(source)
        here.mkdir(mode=0o755, exist_ok=True)  # top-down: its parent exists
        for name in [*files, *(d for d in dirs if (Path(root) / d).is_symlink())]:
            src, dst = Path(root) / name, here / name
            if src.is_symlink():
                dst.symlink_to(os.readlink(src))
                continue
            try:
                os.link(src, dst)
            except OSError:  # another filesystem, or links refused: copy, modes included
                shutil.copy2(src, dst)
    partial.rename(target)
    return target
