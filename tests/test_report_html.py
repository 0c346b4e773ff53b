"""The HTML matrix renders in a real browser: headless Chromium screenshots it.

Debian's ``chromium`` package is the browser (CI installs it, see .ci/run).
The test checks what a reader would see: the DOM that Chromium built holds the
matrix, and the screenshot holds the pass and fail colours of its cells. The
PNG is decoded with zlib alone, so the test needs no imaging library.
"""

from __future__ import annotations

import contextlib
import html.parser
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import zlib
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nomnesia.suite.report_html import COLORS
from nomnesia.suite.reporting import FORMAT, GUARANTEE_KEYS

CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run",
                  "--disable-dev-shm-usage", "--hide-scrollbars")


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        reason = "Debian's chromium package is not installed (apt-get install -y chromium)"
        if os.environ.get("CI"):
            pytest.fail(f"{reason}; CI must install it")
        pytest.skip(reason)
    return found


def run_chromium(args: list[str], profile: Path, timeout: float = 120) -> str:
    """Run Chromium in its own process group and leave none of its processes behind."""
    proc = subprocess.Popen(
        [chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        # zygote and renderer children share the group; stragglers go with it
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == 0, f"chromium exited with {proc.returncode}: {err[-2000:]}"
    return out


def _report(label: str, failing: dict[str, int]) -> dict[str, Any]:
    tests = []
    for key in [k for k in GUARANTEE_KEYS if k not in ("G11", "G12")]:  # grey: unexercised
        tests.append({"nodeid": f"test_{key}_ok", "outcome": "passed", "guarantees": [key],
                      "failed_guarantees": [], "message": ""})
        for i in range(failing.get(key, 0)):
            tests.append({"nodeid": f"test_{key}_bad_{i}", "outcome": "failed",
                          "guarantees": [key], "failed_guarantees": [key],
                          "message": f"{key} <broken> & \"quoted\": detail {i}"})
    return {"format": FORMAT, "meta": {"label": label, "python": "3.12.7", "exitstatus": 1},
            "tests": tests}


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("html")
    reports = [_report("memory", {}), _report("redis", {"G7": 2, "G4": 1}),
               _report("tests.stores:FragileStore", {"G2": 3, "Inputs": 1})]
    paths = []
    for i, report in enumerate(reports):
        path = work / f"r{i}.json"
        path.write_text(json.dumps(report), encoding="utf-8")
        paths.append(str(path))
    out = work / "matrix.html"
    proc = subprocess.run([sys.executable, "-m", "nomnesia.suite.cli", "report", *paths,
                           "--html", str(out)], capture_output=True, text=True, check=False,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return out


class _Matrix(html.parser.HTMLParser):
    """The cells of ``<table id="matrix">`` as (tag, class, text) rows."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[tuple[str, str, str]]] = []
        self._depth = 0
        self._cell: list[str] | None = None
        self._cell_tag = ("", "")

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attr = dict(attrs)
        if tag == "table" and attr.get("id") == "matrix":
            self._depth = 1
        elif self._depth and tag == "tr":
            self.rows.append([])
        elif self._depth and tag in ("td", "th"):
            self._cell, self._cell_tag = [], (tag, attr.get("class") or "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._depth = 0
        elif self._cell is not None and tag in ("td", "th"):
            text = "|".join(t.strip() for t in self._cell if t.strip())
            self.rows[-1].append((*self._cell_tag, text))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def test_chromium_builds_the_matrix(page: Path, tmp_path: Path) -> None:
    dom = run_chromium(["--dump-dom", page.as_uri()], tmp_path / "profile")
    parser = _Matrix()
    parser.feed(dom)
    header, *rows = parser.rows
    assert [text.split("|")[0] for _, _, text in header] == ["Adapter", *GUARANTEE_KEYS]
    assert len(rows) == 3
    by_name = {row[0][2].split("|")[0]: row for row in rows}
    redis = by_name["redis"]
    assert [c[1] for c in redis[1:]] == [
        "fail" if k in ("G4", "G7") else "none" if k in ("G11", "G12") else "pass"
        for k in GUARANTEE_KEYS]
    assert redis[1 + GUARANTEE_KEYS.index("G7")][2] == "FAIL (2)"
    assert by_name["FragileStore"][1 + GUARANTEE_KEYS.index("G2")][2] == "FAIL (3)"
    assert all(c[1] == "pass" for c in by_name["memory"][1:11])
    assert "G7 &lt;broken&gt; &amp; \"quoted\": detail 1" in dom  # escaped, not markup


def test_the_nox_matrix_writes_the_same_table(page: Path, tmp_path: Path) -> None:
    """``nox -s matrix`` writes matrix.html from its leaves' reports: the page above."""
    for report in sorted(page.parent.glob("r*.json")):
        shutil.copy(report, tmp_path / report.name)
    proc = subprocess.run([sys.executable, "-m", "nomnesia.suite.reporting", "matrix",
                           str(tmp_path), "--adapters", "memory", "--pythons", "3.12"],
                          capture_output=True, text=True, check=False, timeout=120)
    assert proc.returncode == 1, proc.stderr  # every report above says pytest exit 1

    def table(html_page: Path) -> str:
        text = html_page.read_text(encoding="utf-8")
        return text[text.index('<table id="matrix">'):text.index("</table>")]

    assert table(tmp_path / "matrix.html") == table(page)


def test_screenshot_shows_the_matrix(page: Path, tmp_path: Path) -> None:
    shot = tmp_path / "matrix.png"
    run_chromium([f"--screenshot={shot}", "--window-size=1200,800", page.as_uri()],
                 tmp_path / "profile")
    assert shot.exists() and shot.stat().st_size > 10_000, "no or a trivial screenshot"
    width, height, rows = decode_png(shot.read_bytes())
    assert (width, height) == (1200, 800)
    counts = histogram(rows)
    found = {name: count_color(counts, _rgb(color)) for name, color in COLORS.items()}
    # 3 rows x 13 cells of about 60x50 px: 6 fail cells, 27 pass, 6 grey, plus the legend.
    assert found["fail"] > 6 * 1000, found
    assert found["pass"] > 25 * 1000, found
    assert found["none"] > 6 * 1000, found
    edge = histogram([row[-6:] for row in rows])
    assert not any(count_color(edge, _rgb(c)) for c in COLORS.values()), (
        "a matrix cell reaches the right edge: the table is wider than a 1200 px window")
    artifacts = os.environ.get("NOMNESIA_ARTIFACTS")
    if artifacts:
        Path(artifacts).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(artifacts) / "report-matrix.png")


def _rgb(color: str) -> tuple[int, int, int]:
    value = int(color.lstrip("#"), 16)
    return (value >> 16) & 255, (value >> 8) & 255, value & 255


def count_color(counts: Counter[tuple[int, int, int]], rgb: tuple[int, int, int],
                tolerance: int = 6) -> int:
    return sum(n for color, n in counts.items()
               if all(abs(a - b) <= tolerance for a, b in zip(color, rgb, strict=True)))


def _chunks(data: bytes) -> Iterator[tuple[bytes, bytes]]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos = 8
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        yield data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        pos += 12 + length


def decode_png(data: bytes) -> tuple[int, int, list[bytes]]:
    """8-bit RGB or RGBA, non-interlaced PNG to rows of RGB bytes (what Chromium writes)."""
    header = b""
    idat = bytearray()
    for kind, body in _chunks(data):
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
    width, height, depth, color_type, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and color_type in (2, 6) and interlace == 0, (depth, color_type, interlace)
    bpp = 3 if color_type == 2 else 4
    raw = zlib.decompress(bytes(idat))
    stride = width * bpp
    rows: list[bytes] = []
    prev = bytes(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        if kind == 2:  # Up, the common case: no dependency along the row
            line = bytearray((a + b) & 255 for a, b in zip(line, prev, strict=True))
        elif kind in (1, 3, 4):
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                up = prev[i]
                if kind == 1:
                    line[i] = (line[i] + left) & 255
                elif kind == 3:
                    line[i] = (line[i] + (left + up) // 2) & 255
                else:
                    corner = prev[i - bpp] if i >= bpp else 0
                    est = left + up - corner
                    pa, pb, pc = abs(est - left), abs(est - up), abs(est - corner)
                    pred = left if pa <= pb and pa <= pc else up if pb <= pc else corner
                    line[i] = (line[i] + pred) & 255
        prev = bytes(line)
        rgb = prev if bpp == 3 else bytes(b for i, b in enumerate(prev) if i % 4 != 3)
        rows.append(rgb)
    return width, height, rows


def histogram(rows: list[bytes]) -> Counter[tuple[int, int, int]]:
    counts: Counter[tuple[int, int, int]] = Counter()
    for row in rows:
        counts.update(zip(row[0::3], row[1::3], row[2::3], strict=True))
    return counts
