"""The run page of a known-failing run, as headless Chromium draws it.

The seed's own store (``adapters/seed.py``: the compaction that loses a
concurrent append, the vector write after an await) fails the suite on every
run: three concurrency tests on G7, two interruption tests on G10. The test
runs ``nomnesia run --html`` on it, loads the page in Debian's ``chromium``
and checks what a reader would see: a timeline per failure with a lane per
client and a bar per call in the DOM Chromium built, the anomaly's bars
outlined, and at 1,400 × 900 the verdict and both failing guarantees on the
first screen. ``docs/suite.md``'s pictures are this test's screenshots
(``NOMNESIA_ARTIFACTS=docs/img``).
"""

from __future__ import annotations

import html.parser
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_report_html import count_color, decode_png, histogram, run_chromium

from nomnesia.suite.report.matrix_html import COLORS
from nomnesia.suite.report.timeline import HIGHLIGHT, OUTCOME_COLORS

pytestmark = pytest.mark.slow

SEED_STORE = "nomnesia.adapters.seed:SeedMemoryStore"


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("seed") / "r.html"
    proc = subprocess.run(
        [sys.executable, "-m", "nomnesia.suite.cli", "run", "--store", SEED_STORE, "--html",
         str(out), "--json", str(out.with_suffix(".json")), "--progress", "plain", "--",
         "-p", "no:randomly", "-q"],
        capture_output=True, text=True, check=False, timeout=600,
        env={**os.environ, "NOMNESIA_SEED": "20240607"})
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]  # it must fail
    assert out.exists(), proc.stderr[-2000:]
    return out


class _Drawn(html.parser.HTMLParser):
    """What Chromium's DOM holds of the page: timelines, their lanes and bars, the verdict."""

    def __init__(self) -> None:
        super().__init__()
        self.timelines: list[dict[str, int]] = []
        self.verdict = ""
        self._in_verdict = False
        self._in_lanes = False
        self.chips: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attr = {k: v or "" for k, v in attrs}
        classes = attr.get("class", "").split()
        if "timeline" in classes:
            self.timelines.append({"lanes": int(attr["data-lanes"]), "bars": 0, "anomaly": 0,
                                   "labels": 0})
        elif self.timelines and "bar" in classes:
            self.timelines[-1]["bars"] += 1
            self.timelines[-1]["anomaly"] += "anomaly" in classes
        elif tag == "svg" and "tl-lanes" in classes:
            self._in_lanes = True
        elif self._in_lanes and tag == "text":
            self.timelines[-1]["labels"] += 1  # a lane's label: p0, p1 ...
        elif tag == "p" and attr.get("id") == "verdict":
            self._in_verdict = True
        elif tag == "li" and attr.get("id", "").startswith("chip-"):
            self.chips[attr["id"][5:]] = attr.get("class", "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "p":
            self._in_verdict = False
        elif tag == "svg":
            self._in_lanes = False

    def handle_data(self, data: str) -> None:
        if self._in_verdict:
            self.verdict += data


def test_chromium_draws_a_timeline_for_every_failure(page: Path, tmp_path: Path) -> None:
    dom = run_chromium(["--dump-dom", page.as_uri()], tmp_path / "profile")
    drawn = _Drawn()
    drawn.feed(dom)
    assert drawn.verdict.startswith("FAIL ") and "G7 atomic compaction" in drawn.verdict
    assert {k for k, v in drawn.chips.items() if v == "fail"} == {"G7", "G10"}
    assert len(drawn.timelines) == 5, drawn.timelines  # five failed tests, each drawn once
    concurrency = [t for t in drawn.timelines if t["lanes"] > 1]
    assert len(concurrency) == 3, drawn.timelines
    for timeline in concurrency:  # the workload's clients, a bar per call, the anomaly outlined
        assert timeline["labels"] == timeline["lanes"] >= 5, timeline
        assert timeline["bars"] > 100 and timeline["anomaly"] >= 2, timeline


def test_the_first_screen_shows_the_verdict_and_the_failing_guarantees(
        page: Path, tmp_path: Path) -> None:
    shot = tmp_path / "run.png"
    run_chromium([f"--screenshot={shot}", "--window-size=1400,900", page.as_uri()],
                 tmp_path / "profile")
    width, height, rows = decode_png(shot.read_bytes())
    assert (width, height) == (1400, 900)
    counts = histogram(rows)
    assert len(counts) > 50, "a blank or nearly blank screenshot"
    fail = count_color(counts, _rgb(COLORS["fail"]))
    # The verdict bar (1,300 x 40 px) and two failing guarantee chips (about 90 x 45 px each).
    assert fail > 1300 * 40 + 2 * 80 * 40, fail
    top = histogram(rows[:260])  # verdict and chips sit above the first timeline
    assert count_color(top, _rgb(COLORS["fail"])) > 1300 * 30
    assert count_color(counts, _rgb(OUTCOME_COLORS["ok"][0])) > 2000, "no acknowledged bars"
    assert count_color(counts, _rgb(HIGHLIGHT)) > 200, "no anomaly outlined on the first screen"
    artifacts = os.environ.get("NOMNESIA_ARTIFACTS")
    if artifacts:
        Path(artifacts).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(artifacts) / "report-run.png")


def test_the_merged_matrix_fits_and_links_to_the_run(page: Path, tmp_path: Path) -> None:
    merged = tmp_path / "m.html"
    report = page.with_suffix(".json")
    subprocess.run([sys.executable, "-m", "nomnesia.suite.cli", "report", str(report),
                    "--html", str(merged)], capture_output=True, check=True, timeout=120)
    assert 'href="m.run1.html#g-G7"' in merged.read_text(encoding="utf-8")
    shot = tmp_path / "matrix.png"
    run_chromium([f"--screenshot={shot}", "--window-size=1400,900", merged.as_uri()],
                 tmp_path / "profile")
    _, _, rows = decode_png(shot.read_bytes())
    edge = histogram([row[-30:] for row in rows])
    assert not count_color(edge, _rgb(COLORS["fail"])), "the matrix runs off the window"
    assert count_color(histogram(rows), _rgb(COLORS["fail"])) > 2 * 60 * 40  # G7 and G10
    artifacts = os.environ.get("NOMNESIA_ARTIFACTS")
    if artifacts:
        shutil.copy(shot, Path(artifacts) / "report-matrix-run.png")


def _rgb(color: str) -> tuple[int, int, int]:
    value = int(color.lstrip("#"), 16)
    return (value >> 16) & 255, (value >> 8) & 255, value & 255
