"""The HTML report (pagelab.report, `pagelab report`): one self-contained page whose
figures are drawn from the runs; opened in headless Chromium (Debian's chromium, driven
by Playwright) it renders with every image loaded and no console error."""

import html
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import pagelab
from conftest import CLI, trace
from pagelab.report import FIGURES, _Runs

pytest.importorskip("matplotlib")


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    """A database of three sweeps: STLB sizes, promotion policies on a buddy allocator
    (sampling free memory), and page-table structures; one run fails."""
    path = tmp_path_factory.mktemp("report") / "runs.db"
    traces = [trace("gups-rec.plt"), trace("chess-large-rec.plt")]
    pagelab.sweep({"traces": traces, "machine": "skylake",
                   "grid": {"tlb.levels.stlb.ways": [2, 4, 8, 16]}}, path, quiet=True)
    pagelab.sweep({"traces": [trace("bunzip2-rec.plt")], "machine": "alpha-21264",
                   "grid": {"promotion.policy": ["none", "reservation"]}}, path, quiet=True)
    pagelab.sweep({"traces": [trace("sqlite-rec.plt")],
                   "grid": {"page_table.kind": ["radix", "hashed", "inverted", "guarded"]}}, path, quiet=True)
    # A run that fails: memory too small for the trace's footprint.
    summary = pagelab.sweep({"traces": [trace("gups-rec.plt")], "grid": {"frames.memory": ["1M"]}},
                            path, quiet=True)
    assert summary.failed == 1
    return path


