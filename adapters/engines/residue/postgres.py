"""PostgreSQL: every row of every user table of every member (both of a replicated pair);
dead tuples are info, not residues (SPEC G8 leaves them out)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .base import Finder, Needle, Scanned, ScanResult, client_module, shown

__all__ = ["scan_postgres"]


_TABLES = """
SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'm') AND n.nspname <> 'information_schema'
  AND n.nspname NOT LIKE 'pg\\_%' ORDER BY 1, 2
"""
_DEAD = """
SELECT schemaname, relname, n_dead_tup FROM pg_stat_user_tables WHERE n_dead_tup > 0
ORDER BY 1, 2
"""


def _postgres_members(url: str) -> list[tuple[str, dict[str, Any]]]:
    """(host:port, connection keywords) of each host of a (multi-host) URL: a pair's
    standby holds the rows too, so each member is read, not only the primary."""
    conninfo = client_module("psycopg.conninfo", f"postgres {shown(url)}")
    params: dict[str, Any] = conninfo.conninfo_to_dict(url)
    params.pop("target_session_attrs", None)
    hosts = str(params.get("host") or "localhost").split(",")
    ports = str(params.get("port") or "5432").split(",")
    ports = ports * len(hosts) if len(ports) == 1 else ports
    return [(f"{h}:{p}", {**params, "host": h, "port": p})
            for h, p in zip(hosts, ports, strict=True)]


def scan_postgres(kind: str, url: str, wanted: Sequence[Needle], timeout: float) -> ScanResult:
    result = ScanResult()
    psycopg = client_module("psycopg", f"{kind} {shown(url)}")
    from psycopg import sql  # psycopg is importable: _client_module checked

    for member, params in _postgres_members(url):
        engine = f"{kind} {member}"
        finder = Finder(engine, wanted, result)
        rows = 0
        params.setdefault("connect_timeout", max(1, int(timeout)))
        with psycopg.connect(**params, autocommit=True) as conn:
            tables = conn.execute(_TABLES).fetchall()
            for schema, table in tables:
                finder.look(f"table {schema}.{table} (name)", f"{schema}.{table}")
                query = sql.SQL("SELECT ctid::text, t::text FROM {}.{} t").format(
                    sql.Identifier(schema), sql.Identifier(table))
                with conn.transaction(), conn.cursor(name="nomnesia_residue") as cursor:
                    cursor.execute(query)
                    for ctid, text in cursor:
                        rows += 1
                        finder.look(f"table {schema}.{table} row {ctid}", text)
            for schema, table, dead in conn.execute(_DEAD).fetchall():
                result.info.append(f"{engine} table {schema}.{table}: {dead} dead tuples, "
                                   "kept until VACUUM (outside G8, as the WAL is)")
        result.scanned.append(Scanned(engine, f"rows in {len(tables)} tables", rows))
    return result
