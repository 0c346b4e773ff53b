"""A nemesis run as one HTML page: latency over time with the fault windows shaded.

The text summary says *how much* a fault cost (answered / made per kind, time to
answer again); it cannot say *when* or *how*: whether calls slowed before they
failed, whether a crash's errors stopped at the restart or trailed on, whether
a network delay showed as latency and a black hole as timeouts. A scatter of
every call's latency against time, with each fault's window drawn as a band,
shows that at a glance, and a bar per fault kind puts the availability figures
beside it.

Like ``suite/report/timeline.py`` it is a static SVG made here: no script, no
font, no network, every label escaped, so the page opens offline from a CI
artifact. ``python -m nomnesia.suite.nemesis ... --html PATH`` writes it;
``python -m nomnesia.suite.nemesis.report_html r.json out.html`` redraws a
saved JSON report.
"""

from __future__ import annotations

import html
import json
import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..report.timeline import OUTCOME_COLORS
from .report import FaultRecord, NemesisReport

__all__ = ["KIND_COLORS", "fault_label", "load", "render", "write"]

KIND_COLORS = {"crash": "#d93025", "kill": "#a142f4", "pause": "#1a73e8", "net": "#e37400",
               "failover": "#12b5cb"}
"""Band colour per fault kind (drawn at low opacity); an unknown kind is grey."""
WIDTH, HEIGHT = 1240, 380
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 14, 40
"""The scatter's size and margins in pixels (the page is read at 1,400 wide)."""
BAR_ROW, BAR_LEFT, BAR_WIDTH = 24, 150, 640
esc = html.escape


def fault_label(fault: FaultRecord) -> str:
    """``kind:target:detail`` as the summary's "targets" line names it (``net:postgres:
    stall``, ``pause:redis``, ``crash``), so page and text read alike."""
    return f"{fault.kind}:{fault.target}:{fault.detail}".rstrip(":")


def _decades(values: Sequence[float]) -> tuple[int, int]:
    """The powers of ten (ms) the y axis spans: log scale, since a healthy call takes a
    few ms and a timed-out one a second, and both must be readable on one chart."""
    positive = [v for v in values if v > 0] or [1.0]
    lo = math.floor(math.log10(max(min(positive), 0.01)))
    hi = max(math.ceil(math.log10(max(positive))), lo + 1)
    return lo, hi