def images(text):
    return re.findall(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"', text)


def test_every_figure_draws_on_these_runs(db):
    """Every figure of the registry (``report.FIGURES``) has something to show on the
    database above: a new figure fails here until the fixture has runs that draw it."""
    runs = _Runs(str(db))
    titles = []
    for make in FIGURES:
        made = make(runs)
        assert made is not None, f"{make.__name__} draws nothing on the test's runs: give the fixture runs it draws"
        title, caption, png = made
        assert title and caption and len(png) > 1000, make.__name__
        titles.append(title)
    assert len(set(titles)) == len(titles), titles


def test_the_page_stands_alone_with_every_figure(db, tmp_path):
    out = tmp_path / "report.html"
    assert pagelab.report(db, out) == os.fspath(out)
    text = out.read_text()
    titles = re.findall(r"<h2>([^<]+)</h2>", text)
    for t in ["Miss-ratio curves", "Speedup by configuration", "Runs", "Failed runs"]:
        assert t in titles, titles
    assert len(images(text)) == len(FIGURES)
    # Nothing fetched from elsewhere: no script files, links or remote sources (the
    # table's sorting is inline).
    assert not re.search(r"<script[^>]*src|<link|src=\"http|url\(", text)
    assert "frames.memory" in text and "1 failed" in text
    # A run without an error shows an empty cell, not Python's None.
    assert "<td>None</td>" not in text


def test_the_figures_show_the_steady_state_unless_asked(db, tmp_path):
    from pagelab.report import _overhead, _speedup

    steady, whole = _Runs(str(db)), _Runs(str(db), with_faults=True)
    assert (steady.ok["cycles"] <= whole.ok["cycles"]).all()
    assert (steady.ok["cycles"] < whole.ok["cycles"]).any(), "the fixture's runs fault"
    for make in (_overhead, _speedup):
        assert "Zero-fill page faults and eager paging, the cost of first touching memory, are left out" in make(steady)[1]
        assert "counted in" in make(whole)[1]
    # Runs measured after a warm-up say so.
    path = tmp_path / "warm.db"
    pagelab.sweep({"traces": [trace("gups-rec.plt")], "machine": "skylake",
                   "analysis": {"kind": "simulate", "warmup": 100_000},
                   "grid": {"tlb.levels.stlb.ways": [4, 16]}}, path, quiet=True)
    caption = _overhead(_Runs(str(path)))[1]
    assert "2 of the 2 runs were measured after a warm-up (their first 100,000 references" in caption


def test_the_command_line_writes_the_same_page(db, tmp_path):
    py, cli = tmp_path / "py.html", tmp_path / "cli.html"
    pagelab.report(db, py)
    subprocess.run([CLI, "report", str(db), "-o", str(cli), "--python", sys.executable], check=True)
    assert py.read_bytes() == cli.read_bytes()


def test_bad_input_is_a_clear_error_and_writes_nothing(tmp_path):
    with pytest.raises(ValueError, match="no such results database"):
        pagelab.report(tmp_path / "none.db", tmp_path / "r.html")
    assert not (tmp_path / "r.html").exists()
    run = subprocess.run([CLI, "report", str(tmp_path / "none.db"), "-o", str(tmp_path / "r.html")],
                         capture_output=True, text=True)
    assert run.returncode != 0 and "no such results database" in run.stderr
    assert not (tmp_path / "r.html").exists()
    # A JSON that is not a whole advise result: one line naming it, nothing written.
    bad = tmp_path / "advice.json"
    bad.write_text('{"mappings": [{"mapping": "all small"}], "analysis": {}}')
    run = subprocess.run([CLI, "report", str(bad), "-o", str(tmp_path / "r.html"), "--python", sys.executable],
                         capture_output=True, text=True)
    assert run.returncode == 1, run.stderr
    assert run.stderr.startswith("pagelab: error: ") and len(run.stderr.strip().splitlines()) == 1, run.stderr
    assert f"{bad}: not an advise result" in run.stderr
    assert not (tmp_path / "r.html").exists()


def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.fixture(scope="module")
def vrpt(tmp_path_factory):
    """pagelab repro vrpt's folder: its database, verdicts and report."""
    out = tmp_path_factory.mktemp("repro") / "vrpt"
    subprocess.run([CLI, "repro", "vrpt", "-o", str(out), "--quiet", "--python", sys.executable],
                   check=True, stdout=subprocess.DEVNULL)
    return out


def _open(page_file, browser_path, screenshot=None, sort_by=None):
    """Open a page in headless Chromium: its problems (console errors, failed requests),
    its images' (loaded, width, height), its title, and the text of each runs-table
    column after a click on heading ``sort_by``; a full-page screenshot if asked."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed (pip install playwright)")
    problems = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=browser_path,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.on("console", lambda m: m.type in ("error", "warning") and problems.append(f"console {m.type}: {m.text}"))
        page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
        page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url[:80]}"))
        page.goto(page_file.as_uri(), wait_until="load")
        loaded = page.evaluate(
            "Array.from(document.images).map(i => [i.complete, i.naturalWidth, i.naturalHeight])")
        title = page.title()
        # Nothing wider than the page: wide tables scroll inside their box.
        overflow = page.evaluate("document.documentElement.scrollWidth > window.innerWidth")
        column = None
        if sort_by is not None:
            index = page.evaluate(f"""Array.from(document.querySelector("table.sortable").tHead.rows[0].cells)
                                       .findIndex(th => th.textContent.trim() === {json.dumps(sort_by)})""")
            page.locator("table.sortable th").nth(index).click()
            column = page.evaluate(f"""Array.from(document.querySelector("table.sortable").tBodies[0].rows)
                                        .map(r => r.cells[{index}].textContent.trim())""")
        if screenshot is not None:
            page.screenshot(path=str(screenshot), full_page=True, type="jpeg", quality=50)
        browser.close()
    return problems, loaded, title, overflow, column


def _screenshot_path(tmp_path, name):
    """Where a report's screenshot goes: docs/screenshots when PAGELAB_SCREENSHOTS is
    set (`make screenshots` refreshes the ones the docs show), else a scratch folder."""
    folder = os.environ.get("PAGELAB_SCREENSHOTS")
    path = (Path(folder) if folder else tmp_path) / f"{name}.jpg"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def test_the_page_renders_in_headless_chromium(db, tmp_path):
    browser_path = _chromium()
    if browser_path is None:
        pytest.skip("no Chromium here (Debian: apt-get install chromium): the page was not opened in a browser")
    out = tmp_path / "report.html"
    pagelab.report(db, out)
    shot = _screenshot_path(tmp_path, "sweep-report")
    problems, loaded, title, overflow, ways = _open(out, browser_path, shot, sort_by="tlb.levels.stlb.ways")
    assert problems == []
    assert len(loaded) == len(FIGURES)
    assert all(done and w > 100 and h > 100 for done, w, h in loaded), loaded
    assert title == "pagelab: runs.db"
    assert not overflow
    # Sorted as numbers (2, 4, 8, 16), the runs without the key last.
    numbers = [int(w) for w in ways if w]
    assert numbers == sorted(numbers) and numbers[0] == 2 and ways.index("16") > ways.index("4")
    assert shot.stat().st_size > 50_000


def test_a_repro_report_renders_in_headless_chromium(vrpt, tmp_path):
    browser_path = _chromium()
    if browser_path is None:
        pytest.skip("no Chromium here (Debian: apt-get install chromium): the page was not opened in a browser")
    shot = _screenshot_path(tmp_path, "repro-vrpt-report")
    problems, loaded, _, overflow, _ = _open(vrpt / "report.html", browser_path, shot)
    assert problems == [] and not overflow
    assert all(done and w > 100 and h > 100 for done, w, h in loaded), loaded
    assert shot.stat().st_size > 50_000


@pytest.fixture(scope="module")
def advice(tmp_path_factory):
    """pagelab advise's JSON for randread (make native builds it): one large block."""
    randread = Path(__file__).resolve().parents[3] / "target" / "native" / "randread"
    if not randread.is_file():
        pytest.skip(f"{randread} is not built (make native)")
    out = tmp_path_factory.mktemp("advise") / "advice.json"
    subprocess.run([CLI, "advise", "--runs", "2", "--max-seconds", "0", "--warmup", "0", "--quiet", "--json", str(out), "--",
                    str(randread), "64", "20000"], check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    return out


def test_an_advise_report_sets_prediction_beside_measurement(advice, tmp_path):
    out = tmp_path / "advice.html"
    subprocess.run([CLI, "report", str(advice), "-o", str(out), "--python", sys.executable], check=True)
    text = out.read_text()
    mappings = json.loads(advice.read_text())["mappings"]
    assert len(images(text)) == 1
    rows = re.findall(r"<tr><td>([^<]+)</td>", text)
    assert rows == [m["mapping"] + (" (sum)" if m["additive"] else "") for m in mappings]
    assert "PMB: the percentage of the maximal benefit" in text and "bloat (MiB)" in text
    # Each measured speedup with its interval from the two rounds, or "no difference".
    assert "interval (×)" in text and "in 2 rounds" in text
    for m in mappings[1:]:
        shown = f"{m['measured_low']:.3f}–{m['measured_high']:.3f}"
        assert shown in text, m
    large = next(m for m in mappings if m["mapping"] == "large-dynamic@2M")
    assert large["bloat_bytes"] < large["large_pages"] * (2 << 20)
    # The same page from Python; a JSON that is not an advise result is refused.
    assert pagelab.report(advice, tmp_path / "py.html") and (tmp_path / "py.html").read_text() == text
    bad = tmp_path / "bad.json"
    bad.write_text('{"mappings": [{}], "analysis": {}}')
    with pytest.raises(ValueError, match="not an advise result"):
        pagelab.report(bad, tmp_path / "bad.html")
    assert not (tmp_path / "bad.html").exists()
    browser_path = _chromium()
    if browser_path is None:
        pytest.skip("no Chromium here (Debian: apt-get install chromium): the page was not opened in a browser")
    shot = _screenshot_path(tmp_path, "advise-report")
    problems, loaded, _, overflow, _ = _open(out, browser_path, shot)
    assert problems == [] and not overflow
    assert all(done and w > 100 and h > 100 for done, w, h in loaded), loaded


def test_a_repro_report_sets_each_claim_beside_the_paper(vrpt):
    # pagelab repro draws the report of its database: the paper, its experiments, and a
    # row per claim with the paper's number, ours and the verdict.
    out = vrpt
    text = (out / "report.html").read_text()
    assert "<h2>Variable Radix Page Table: A Page Table for Modern Architectures</h2>" in text
    rows = re.findall(r'<td class="(agrees|differs|not-reproducible)">', text)
    claims = json.loads((out / "verdicts.json").read_text())["claims"]
    assert len(rows) == len(claims) == 14
    assert rows == [c["outcome"] for c in claims]
    assert "<code>layouts</code>" in text and "VRPT 1 ≤ HPT" in text
    # Each claim's class beside it, and the counts by class as verdicts.json has them:
    # input checks are never counted with the measured agreements.
    classes = re.findall(r'</code><br>[^<]*</td><td>(measured|input check|not reproducible here)</td>', text)
    names = {"measured": "measured", "input-check": "input check", "not-reproducible": "not reproducible here"}
    assert classes == [names[c["class"]] for c in claims]
    n = json.loads((out / "verdicts.json").read_text())["counts"]
    assert (f"Measured: {n['measured_agree']} agree, {n['measured_differ']} differ; "
            f"input checks: {n['input_checks_agree']} of {n['input_checks']} agree") in text
    # A claim that differs says why.
    differs = [c for c in claims if c["outcome"] == "differs"]
    assert differs and all(c["cause"] for c in differs)
    assert all(f"Why: {html.escape(c['cause'])}" in text for c in differs)
