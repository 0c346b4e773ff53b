"""One run's report page: the verdict first, then each cause with its story, then the matrix.

Whoever opens it wants to know first whether the store broke a promise and
which: the verdict and every guarantee's state fit in the first screen (1,400
× 900). Below, failures grouped by cause, each with its guarantee, its whole
message, the command that replays it and, where the failure kept its history,
the history drawn as a timeline (``timeline``). Then the run's row of the
matrix, then the tests that were not applicable to the store, with why.

A static page made from the JSON report alone (``json_report``), with no
script and no network.
"""

from __future__ import annotations

import html
import shlex
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .labels import GUARANTEE_KEYS, NOT_APPLICABLE, TITLES, plural
from .matrix_html import COLORS, CSS, build_matrix, matrix_table
from .timeline import CSS as TIMELINE_CSS
from .timeline import anomaly_lines, build, render

__all__ = ["render_page", "replay_command", "write_run_pages"]

_STATES = {"fail": "fail", "pass": "pass", "not reached": "unreached", NOT_APPLICABLE: "na",
           "skipped": "none", "not exercised": "none"}
_DROPPED = {"--nomnesia-json": 1, "--nomnesia-seed": 1, "-k": 1, "--html": 1, "--json": 1}


def replay_command(meta: Mapping[str, Any], nodeid: str) -> str:
    """``python -m pytest <the run's arguments> --nomnesia-seed N -k 'test_x[case]'``."""
    argv = [str(a) for a in meta.get("argv") or ()]
    kept: list[str] = []
    skip = 0
    for arg in argv:
        if skip:
            skip -= 1
            continue
        name = arg.split("=", 1)[0]
        if name in _DROPPED:
            skip = _DROPPED[name] if "=" not in arg else 0
            continue
        kept.append(arg)
    if not argv:
        which = (["--adapter", str(meta["adapter"])] if meta.get("adapter") else
                 ["--store", str(meta["store"])] if meta.get("store") else [])
        kept = ["--pyargs", "nomnesia.suite", *which]
    seed = ["--nomnesia-seed", str(meta["seed"])] if meta.get("seed") else []
    name = nodeid.rsplit("::", 1)[-1]
    return shlex.join(["python", "-m", "pytest", *kept, *seed, "-k", name])


def _verdict(report: Mapping[str, Any]) -> tuple[str, str]:
    summary: Mapping[str, int] = report.get("summary") or {}
    verdicts: Mapping[str, Mapping[str, Any]] = report.get("guarantees") or {}
    failing = [k for k in GUARANTEE_KEYS if (verdicts.get(k) or {}).get("verdict") == "fail"]
    bad = int(summary.get("failed", 0)) + int(summary.get("error", 0))
    ran = sum(int(summary.get(k, 0)) for k in ("passed", "failed", "error", "xpassed"))
    code = (report.get("meta") or {}).get("exitstatus")
    if failing:
        named = ", ".join(f"{k} {TITLES[k]} ({verdicts[k]['failed']})" for k in failing)
        return "fail", f"{plural(bad, 'test')} of {ran} that ran failed, breaking {named}"
    if bad or code not in (0, None, 5):
        return "fail", f"{plural(bad, 'test')} of {ran} failed (pytest exit {code})"
    return "pass", f"{ran} tests ran, no guarantee broken"


def _chips(report: Mapping[str, Any]) -> str:
    verdicts: Mapping[str, Mapping[str, Any]] = report.get("guarantees") or {}
    items = []
    for key in GUARANTEE_KEYS:
        cell = verdicts.get(key) or {}
        state = _STATES.get(str(cell.get("verdict")), "none")
        text = f"FAIL {cell.get('failed', 0)}" if state == "fail" else str(
            cell.get("verdict") or "not exercised")
        inner = (f"<b>{key}</b> <small>{html.escape(TITLES[key])}</small>"
                 f"<span>{html.escape(text)}</span>")
        items.append(f'<li class="{state}" id="chip-{key}">'
                     + (f'<a href="#g-{key}">{inner}</a>' if state == "fail" else inner)
                     + "</li>")
    return f'<ul id="guarantees" class="chips">{"".join(items)}</ul>'


