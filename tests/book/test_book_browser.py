"""The spec book in a real browser: headless Chromium (Debian's ``chromium``, driven by
Playwright with ``executable_path``; never a downloaded browser) opens the index, an area page
and a kernel page with a failing requirement's trace, and the search finds a requirement by a
word of its statement. Screenshots of the three pages (laptop and phone widths) are saved under
``$AKC_ARTEFACTS`` when set (``.ci/run`` keeps them), else in the test's tmp dir."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.book.conftest import MUTANT_PAGE

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"]

try:
    from playwright.sync_api import sync_playwright
except ImportError:  # pragma: no cover - depends on the environment
    sync_playwright = None

pytestmark = [
    pytest.mark.skipif(sync_playwright is None, reason="playwright is not installed (pip install -e '.[test]')"),
    pytest.mark.skipif(not Path(CHROMIUM).is_file(), reason="no chromium browser (apt-get install -y chromium)"),
]


@pytest.fixture(scope="module")
def artefacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = os.environ.get("AKC_ARTEFACTS")
    path = Path(where) / "book-screenshots" if where else tmp_path_factory.mktemp("book-screenshots")
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="module")
def browser():  # type: ignore[no-untyped-def]
    with sync_playwright() as p:  # type: ignore[misc]
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


@pytest.mark.parametrize("width,height,label", [(1366, 900, "laptop"), (390, 844, "phone")])
def test_pages_open_and_render_in_chromium(browser, site: Path, artefacts: Path, width: int, height: int, label: str) -> None:  # type: ignore[no-untyped-def]
    page = browser.new_page(viewport={"width": width, "height": height})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))

    page.goto((site / "index.html").as_uri())
    assert page.title().startswith("The spec book")
    assert page.locator("#areas table tbody tr").count() >= 18
    assert page.locator("#kernels a[href^='kernel-']").count() >= 2
    page.screenshot(path=str(artefacts / f"{label}-index.png"))

    page.locator("#areas a[href='area-loop.html']:visible").first.click()
    assert page.locator("section.req#LOOP-001 .statement").is_visible()
    assert page.locator("section.req#LOOP-001 article.scenario ol.steps li").count() >= 3
    page.screenshot(path=str(artefacts / f"{label}-area-loop.png"))

    page.goto((site / MUTANT_PAGE).as_uri() + "#LOOP-001")
    section = page.locator("section.fail#LOOP-001")
    assert "observed" in section.locator("pre.message").inner_text()
    section.locator("details.trace > summary").click()
    assert section.locator(".tl-block h5", has_text="Model call 2").is_visible()
    section.scroll_into_view_if_needed()
    page.screenshot(path=str(artefacts / f"{label}-kernel-failing-trace.png"))

    # layout: nothing wider than the viewport at phone width (tables scroll inside their box)
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 1, f"page is {overflow}px wider than the viewport"
    assert not errors, errors
    page.close()


def test_search_finds_a_requirement_by_a_word_of_its_statement(browser, site: Path) -> None:  # type: ignore[no-untyped-def]
    page = browser.new_page()
    page.goto((site / "search.html").as_uri())
    page.fill("#q", "doom-loop")
    results = page.locator("#search-results li")
    assert results.count() >= 5
    assert results.locator("a", has_text="DOOM-001").count() == 1
    assert not page.locator("#all").is_visible()  # the no-JS list hides while searching
    # from the header box on another page, through the query string (works from file://)
    page.goto((site / "index.html").as_uri())
    page.fill("#q-top", "interactive")
    page.press("#q-top", "Enter")
    page.wait_for_selector("#search-results li")
    page.fill("#q", "titled 60 characters")
    hit = page.locator("#search-results li a").first
    hit.click()
    assert page.url.split("#")[1].startswith("SESS-")
    page.close()


@pytest.mark.parametrize("name", ["index.html", "area-tool.html", "area-budget.html", "search.html", "glossary.html"])
def test_no_horizontal_cut_at_phone_width(browser, site: Path, name: str) -> None:  # type: ignore[no-untyped-def]
    """At phone width nothing is cut: neither the page nor a table inside its scrolling box is
    wider than the screen (the areas table was; issue 26 §4)."""
    page = browser.new_page(viewport={"width": 390, "height": 844})
    page.goto((site / name).as_uri())
    assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 1
    cut = page.evaluate(
        "Array.from(document.querySelectorAll('.scroll')).filter(e => e.offsetParent !== null)"
        ".map(e => e.scrollWidth - e.clientWidth).filter(d => d > 1)"
    )
    assert not cut, f"{name}: {len(cut)} box(es) scroll sideways by {cut}px"
    page.close()


def test_the_readers_questions_are_answered_from_the_book(browser, site: Path) -> None:  # type: ignore[no-untyped-def]
    """The reader's questions, from the search box and links alone (no id known in advance):
    "what must happen when max_iterations is reached?" and "what does Modify do?"."""
    page = browser.new_page(viewport={"width": 1366, "height": 900})

    def ask(query: str, wanted: str, limit: int = 5) -> str:
        page.goto((site / "index.html").as_uri())
        page.fill("#q-top", query)
        page.press("#q-top", "Enter")
        page.wait_for_selector("#search-results li")
        ids = page.locator("#search-results li > a").all_inner_texts()[:limit]
        assert wanted in ids, f"{query!r}: {wanted} not among the first {limit} hits {ids}"
        page.locator("#search-results li > a", has_text=wanted).first.click()
        assert page.url.endswith(f"#{wanted}")
        return page.locator(f"section.req#{wanted} .statement").inner_text()

    assert "budget_exhausted" in ask("max_iterations", "BUDGET-002")
    assert "arguments are merged" in ask("Modify", "TOOL-011", limit=1)
    # "why does smolagents not pass ordered results?": the requirement, the kernel's verdict chip,
    # the requirement that blocks it (one fault, one verdict), and that one's cause
    ask("order results", "TOOL-003", limit=3)
    page.locator("section.req#TOOL-003 .verdicts a[href='kernel-smolagents.html#TOOL-003']").click()
    blocked = page.locator("section.fail#TOOL-003 .blocked-by")
    assert "LOOP-012" in blocked.inner_text()
    blocked.locator("a", has_text="LOOP-012").click()
    why = page.locator("section.fail#LOOP-012 .cause").inner_text()
    assert why.startswith("Why:") and "smolagents/" in why, why  # the cause, with its line of the framework's source
    page.close()