def _scatter(report: NemesisReport) -> str:
    points = report.latency
    end = max([float(p[0]) for p in points]
              + [f.started + f.held for f in report.faults] + [1.0])
    lo, hi = _decades([float(p[1]) for p in points])
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(seconds: float) -> float:
        return LEFT + max(0.0, seconds) / end * plot_w

    def y(ms: float) -> float:
        value = math.log10(max(ms, 10.0 ** lo))
        return TOP + plot_h - (value - lo) / (hi - lo) * plot_h

    out = [f'<svg class="latency" width="{WIDTH}" height="{HEIGHT}" '
           f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="latency over time">']
    placed: list[tuple[float, float]] = []  # (x, bottom) of the labels drawn so far
    for fault in sorted(report.faults, key=lambda f: f.started):
        x0, x1 = x(fault.started), x(fault.started + fault.held)
        name = fault_label(fault)
        label_y = _label_top(placed, x0, len(name))
        tip = (f"{name}: from {fault.started:.2f} s for {fault.held:.2f} s; answered again "
               f"after {fault.recovered_after} s; calls {fault.answered}/{fault.attempted}")
        out.append(f'<g class="band {esc(fault.kind)}" data-label="{esc(name)}">'
                   f'<title>{esc(tip)}</title>'
                   f'<rect x="{x0:.1f}" y="{TOP}" width="{max(x1 - x0, 2):.1f}" '
                   f'height="{plot_h}"/><text transform="translate({x0 + 3:.1f},{label_y:.0f}) '
                   f'rotate(90)">{esc(name)}</text></g>')
    for power in range(lo, hi + 1):
        ty = y(10.0 ** power)
        tick = f"{10.0 ** power:g} ms" if power < 3 else f"{10.0 ** (power - 3):g} s"
        out.append(f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{ty:.1f}" '
                   f'y2="{ty:.1f}"/><text class="axis" x="{LEFT - 6}" y="{ty + 4:.1f}" '
                   f'text-anchor="end">{esc(tick)}</text>')
    step = _nice_step(end)
    tick_s = 0.0
    while tick_s <= end:
        out.append(f'<text class="axis" x="{x(tick_s):.1f}" y="{HEIGHT - BOTTOM + 16}" '
                   f'text-anchor="middle">{tick_s:g}</text>')
        tick_s += step
    out.append(f'<text class="axis" x="{LEFT + plot_w / 2:.0f}" y="{HEIGHT - 6}" '
               'text-anchor="middle">seconds since the run started (a call is placed where '
               'it ended)</text>')
    out.append(f'<rect class="frame" x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}"/>')
    for outcome in ("ok", "fail", "info"):  # failures last, on top of the steady load
        out.append(f'<g class="pts {outcome}">')
        for t, ms, kind, f in (p for p in points if p[2] == outcome):
            tip = "" if outcome == "ok" else f"<title>{esc(f'{f} {kind} {ms} ms')}</title>"
            out.append(f'<circle cx="{x(float(t)):.1f}" cy="{y(float(ms)):.1f}" r="2">'
                       f'{tip}</circle>' if tip else
                       f'<circle cx="{x(float(t)):.1f}" cy="{y(float(ms)):.1f}" r="2"/>')
        out.append("</g>")
    out.append("</svg>")
    return "".join(out)


def _label_top(placed: list[tuple[float, float]], x: float, chars: int) -> float:
    """Where a band's vertical label starts: at the top unless a label drawn less than a
    line's width to its left would overlap it, then below that one. Faults seconds apart
    (a crash during a network fault) would otherwise print over each other."""
    top = float(TOP + 4)
    for px, bottom in placed:
        if abs(x - px) < 12 and bottom > top:
            top = bottom + 6
    placed.append((x, top + chars * 6.2))
    return top


def _nice_step(end: float) -> float:
    """A round tick interval giving about ten ticks along ``end`` seconds."""
    raw = end / 10
    power = 10.0 ** math.floor(math.log10(raw)) if raw > 0 else 1.0
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


def _bars(report: NemesisReport) -> str:
    """Calls answered / made per fault kind (the baseline first): the :attr:`availability`
    figures, whose bars compare kinds within the run (the load decides the absolute)."""
    base = report.baseline
    rows: list[tuple[str, str, int, int]] = [
        ("baseline", "before faults", int(base.get("answered", 0)),
         int(base.get("attempted", 0)))]
    rows += [(kind, kind, int(row["answered"]), int(row["attempted"]))
             for kind, row in report.availability.items()]
    height = BAR_ROW * len(rows) + 24
    width = BAR_LEFT + BAR_WIDTH + 230
    out = [f'<svg class="availability" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label="availability per kind">']
    for i, (cls, name, answered, attempted) in enumerate(rows):
        top = 4 + i * BAR_ROW
        share = answered / attempted if attempted else 0.0
        text = (f"{answered}/{attempted} ({share * 100:.1f}%)" if attempted
                else "no calls")
        out.append(f'<g class="avail {esc(cls)}" data-kind="{esc(name)}">'
                   f'<text x="{BAR_LEFT - 8}" y="{top + 15}" text-anchor="end">{esc(name)}'
                   f'</text><rect class="whole" x="{BAR_LEFT}" y="{top}" width="{BAR_WIDTH}" '
                   f'height="{BAR_ROW - 6}"/><rect class="part" x="{BAR_LEFT}" y="{top}" '
                   f'width="{share * BAR_WIDTH:.1f}" height="{BAR_ROW - 6}"/>'
                   f'<text x="{BAR_LEFT + BAR_WIDTH + 8}" y="{top + 15}">{esc(text)}</text></g>')
    axis = 4 + len(rows) * BAR_ROW + 12
    for pct in (0, 50, 100):
        out.append(f'<text class="axis" x="{BAR_LEFT + BAR_WIDTH * pct / 100:.0f}" y="{axis}" '
                   f'text-anchor="middle">{pct}%</text>')
    out.append("</svg>")
    return "".join(out)


def _fault_table(report: NemesisReport) -> str:
    head = ("#", "fault", "started s", "held s", "answered again after s", "calls answered")
    rows = ["<tr>" + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr>"]
    for n, fault in enumerate(sorted(report.faults, key=lambda f: f.started), 1):
        cells = (str(n), fault_label(fault), f"{fault.started:.2f}", f"{fault.held:.2f}",
                 "never" if fault.recovered_after is None else f"{fault.recovered_after:.3f}",
                 f"{fault.answered}/{fault.attempted}")
        rows.append("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in cells) + "</tr>")
    return f'<table class="faults">{"".join(rows)}</table>'


def _legend(report: NemesisReport) -> str:
    keys = [f'<span class="key {o}">{o}</span>' for o in ("ok", "fail", "info")]
    keys += [f'<span class="key band-{esc(k)}">{esc(k)} window</span>'
             for k in sorted({f.kind for f in report.faults})]
    return ('<p class="legend">calls by outcome (fail: refused input; info: error, timeout or '
            'killed worker) and fault windows, from injection to the fault\'s end: '
            + " ".join(keys) + "</p>")


CSS = (
    "body { font: 14px system-ui, sans-serif; margin: 16px; color: #202124; }\n"
    "pre { background: #f8f9fa; padding: 8px; font-size: 12px; overflow-x: auto; }\n"
    "svg text { font: 11px ui-monospace, monospace; fill: #202124; }\n"
    "svg text.axis { fill: #5f6368; }\n"
    ".grid { stroke: #e8eaed; } .frame { fill: none; stroke: #9aa0a6; }\n"
    ".band rect { fill: #5f6368; fill-opacity: 0.16; }\n"
    ".band text { font-size: 10px; paint-order: stroke; stroke: #fff; stroke-width: 3px; }\n"
    ".avail .whole { fill: #f1f3f4; } .avail .part { fill: #1e8e3e; }\n"
    ".avail.baseline .part { fill: #9aa0a6; }\n"
    ".key { display: inline-block; padding: 0 6px; margin: 0 2px; border-radius: 2px; "
    "border: 1px solid #9aa0a6; font-size: 12px; }\n"
    "table.faults { border-collapse: collapse; font-size: 12px; }\n"
    "table.faults td, table.faults th { border: 1px solid #dadce0; padding: 2px 8px; "
    "text-align: left; }\n"
    + "".join(f".pts.{o} circle {{ fill: {stroke}; fill-opacity: {0.35 if o == 'ok' else 0.9}; "
              f"}}\n.key.{o} {{ background: {fill}; border-color: {stroke}; }}\n"
              for o, (fill, stroke) in OUTCOME_COLORS.items())
    + "".join(f".band.{k} rect {{ fill: {c}; }} .band.{k} text {{ fill: {c}; }}\n"
              f".key.band-{k} {{ background: {c}33; border-color: {c}; }}\n"
              for k, c in KIND_COLORS.items())
)


def render(report: NemesisReport) -> str:
    """The whole page: summary text, latency scatter with fault bands, availability bars,
    and the faults in order (each band's tooltip repeats its row)."""
    title = f"nemesis {report.adapter} seed={report.seed}"
    sampled = (f"{len(report.latency)} of {sum(report.operations.values())} calls shown "
               "(every failed or indeterminate one; acknowledged ones sampled evenly)"
               if report.latency else
               "no latency series in this report (made before it was recorded)")
    return (
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>"
        f"<h1>{esc(title)}: {'PASS' if report.passed else 'FAIL'}</h1>"
        f"<pre>{esc(report.summary())}</pre>"
        "<h2>Latency over time, fault windows shaded</h2>"
        f"{_legend(report)}<p class=\"legend\">{esc(sampled)}</p>{_scatter(report)}"
        "<h2>Availability per fault kind</h2><p class=\"legend\">calls answered (ok or a "
        "refused input) / made, from each fault's start to the next fault's; reported, not "
        f"judged</p>{_bars(report)}"
        f"<h2>Faults</h2>{_fault_table(report)}</body></html>\n")


def write(report: NemesisReport, path: Path) -> None:
    path.write_text(render(report), encoding="utf-8")


def load(data: Mapping[str, Any]) -> NemesisReport:
    """A :class:`NemesisReport` from its JSON (``--out``), so a saved run can be redrawn;
    the derived keys ``to_json`` adds are dropped, missing new ones take their defaults."""
    fields = set(NemesisReport.__dataclass_fields__)
    record_fields = set(FaultRecord.__dataclass_fields__)
    kept = {k: v for k, v in data.items() if k in fields and k != "faults"}
    faults = [FaultRecord(**{k: v for k, v in f.items() if k in record_fields})
              for f in data.get("faults", [])]
    return NemesisReport(**kept, faults=faults)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2:
        print("usage: python -m nomnesia.suite.nemesis.report_html REPORT.json OUT.html",
              file=sys.stderr)
        return 2
    write(load(json.loads(Path(args[0]).read_text(encoding="utf-8"))), Path(args[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
