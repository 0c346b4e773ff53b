"""The known-bugs benchmark: does the suite find the data bugs users filed upstream?

Each row of ``bench/known_bugs/bugs.toml`` is a bug in a memory or session store that
was reported on the library's tracker, with the release that has it and the release
that fixed it. For each release the runner makes a venv of its own (``uv venv`` +
``uv pip install``, under ``.nox/_known_bugs/<dist>-<version>/``), runs the whole suite
on the library through the row's interface option with a fixed seed, and reads the
suite's JSON report:

- affected release: **found** when the suite fails and the row's guarantee is among the
  guarantees its failures name, else **missed**;
- fixed release: **false alarm** when it fails with that same guarantee, else **ok**.

A miss is a finding about the *suite* (docs/known-bugs.md says why each one is missed
and what the suite needs): it is recorded in ``bench/known_bugs/expected.json`` and
does not fail the run. Only a regression against that file does, so a bug the suite
used to find and now misses (or a fixed release that now raises a false alarm) turns
the session red::

    nice -n 19 python bench/known_bugs.py                      # every row, both releases
    nice -n 19 python bench/known_bugs.py adk-get-session-cross-user --release affected
    nice -n 19 python bench/known_bugs.py --update-expected    # record this run's verdicts
    nox -s known-bugs -- NAME ...                               # the same through nox

Standard library only (Python 3.11+ for ``tomllib``), plus ``uv`` on ``PATH`` or
importable (``pip install uv``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the table, beside this script

from known_bugs_table import (
    EXPECTED,
    HERE,
    PYTHON,
    RELEASES,
    ROOT,
    RUN_TIMEOUT,
    SEED,
    STAMP,
    TABLE,
    UNFIXED,
    WORK,
    Bug,
    Unusable,
    guarantees_seen,
    improvements,
    parse_table,
    regressions,
    verdict,
)

# --------------------------------------------------------------------------- running


def uv() -> list[str]:
    """How to call uv: on PATH, beside this Python, or as its module."""
    found = shutil.which("uv") or shutil.which("uv", path=str(Path(sys.executable).parent))
    if found:
        return [found]
    try:
        import uv as uv_module  # type: ignore[import-not-found,unused-ignore]

        return [uv_module.find_uv_bin()]
    except (ImportError, FileNotFoundError):
        raise Unusable("uv is needed to make the venvs: pip install uv") from None


def venv_for(bug: Bug, release: str, log: Path) -> tuple[Path, float]:
    """The venv of one library release, made or brought up to date; and the seconds it
    took. The project is installed editable: the venv then always runs this checkout's
    suite, so a change to the suite (the fix a miss needs) is measured on the next run
    without reinstalling, and the stamp keeps reruns from rebuilding it (uv rebuilds an
    editable project on every install)."""
    venv = WORK / f"{bug.dist}-{bug.version(release)}"
    python = venv / "bin" / "python"
    wanted = [bug.pin(release), *bug.requires]
    project = f"{ROOT}[{','.join(bug.suite_extras)}]" if bug.suite_extras else str(ROOT)
    key = json.dumps([project, wanted, (ROOT / "pyproject.toml").read_text()])
    stamp = venv / STAMP
    if python.exists() and stamp.exists() and stamp.read_text() == key:
        return python, 0.0
    start = time.monotonic()
    call = uv()
    with log.open("w") as out:
        made = subprocess.run([*call, "venv", "--clear", "--python", PYTHON, str(venv)],
                              stdout=out, stderr=subprocess.STDOUT, check=False)
        if made.returncode:
            raise Unusable(f"uv could not make a Python {PYTHON} venv at {venv} (see {log}): "
                           f"install Python {PYTHON}")
        done = subprocess.run([*call, "pip", "install", "--python", str(python), "-e",
                               project, "pytest-asyncio", *wanted],
                              stdout=out, stderr=subprocess.STDOUT, check=False)
    if done.returncode:
        tail = log.read_text(errors="replace").strip().splitlines()[-3:]
        hint = " ".join(tail)
        if "no version of" in hint.lower() or "not found in the package registry" in hint:
            raise Unusable(f"{bug.name}: {bug.pin(release)} is not on PyPI: correct the "
                           f"{release} release in bugs.toml ({hint})")
        raise Unusable(f"{bug.name}: installing {' '.join(wanted)} failed ({hint}); see {log}")
    stamp.write_text(key)
    return python, time.monotonic() - start


def suite_command(bug: Bug, python: Path | str, report: Path | str) -> list[str]:
    """The suite on the row's option and factory, with the fixed seed and its JSON report."""
    return [str(python), "-m", "pytest", "--pyargs", "nomnesia.suite", bug.option,
            bug.factory, "--nomnesia-seed", str(SEED), "-p", "no:cacheprovider", "-q",
            f"--nomnesia-json={report}", *bug.args]