def _failure(test: Mapping[str, Any], meta: Mapping[str, Any], prefix: str) -> str:
    esc = html.escape
    evidence: Mapping[str, Any] = test.get("evidence") or {}
    anomalies: Sequence[Mapping[str, Any]] = evidence.get("anomalies") or ()
    history = evidence.get("history")
    timeline = build(history, anomalies) if history else None
    text = str(evidence.get("text") or test.get("message") or "")
    parts = [f'<div class="failure" id="{prefix}"><h4><code>{esc(str(test["nodeid"]))}</code>'
             f"</h4>",
             f'<p class="replay">replay: <code>{esc(replay_command(meta, str(test["nodeid"])))}'
             "</code></p>"]
    if timeline is not None:
        parts.append(render(timeline, prefix))
    if anomalies:
        count = "1 anomaly" if len(anomalies) == 1 else f"{len(anomalies)} anomalies"
        parts.append(f"<p>{count}, whose ops are outlined above (a line links to its bar, "
                     "a bar to its line):</p>")
        parts.append(anomaly_lines(anomalies, timeline, prefix))
    parts.append(f'<details class="message"{" open" if not anomalies else ""}>'
                 f"<summary>the whole message</summary><pre>{esc(text)}</pre></details>")
    parts.append("</div>")
    return "".join(parts)


def _causes(report: Mapping[str, Any]) -> str:
    esc = html.escape
    tests = {str(t["nodeid"]): t for t in report.get("tests") or ()}
    meta: Mapping[str, Any] = report.get("meta") or {}
    drawn: dict[str, str] = {}
    seen_guarantees: set[str] = set()
    sections = []
    for group in report.get("causes") or ():
        key = str(group.get("guarantee") or "unlabelled")
        ident = f' id="g-{key}"' if key not in seen_guarantees else ""
        seen_guarantees.add(key)
        title = f"{key} {TITLES.get(key, '')}".strip()
        kind = f" · {esc(str(group['kind']))}" if group.get("kind") else ""
        body = []
        for nodeid in group.get("tests") or ():
            if nodeid in drawn:
                body.append(f'<p class="again"><code>{esc(nodeid)}</code>: drawn under '
                            f'<a href="#{drawn[nodeid]}">an earlier cause</a></p>')
            elif nodeid in tests:
                drawn[nodeid] = f"f{len(drawn) + 1}"
                body.append(_failure(tests[nodeid], meta, drawn[nodeid]))
        sections.append(
            f'<section class="cause"{ident}><h3><span class="tag">{esc(title)}</span>{kind} · '
            f'{plural(len(group.get("tests") or ()), "test")}</h3>'
            f'<p class="cause-key">{esc(str(group.get("cause", "")))}</p>'
            f'<p class="example">{esc(str(group.get("example", "")))}</p>'
            f'{"".join(body)}</section>')
    return "".join(sections)


def _not_applicable(report: Mapping[str, Any]) -> str:
    groups: dict[str, list[str]] = {}
    for test in report.get("tests") or ():
        if test.get("outcome") == NOT_APPLICABLE:
            reason = str(test.get("message") or NOT_APPLICABLE)
            groups.setdefault(reason, []).append(str(test["nodeid"]).rsplit("::", 1)[-1])
    if not groups:
        return ""
    items = "".join(
        f"<li><b>{len(names)}</b> {html.escape(reason)}<br><small>"
        f"{html.escape(', '.join(names))}</small></li>"
        for reason, names in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])))
    total = sum(len(v) for v in groups.values())
    return (f'<h2 id="not-applicable">Not applicable: {plural(total, "test")}</h2>'
            "<p>Never counted as a pass: the store's profile lacks what they need.</p>"
            f'<ul class="na">{items}</ul>')


def render_page(report: Mapping[str, Any], *, matrix_href: str | None = None,
                windows: Iterable[tuple[int, int, str]] = ()) -> str:
    """The page of one run (``nomnesia run --html``); ``matrix_href`` links back to the
    merged matrix it belongs to (``nomnesia report --html``). ``windows`` are fault
    windows (start ns, end ns, label) shaded on every timeline."""
    del windows  # the suite's runs have none yet: the nemesis passes its own (reserved)
    esc = html.escape
    meta: Mapping[str, Any] = report.get("meta") or {}
    state, verdict = _verdict(report)
    label = str(meta.get("label") or "unknown")
    profile = (meta.get("profile") or {}).get("name")
    facts = [f"Python {meta.get('python', '?')}", f"profile {profile}" if profile else "",
             f"seed {meta['seed']}" if meta.get("seed") else "",
             f"{meta.get('duration', 0):.1f} s" if meta.get("duration") is not None else "",
             str(meta.get("started") or "")]
    back = f' · <a href="{esc(matrix_href)}">all runs</a>' if matrix_href else ""
    causes = _causes(report)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>nomnesia: {esc(label)}: {state.upper()}</title>
