"""A failing history drawn as a timeline: one lane per client, each call a bar.

A concurrency failure is a story in time (two clients, a compaction between
them, a read that came too early), and a numbered list of operations tells it
badly. This draws it as Jepsen's ``timeline.html`` does: a lane per process of
``history.Op``, each call a bar from its invoke to its completion, coloured by
how it ended (acknowledged, failed, indeterminate, cancelled) and labelled
with the call and its arguments, shortened. The anomaly's ops are outlined and
linked to the line of text that names them (and back). Compactions,
recoveries, notes and fault windows are drawn across every lane.

The x axis is the order of events, not seconds: one loop records every event,
so the order is real-time order, and calls of a microsecond stay as readable
as calls of a second (the seconds are in each bar's tooltip). A history wider
than the page gets an overview strip above it whose every part links to that
part of the history: it reads at 10 ops and at 5,000, with no script.

It is a static SVG, made here from the plain JSON of ``evidence``: no script,
no font, no network, so the page opens offline from a CI artifact.
"""

from __future__ import annotations

import html
import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CSS", "HIGHLIGHT", "OUTCOME_COLORS", "Bar", "Timeline", "anchor", "anomaly_lines",
           "build", "label", "render"]

OUTCOME_COLORS = {"ok": ("#a8dab5", "#1e8e3e"), "fail": ("#f6aea9", "#d93025"),
                  "info": ("#fde293", "#e37400"), "cancelled": ("#dadce0", "#5f6368")}
"""Fill and stroke of a bar by how its call ended; the browser test looks for them."""
HIGHLIGHT = "#a142f4"
"""The outline of an anomaly's bars, a colour no outcome uses."""

PAGE_WIDTH = 1240
"""Pixels the detail view may take before it scrolls (the page is read at 1,400)."""
LANE = 22
HEAD = 26
LABELS = 56
MIN_STEP, MAX_STEP = 4.0, 44.0
"""Pixels per event: wide enough to click at 5,000 ops, narrow enough to fit 10 on a page."""
SEGMENTS = 40
"""Parts of the overview strip, each a link to its part of the history."""
SHOWN = 3
"""Anomalies listed open; the rest fold (a bar's link still opens them)."""
_CHAR = 6.4
_CALLS = re.compile(r"\b(append|read|search|compact|forget|recover|consistent) (\d+)\b")


@dataclass
class Bar:
    """One call: where it starts and ends among the events, and how it ended."""

    invoke: Mapping[str, Any]
    end: Mapping[str, Any] | None
    outcome: str
    """``ok``, ``fail``, ``info`` (indeterminate) or ``cancelled``."""
    anomalies: list[int] = field(default_factory=list)
    """The anomalies (their positions in the list) this call is part of."""

    @property
    def index(self) -> int:
        return int(self.invoke["index"])

    @property
    def process(self) -> int:
        return int(self.invoke["process"])

    @property
    def f(self) -> str:
        return str(self.invoke["f"])


@dataclass
class Timeline:
    """The drawable model of one history: bars by lane, notes, windows, the event order."""

    bars: list[Bar]
    notes: list[Mapping[str, Any]]
    lanes: list[int]
    order: dict[int, int]
    """Op index -> its column (position among the kept events)."""
    times: list[tuple[int, int]]
    """(time in ns, column) of every event, in order: where a fault window falls."""
    gaps: list[int]
    """Columns before which ops of a cut history are left out."""
    call_of: dict[int, int]
    """Op index -> the invoke index of its call (an anomaly may name a completion)."""
    windows: list[tuple[int, int, str]] = field(default_factory=list)
    total: int = 0
    cut: bool = False

    @property
    def columns(self) -> int:
        return max(1, len(self.order))


def _outcome(end: Mapping[str, Any] | None) -> str:
    if end is None:
        return "info"  # never completed: it may take effect at any time
    if end.get("type") == "ok":
        return "ok"
    if end.get("type") == "fail":
        return "fail"
    return "cancelled" if str(end.get("error") or "").startswith("CancelledError") else "info"