def run_env(tmp: Path) -> dict[str, str]:
    """The suite's environment: the factories of bench/known_bugs/ importable, every temp
    file of the run (the factories' databases, the libraries' own) in ``tmp``, which the
    runner removes afterwards, and mem0's telemetry off (it reaches the network)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE), env.get("PYTHONPATH")) if p)
    env["TMPDIR"] = str(tmp)
    env["MEM0_TELEMETRY"] = "False"
    env["PYTEST_ADDOPTS"] = "-p no:langsmith_plugin"  # langchain-core's: a second of imports
    env.pop("VIRTUAL_ENV", None)
    return env


def replay(bug: Bug, release: str) -> str:
    """The command that replays one run, from the checkout, as the runner ran it."""
    python = (WORK / f"{bug.dist}-{bug.version(release)}" / "bin" / "python").relative_to(ROOT)
    command = suite_command(bug, python, "/tmp/report.json")
    env = ("PYTHONPATH=bench/known_bugs MEM0_TELEMETRY=False "
           "PYTEST_ADDOPTS='-p no:langsmith_plugin'")
    return f"{env} {shlex.join(command)}"


@dataclass
class Run:
    """One release's run: its verdict, the guarantees its failures named, its seconds."""

    release: str
    version: str
    verdict: str
    guarantees: list[str] = field(default_factory=list)
    seconds: float = 0.0
    install_seconds: float = 0.0
    exit: int | None = None
    note: str = ""
    summary: dict[str, int] = field(default_factory=dict)


def stop(process: subprocess.Popen[bytes]) -> None:
    """End a suite run and whatever it left in its process group: SIGTERM, up to 30 s for
    the suite to stop its engines (it does so itself on a normal exit, leaving the group
    empty), then SIGKILL to anything still there."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=30)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def last_words(log: Path) -> str:
    """What a run that wrote no report said last: its first ``ERROR``/``UsageError`` line,
    else its last non-empty line."""
    lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    for line in lines:
        if line.startswith(("ERROR", "E ")) or "Error:" in line:
            return line[:300]
    return lines[-1][:300] if lines else "no output"


def run_release(bug: Bug, release: str) -> Run:
    """Install, run the suite, judge: one release of one row."""
    reports = WORK / "reports"
    reports.mkdir(parents=True, exist_ok=True)
    report = reports / f"{bug.name}-{release}.json"
    log = reports / f"{bug.name}-{release}.log"
    report.unlink(missing_ok=True)
    python, installed = venv_for(bug, release, reports / f"{bug.name}-{release}.install.log")
    tmp = Path(tempfile.mkdtemp(prefix="nomnesia-known-bugs-"))
    # Passable (not readable) by others: as root the suite runs PostgreSQL as ``nobody``,
    # in a directory it makes under TMPDIR, which mkdtemp's 0700 would wall off.
    tmp.chmod(0o711)
    start = time.monotonic()
    try:
        with log.open("wb") as out:
            process = subprocess.Popen(suite_command(bug, python, report), cwd=tmp,
                                       env=run_env(tmp), stdout=out, stderr=subprocess.STDOUT,
                                       start_new_session=True)
            try:
                code: int | None = process.wait(timeout=RUN_TIMEOUT)
            except subprocess.TimeoutExpired:
                code = None
            finally:
                stop(process)  # whatever it left in its group (it stops its engines itself)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    seconds = time.monotonic() - start
    run = Run(release, bug.version(release), "", seconds=seconds, install_seconds=installed,
              exit=code)
    data: dict[str, Any] | None = None
    if code is None:
        run.note = f"stopped after {RUN_TIMEOUT:.0f} s"
    elif report.exists() and code in (0, 1):
        data = json.loads(report.read_text())
        run.guarantees = guarantees_seen(data)
        run.summary = dict(data.get("summary", {}))
    else:
        run.note = f"the suite exited {code}: {last_words(log)}"
    run.verdict = verdict(bug, release, data)
    (reports / f"{bug.name}-{release}.run.json").write_text(json.dumps(vars(run), indent=2))
    return run


def run_key(bug: Bug, release: str) -> tuple[str, ...]:
    """What decides a suite run: two rows with the same key (two bugs of one release, on
    one option and factory) share one run, judged once per row."""
    return (bug.pin(release), *bug.requires, *bug.suite_extras, bug.option, bug.factory,
            *bug.args)


def reuse(bug: Bug, release: str, other: Bug, run: Run) -> Run:
    """``other``'s run of the same release, judged for ``bug``: its report is copied under
    ``bug``'s name, so that ``--rejudge`` and the replay find it."""
    reports = WORK / "reports"
    for suffix in (".json", ".log"):
        source = reports / f"{other.name}-{release}{suffix}"
        if source.exists():
            shutil.copyfile(source, reports / f"{bug.name}-{release}{suffix}")
    mine = Run(**{**vars(run), "note": (run.note + "; " if run.note else "")
                  + f"the run of {other.name}, judged again"})
    report = reports / f"{bug.name}-{release}.json"
    data = json.loads(report.read_text()) if report.exists() and run.exit in (0, 1) else None
    mine.verdict = verdict(bug, release, data)
    (reports / f"{bug.name}-{release}.run.json").write_text(json.dumps(vars(mine), indent=2))
    return mine