<style>{CSS}{_CSS}{TIMELINE_CSS}</style>
</head>
<body>
<h1>nomnesia: <span class="label">{esc(label)}</span></h1>
<p class="meta">{esc(" · ".join(f for f in facts if f))}{back}</p>
<p id="verdict" class="verdict {state}"><strong>{state.upper()}</strong> {esc(verdict)}</p>
{_chips(report)}
{f'<h2 id="failures">Failures, by cause</h2>{causes}' if causes else ""}
<h2 id="matrix-head">The matrix</h2>
{matrix_table(build_matrix([report]))}
{_not_applicable(report)}
</body>
</html>
"""


def write_run_pages(reports: Sequence[Mapping[str, Any]], target: Path
                    ) -> dict[tuple[str, str], str]:
    """A page per run beside the matrix page ``target`` (``r.html`` -> ``r.run1.html`` ...);
    returns the link of each matrix row (``matrix_html.matrix_table``): its first run's page.
    ``nomnesia report --html`` and the nox matrix both write them, so their tables agree."""
    links: dict[tuple[str, str], str] = {}
    target.parent.mkdir(parents=True, exist_ok=True)
    for number, report in enumerate(reports, start=1):
        name = f"{target.stem}.run{number}.html"
        target.with_name(name).write_text(render_page(report, matrix_href=target.name),
                                          encoding="utf-8")
        meta = report.get("meta") or {}
        links.setdefault((str(meta.get("label") or "unknown"), str(meta.get("python") or "?")),
                         name)
    return links


_CSS = f"""
body {{ max-width: 1340px; }}
h1 {{ overflow-wrap: anywhere; }}
p.verdict {{ font-size: 18px; padding: 10px 14px; border-radius: 4px; margin: 8px 0;
             color: #fff; background: {COLORS['pass']}; }}
p.verdict.fail {{ background: {COLORS['fail']}; }}
ul.chips {{ display: flex; flex-wrap: wrap; gap: 4px; list-style: none; padding: 0;
            margin: 8px 0 16px; }}
ul.chips li {{ padding: 4px 8px; border-radius: 3px; font-size: 12px; line-height: 1.3;
               min-width: 88px; background: {COLORS['none']}; color: #3c4043; }}
ul.chips li small {{ display: block; font-size: 11px; }}
ul.chips li span {{ display: block; font-weight: 600; }}
ul.chips li a {{ color: inherit; text-decoration: none; }}
ul.chips li.fail {{ background: {COLORS['fail']}; color: #fff; }}
ul.chips li.pass {{ background: {COLORS['pass']}; color: #fff; }}
ul.chips li.unreached {{ background: {COLORS['unreached']}; }}
ul.chips li.na {{ background: {COLORS['na']}; color: #80868b; font-style: italic; }}
section.cause {{ border-top: 3px solid {COLORS['fail']}; margin: 16px 0; padding-top: 4px; }}
section.cause h3 {{ margin: 4px 0; font-size: 15px; }}
section.cause .tag {{ background: {COLORS['fail']}; color: #fff; padding: 1px 6px;
                      border-radius: 3px; margin-right: 4px; }}
p.cause-key {{ font: 12px ui-monospace, monospace; color: #5f6368; margin: 2px 0; }}
div.failure {{ margin: 10px 0 18px 12px; }}
div.failure h4 {{ margin: 6px 0 2px; font-size: 13px; }}
p.replay code, div.failure pre {{ background: #f1f3f4; padding: 2px 6px; border-radius: 3px;
                                  font-size: 12px; }}
div.failure pre {{ white-space: pre-wrap; max-height: 28em; overflow: auto; padding: 8px; }}
ul.na small {{ color: #5f6368; }}
"""