def build(history: Mapping[str, Any], anomalies: Sequence[Mapping[str, Any]] = (),
          windows: Iterable[tuple[int, int, str]] = ()) -> Timeline:
    """The timeline of ``evidence``'s history: calls paired per process as the recorder
    paired them (one call at a time per process; a note pairs with nothing)."""
    ops = sorted(history.get("ops") or (), key=lambda o: int(o["index"]))
    order = {int(op["index"]): i for i, op in enumerate(ops)}
    gaps = [i for i, (a, b) in enumerate(itertools.pairwise(ops), start=1)
            if int(b["index"]) - int(a["index"]) > 1]
    bars: list[Bar] = []
    notes: list[Mapping[str, Any]] = []
    running: dict[int, Bar] = {}
    call_of: dict[int, int] = {}
    for op in ops:
        if op.get("f") == "note":
            notes.append(op)
            continue
        process = int(op["process"])
        if op.get("type") == "invoke":
            bar = Bar(op, None, "info")
            running[process] = bar  # an invoke after an invoke: the first never completed
            bars.append(bar)
        elif process in running:
            bar = running.pop(process)
            bar.end, bar.outcome = op, _outcome(op)
        else:
            continue
        call_of[int(op["index"])] = bar.index
    by_invoke = {bar.index: bar for bar in bars}
    for k, anomaly in enumerate(anomalies):
        for index in anomaly.get("ops") or ():
            part = by_invoke.get(call_of.get(int(index), -1))
            if part is not None and k not in part.anomalies:
                part.anomalies.append(k)
    return Timeline(bars=bars, notes=notes, lanes=sorted({b.process for b in bars}),
                    order=order, times=[(int(op["time"]), i) for i, op in enumerate(ops)],
                    gaps=gaps, call_of=call_of,
                    windows=list(windows) or fault_windows(notes),
                    total=int(history.get("total") or len(ops)),
                    cut=bool(history.get("cut")))


def fault_windows(notes: Iterable[Mapping[str, Any]]) -> list[tuple[int, int, str]]:
    """The fault windows a partial-failure round recorded as notes (``suite/faults.py``):
    ``fault: X on E`` opens one, the next ``healed: X on E`` closes it; what the fault
    did, where the heal says (``healed: lost-reply on redis (2 replies lost)``), labels it."""
    windows: list[tuple[int, int, str]] = []
    open_: dict[str, int] = {}
    for note in notes:
        text = str(note.get("value") or "")
        kind, _, what = text.partition(": ")
        if kind == "fault":
            open_[what] = int(note["time"])
        elif kind == "healed":
            fault = what.partition(" (")[0]
            if fault in open_:
                windows.append((open_.pop(fault), int(note["time"]), what))
    return windows


def _short(value: Any, width: int = 18) -> str:
    text = repr(value)
    return text if len(text) <= width else text[:width - 2] + "…" + text[-1]


def label(bar: Bar) -> str:
    """``append('ann', 'p2 n4 kettle…')``: the call and its arguments, shortened."""
    value, user = bar.invoke.get("value"), bar.invoke.get("user_id")
    args: list[str] = [] if user is None else [_short(user, 12)]
    if bar.f == "append" and isinstance(value, list) and len(value) >= 2:
        args.append(_short(value[1]))
    elif bar.f == "read" and value is not None:
        args.append(str(value))
    elif bar.f == "search" and isinstance(value, list) and len(value) >= 2:
        args += [_short(value[0], 14), str(value[1])]
    elif bar.f in ("open", "close") and value is not None:
        args.append(str(value))
    return f"{bar.f}({', '.join(args)})"


def _tooltip(bar: Bar, start_ns: int) -> str:
    end = bar.end
    text = f"p{bar.process} {label(bar)} · invoke {bar.index}"
    text += f", args {bar.invoke.get('value')!r}"[:160]
    if end is None:
        return text + " · never completed (indeterminate)"
    result = end.get("error") or end.get("value")
    took = (int(end["time"]) - int(bar.invoke["time"])) / 1e6
    at = (int(bar.invoke["time"]) - start_ns) / 1e6
    return (f"{text} · {bar.outcome} at {end['index']}: {str(result)[:160]}"
            f" · +{at:.3f} ms, took {took:.3f} ms")


def anchor(prefix: str, kind: str, index: int) -> str:
    """The id of a bar (``op``) or of an anomaly's text line (``a<k>-op``)."""
    return f"{prefix}-{kind}{index}"