def rejudge(bug: Bug, release: str) -> Run | None:
    """The last run of one release judged again from its report, without running anything
    (after a change to the row's ``guarantee`` or ``match``); None if it never ran."""
    reports = WORK / "reports"
    saved = reports / f"{bug.name}-{release}.run.json"
    report = reports / f"{bug.name}-{release}.json"
    if not saved.exists():
        return None
    run = Run(**json.loads(saved.read_text()))
    data = json.loads(report.read_text()) if report.exists() and run.exit in (0, 1) else None
    run.verdict = verdict(bug, release, data)
    return run


# --------------------------------------------------------------------------- the table


def row(bug: Bug, runs: dict[str, Run]) -> dict[str, Any]:
    """One bug's results as results.json keeps them."""
    return {"name": bug.name, "dist": bug.dist, "affected": bug.affected, "fixed": bug.fixed,
            "guarantee": bug.guarantee, "tracker": bug.tracker, "needs": bug.needs,
            "runs": {r: vars(run) for r, run in runs.items()},
            "replay": {r: replay(bug, r) for r in runs}}


def cell(runs: dict[str, Run], release: str) -> str:
    run = runs.get(release)
    return run.verdict if run else "-"


def print_table(bugs: list[Bug], runs: dict[str, dict[str, Run]]) -> None:
    """One line per bug, then each run's replay command and, for a run that wrote no
    report, why."""
    head = (f"{'bug':36} {'affected -> fixed':24} {'G':6} {'affected':9} {'fixed':11} "
            f"{'seen (affected | fixed)':34} {'s aff':>6} {'s fix':>6}")
    print(head)
    print("-" * len(head))
    for bug in bugs:
        mine = runs.get(bug.name, {})
        if bug.needs:
            print(f"{bug.name:36} {bug.dist + ' ' + bug.affected:24} {bug.guarantee:6} "
                  f"not run: {bug.needs}")
            continue
        seen = " | ".join(",".join(mine[r].guarantees) or "-" if r in mine else "·"
                          for r in RELEASES)
        secs = [f"{mine[r].seconds:6.0f}" if r in mine else f"{'-':>6}" for r in RELEASES]
        print(f"{bug.name:36} {bug.affected + ' -> ' + bug.fixed:24} {bug.guarantee:6} "
              f"{cell(mine, 'affected'):9} {cell(mine, 'fixed'):11} {seen:34} "
              f"{secs[0]} {secs[1]}")
    for bug in bugs:
        for release, run in runs.get(bug.name, {}).items():
            print(f"  {bug.name} [{release} {run.version}]: {replay(bug, release)}")
            if run.note:
                print(f"    {run.note}")