def render(timeline: Timeline, prefix: str) -> str:
    """The timeline as HTML: a legend, the overview strip (when it scrolls), the lanes."""
    if not timeline.bars and not timeline.notes:
        return '<p class="tl-empty">(no store calls recorded)</p>'
    step = max(MIN_STEP, min(MAX_STEP, PAGE_WIDTH / timeline.columns))
    width = int(timeline.columns * step) + 8
    parts = [f'<div class="timeline" data-lanes="{len(timeline.lanes)}" '
             f'data-bars="{len(timeline.bars)}">', _legend(timeline)]
    if width > PAGE_WIDTH:
        parts.append(_overview(timeline, prefix, width))
    parts.append('<div class="tl-body">')
    parts.append(_lane_labels(timeline))
    parts.append(f'<div class="tl-scroll">{_detail(timeline, prefix, step, width)}</div>')
    parts.append("</div></div>")
    return "".join(parts)


def _legend(timeline: Timeline) -> str:
    items = "".join(f'<span class="tl-key {k}">{name}</span>' for k, name in (
        ("ok", "acknowledged"), ("fail", "failed"), ("info", "indeterminate"),
        ("cancelled", "cancelled"), ("anomaly", "in the anomaly")))
    shown = f"{len(timeline.order):,} of {timeline.total:,} ops" if timeline.cut else (
        f"{timeline.total:,} ops")
    cut = " (the history was long: the anomalies' ops and their neighbours)" \
        if timeline.cut else ""
    return (f'<p class="tl-legend">{len(timeline.lanes)} clients, {len(timeline.bars):,} calls, '
            f"{shown}{cut}; x is the order of events · {items}</p>")


def _lane_y(timeline: Timeline) -> dict[int, int]:
    return {p: HEAD + i * LANE for i, p in enumerate(timeline.lanes)}


def _lane_labels(timeline: Timeline) -> str:
    height = HEAD + LANE * len(timeline.lanes) + 4
    rows = "".join(f'<text x="{LABELS - 6}" y="{y + 15}" text-anchor="end">p{p}</text>'
                   for p, y in _lane_y(timeline).items())
    return (f'<svg class="tl-lanes" width="{LABELS}" height="{height}" '
            f'xmlns="http://www.w3.org/2000/svg">{rows}</svg>')


def _x(timeline: Timeline, index: int, step: float) -> float:
    return 4 + timeline.order.get(index, 0) * step


def _span(timeline: Timeline, bar: Bar, step: float) -> tuple[float, float]:
    x0 = _x(timeline, bar.index, step)
    last = int(bar.end["index"]) if bar.end is not None else None
    x1 = (_x(timeline, last, step) if last is not None else 4 + timeline.columns * step)
    return x0, max(x1 - x0 + step * 0.8, 2.0)


def _column_at(timeline: Timeline, ns: int) -> int:
    """The first column at or after ``ns`` (the last column if none is)."""
    for time, column in timeline.times:
        if time >= ns:
            return column
    return timeline.columns