def markdown(bugs: list[Bug], runs: dict[str, dict[str, Run]]) -> str:
    """The table of docs/known-bugs.md, from the runs (so that no verdict is hand-written)."""
    lines = ["| bug | library | affected -> fixed | tracker | G | affected | fixed "
             "| failures name (affected / fixed) | s (affected / fixed) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for bug in bugs:
        mine = runs.get(bug.name, {})
        if bug.needs:
            verdicts = "not run", "not run"
        else:
            verdicts = (cell(mine, "affected"),
                        "n/a (unfixed)" if bug.fixed == UNFIXED else cell(mine, "fixed"))
        seen = " / ".join(",".join(mine[r].guarantees) or "none" if r in mine else "-"
                          for r in RELEASES)
        secs = " / ".join(f"{mine[r].seconds:.0f}" if r in mine else "-" for r in RELEASES)
        lines.append(f"| `{bug.name}` | {bug.dist} | {bug.affected} -> {bug.fixed} | "
                     f"{bug.tracker} | {bug.guarantee} | {verdicts[0]} | {verdicts[1]} | "
                     f"{seen} | {secs} |")
    return "\n".join(lines)


def cpu() -> str:
    """The CPU the timings were taken on (every timing figure names it)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "unknown CPU"
    model = re.search(r"^model name\s*:\s*(.+)$", text, re.M)
    avx512 = sorted(set(re.findall(r"\b(avx512[a-z]*)\b", text)))
    return (f"{model.group(1).strip() if model else 'unknown CPU'}, {os.cpu_count()} CPUs, "
            f"AVX-512: {' '.join(avx512) or 'none'}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python bench/known_bugs.py",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", metavar="NAME", help="rows to run (default: all)")
    parser.add_argument("--release", choices=("affected", "fixed", "both"), default="both")
    parser.add_argument("--update-expected", action="store_true",
                        help="record this run's verdicts in bench/known_bugs/expected.json")
    parser.add_argument("--list", action="store_true", help="list the rows and exit")
    parser.add_argument("--markdown", action="store_true",
                        help="also print the table as docs/known-bugs.md has it")
    parser.add_argument("--rejudge", action="store_true",
                        help="judge the last run's reports again (after editing a row's "
                             "guarantee or match); installs and runs nothing")
    args = parser.parse_args(argv)
    try:
        return _main(args)
    except Unusable as exc:
        print(f"known-bugs: {exc}", file=sys.stderr)
        return 2


def _main(args: argparse.Namespace) -> int:
    if sys.version_info < (3, 11):
        raise Unusable("the runner reads bugs.toml with tomllib: run it with Python 3.11+")
    bugs = parse_table(TABLE.read_text())
    if args.names:
        unknown = sorted(set(args.names) - {b.name for b in bugs})
        if unknown:
            raise Unusable(f"no row named {unknown} in bugs.toml (python bench/known_bugs.py "
                           f"--list lists them)")
        bugs = [b for b in bugs if b.name in args.names]
    if args.list:
        for bug in bugs:
            print(f"{bug.name:36} {bug.dist} {bug.affected} -> {bug.fixed}  {bug.guarantee}  "
                  f"{bug.needs or bug.option + ' ' + bug.factory}")
        return 0
    releases = RELEASES if args.release == "both" else (args.release,)
    print(f"known-bugs: {len(bugs)} row(s), seed {SEED}, on {cpu()}", flush=True)
    runs: dict[str, dict[str, Run]] = {}
    done: dict[tuple[str, ...], tuple[Bug, Run]] = {}
    for bug in bugs:
        if bug.needs:
            continue
        for release in releases:
            if release == "fixed" and bug.fixed == UNFIXED:
                continue
            if args.rejudge:
                found = rejudge(bug, release)
                if found is None:
                    print(f"known-bugs: {bug.name} [{release}] has not run yet", flush=True)
                    continue
                run = found
            elif (same := done.get(run_key(bug, release))) is not None:
                run = reuse(bug, release, *same)
            else:
                print(f"known-bugs: {bug.name} [{release}: {bug.pin(release)}] ...", flush=True)
                run = run_release(bug, release)
                done[run_key(bug, release)] = (bug, run)
            runs.setdefault(bug.name, {})[release] = run
            print(f"known-bugs: {bug.name} [{release}] {run.verdict} in {run.seconds:.0f} s "
                  f"(failures name: {', '.join(run.guarantees) or 'none'})"
                  + (f"; venv made in {run.install_seconds:.0f} s" if run.install_seconds
                     else "") + (f"; {run.note}" if run.note else ""), flush=True)
    print()
    print_table(bugs, runs)
    if args.markdown:
        print()
        print(markdown(bugs, runs))
    WORK.mkdir(parents=True, exist_ok=True)
    results = {"cpu": cpu(), "seed": SEED,
               "rows": [row(b, runs.get(b.name, {})) for b in bugs]}
    (WORK / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    verdicts = {name: {r: run.verdict for r, run in mine.items()} for name, mine in runs.items()}
    expected = json.loads(EXPECTED.read_text()) if EXPECTED.exists() else {}
    if args.update_expected:
        merged = {**expected, **{n: {**expected.get(n, {}), **v} for n, v in verdicts.items()}}
        EXPECTED.write_text(json.dumps(dict(sorted(merged.items())), indent=2) + "\n")
        print(f"known-bugs: wrote {EXPECTED.relative_to(ROOT)}")
        return 0
    for line in improvements(verdicts, expected):
        print(f"known-bugs: changed for the better: {line} (record it: --update-expected)")
    worse = regressions(verdicts, expected)
    for line in worse:
        print(f"known-bugs: REGRESSION: {line}", file=sys.stderr)
    return 1 if worse else 0


if __name__ == "__main__":
    sys.exit(main())