def _detail(timeline: Timeline, prefix: str, step: float, width: int) -> str:
    esc = html.escape
    height = HEAD + LANE * len(timeline.lanes) + 4
    lanes = _lane_y(timeline)
    start_ns = timeline.times[0][0] if timeline.times else 0
    out = [f'<svg class="tl-detail" width="{width}" height="{height}" '
           f'xmlns="http://www.w3.org/2000/svg">']
    for i, y in enumerate(lanes.values()):
        if i % 2:
            out.append(f'<rect class="tl-stripe" x="0" y="{y}" width="{width}" '
                       f'height="{LANE}"/>')
    for start, end, text in timeline.windows:
        x0 = 4 + _column_at(timeline, start) * step
        x1 = 4 + _column_at(timeline, end) * step
        out.append(f'<g class="window"><rect x="{x0:.1f}" y="{HEAD - 14}" '
                   f'width="{max(x1 - x0, 3):.1f}" height="{height - HEAD + 14}"/>'
                   f'<text x="{x0 + 2:.1f}" y="{HEAD - 4}">{esc(text[:40])}</text>'
                   f"<title>{esc(text)}</title></g>")
    for bar in timeline.bars:
        if bar.f in ("compact", "recover"):
            x, w = _span(timeline, bar, step)
            out.append(f'<rect class="span {bar.f}" x="{x:.1f}" y="{HEAD}" width="{w:.1f}" '
                       f'height="{height - HEAD - 4}"><title>{esc(label(bar))} in p'
                       f"{bar.process}: every lane sees it</title></rect>")
    for column in timeline.gaps:
        x = 4 + column * step - step / 2
        out.append(f'<line class="tl-gap" x1="{x:.1f}" x2="{x:.1f}" y1="{HEAD}" '
                   f'y2="{height}"><title>ops left out here</title></line>')
    for note in timeline.notes:
        x = _x(timeline, int(note["index"]), step)
        out.append(f'<g class="note"><line x1="{x:.1f}" x2="{x:.1f}" y1="{HEAD - 10}" '
                   f'y2="{height}"/><title># {esc(str(note.get("value"))[:200])}</title></g>')
    for k in range(0, timeline.columns, max(1, timeline.columns // SEGMENTS)):
        out.append(f'<rect id="{prefix}-seg{k}" class="tl-seg" x="{4 + k * step:.1f}" y="0" '
                   f'width="1" height="1"/>')
    for bar in timeline.bars:
        x, w = _span(timeline, bar, step)
        y = lanes[bar.process] + 3
        classes = f"bar {bar.outcome}" + (" anomaly" if bar.anomalies else "")
        text = label(bar)
        fits = int((w - 6) / _CHAR)
        shown = text if len(text) <= fits else (text[:fits - 1] + "…" if fits >= 4 else "")
        body = (f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{LANE - 6}" rx="2"/>'
                + (f'<text x="{x + 3:.1f}" y="{y + 12}">{esc(shown)}</text>' if shown else "")
                + f"<title>{esc(_tooltip(bar, start_ns))}</title>")
        ident = anchor(prefix, "op", bar.index)
        if bar.anomalies:
            target = anchor(prefix, f"a{bar.anomalies[0]}-op", bar.index)
            out.append(f'<a id="{ident}" class="{classes}" href="#{target}" '
                       f'data-anomalies="{" ".join(map(str, bar.anomalies))}">{body}</a>')
        else:
            out.append(f'<g id="{ident}" class="{classes}">{body}</g>')
    out.append("</svg>")
    return "".join(out)


def _overview(timeline: Timeline, prefix: str, width: int) -> str:
    """The whole history in the page's width: each call a thin line in its lane, anomalies
    as ticks, and SEGMENTS links, each to its part of the detail below."""
    scale = PAGE_WIDTH / max(width, 1)
    row = max(2, min(6, 48 // max(1, len(timeline.lanes))))
    height = row * len(timeline.lanes) + 8
    lanes = {p: 4 + i * row for i, p in enumerate(timeline.lanes)}
    step = (width - 8) / timeline.columns
    paths: dict[str, list[str]] = {k: [] for k in OUTCOME_COLORS}
    ticks: list[str] = []
    for bar in timeline.bars:
        x, w = _span(timeline, bar, step)
        paths[bar.outcome].append(f"M{x * scale:.1f} {lanes[bar.process] + row / 2:.1f}"
                                  f"h{max(w * scale, 0.6):.1f}")
        if bar.anomalies:
            ticks.append(f"M{x * scale:.1f} 0v{height}")
    out = [f'<svg class="tl-overview" width="{PAGE_WIDTH}" height="{height}" '
           f'xmlns="http://www.w3.org/2000/svg">']
    for start, end, _ in timeline.windows:
        x0 = (4 + _column_at(timeline, start) * step) * scale
        x1 = (4 + _column_at(timeline, end) * step) * scale
        out.append(f'<rect class="window" x="{x0:.1f}" y="0" width="{max(x1 - x0, 2):.1f}" '
                   f'height="{height}"/>')
    for outcome, segments in paths.items():
        if segments:
            out.append(f'<path class="ov {outcome}" stroke-width="{max(row - 1, 1)}" '
                       f'd="{"".join(segments)}"/>')
    if ticks:
        out.append(f'<path class="ov-anomaly" d="{"".join(ticks)}"/>')
    every = max(1, timeline.columns // SEGMENTS)
    for k in range(0, timeline.columns, every):
        x = (4 + k * step) * scale
        out.append(f'<a href="#{prefix}-seg{k}"><rect class="ov-link" x="{x:.1f}" y="0" '
                   f'width="{every * step * scale:.1f}" height="{height}"/>'
                   f"<title>events {k:,} to {k + every - 1:,}</title></a>")
    out.append("</svg>")
    return "".join(out)


def anomaly_lines(anomalies: Sequence[Mapping[str, Any]], timeline: Timeline | None,
                  prefix: str) -> str:
    """Each anomaly's text, its op lines linked to their bars (and the bars back to them);
    ``compact 49`` and ``read 94`` in the message link to their bars too."""
    esc = html.escape
    known = set(timeline.call_of) if timeline is not None else set()
    call_of = timeline.call_of if timeline is not None else {}

    def linked(text: str) -> str:
        out, last = [], 0
        for m in _CALLS.finditer(text):
            index = int(m.group(2))
            if index in known:
                out.append(esc(text[last:m.start()]))
                out.append(f'<a href="#{anchor(prefix, "op", call_of[index])}">'
                           f"{esc(m.group(0))}</a>")
                last = m.end()
        return "".join(out) + esc(text[last:])

    items = []
    for k, anomaly in enumerate(anomalies):
        lines = str(anomaly.get("text") or anomaly.get("message") or "").splitlines()
        ops = [int(i) for i in anomaly.get("ops") or ()]
        head, tail = lines[:len(lines) - len(ops)] or lines[:1], lines[-len(ops):] if ops else []
        rows = []
        for index, line in zip(ops, tail, strict=False):
            ident = anchor(prefix, f"a{k}-op", index)
            target = call_of.get(index)
            text = esc(line.strip())
            rows.append(f'<li id="{ident}">' + (
                f'<a href="#{anchor(prefix, "op", target)}">{text}</a>'
                if target is not None else text) + "</li>")
        items.append(f'<li class="anomaly-text"><p>{linked(chr(10).join(head))}</p>'
                     f'<ol class="ops">{"".join(rows)}</ol></li>')
    if not items:
        return ""
    shown, rest = items[:SHOWN], items[SHOWN:]
    more = (f'<details class="more"><summary>{len(rest)} more</summary>'
            f'<ol class="anomalies" start="{SHOWN + 1}">{"".join(rest)}</ol></details>'
            if rest else "")
    return f'<ol class="anomalies">{"".join(shown)}</ol>{more}'



CSS = """
.timeline { margin: 8px 0 16px; }
.tl-legend { color: #5f6368; font-size: 12px; margin: 4px 0; }
.tl-key { display: inline-block; padding: 0 6px; margin-left: 4px; border-radius: 2px;
          border: 1px solid; font-size: 11px; }
""" + "".join(f".tl-key.{k} {{ background: {fill}; border-color: {stroke}; }}\n"
              f".bar.{k} rect {{ fill: {fill}; stroke: {stroke}; }}\n"
              f".ov.{k} {{ stroke: {stroke}; fill: none; }}\n"
              for k, (fill, stroke) in OUTCOME_COLORS.items()) + f"""
.tl-key.anomaly {{ border: 2px solid {HIGHLIGHT}; }}
.bar.cancelled rect {{ stroke-dasharray: 3 2; }}
.bar.anomaly rect {{ stroke: {HIGHLIGHT}; stroke-width: 3; }}
.bar:target rect, .bar:hover rect {{ stroke: #202124; stroke-width: 3; }}
.bar text {{ font: 11px ui-monospace, monospace; fill: #202124; pointer-events: none; }}
.tl-body {{ display: flex; align-items: flex-start; }}
.tl-lanes text {{ font: 11px ui-monospace, monospace; fill: #5f6368; }}
.tl-scroll {{ overflow-x: auto; max-width: {PAGE_WIDTH + 8}px; }}
.tl-stripe {{ fill: #f8f9fa; }}
.span.compact {{ fill: #1a73e8; opacity: .05; }}
.span.recover {{ fill: #188038; opacity: .10; }}
.window rect, rect.window {{ fill: #d93025; opacity: .10; }}
.window text {{ font: 10px sans-serif; fill: #a50e0e; }}
.note line {{ stroke: #5f6368; stroke-dasharray: 2 3; }}
.tl-gap {{ stroke: #202124; stroke-width: 2; stroke-dasharray: 1 2; }}
.tl-seg {{ fill: none; }}
.tl-overview {{ display: block; margin: 0 0 6px {LABELS}px; background: #f8f9fa; }}
.ov-anomaly {{ stroke: {HIGHLIGHT}; stroke-width: 2; }}
.ov-link {{ fill: transparent; }}
.ov-link:hover {{ fill: rgba(26,115,232,.15); }}
ol.anomalies {{ padding-left: 20px; }}
ol.anomalies li.anomaly-text p {{ margin: 8px 0 2px; }}
ol.ops {{ list-style: none; padding-left: 8px; margin: 0;
          font: 12px ui-monospace, monospace; white-space: pre; }}
ol.ops li:target {{ background: #f3e8fd; }}
"""
"""The timeline's styles, for the page to inline."""
