"""The viewer in a real browser: readable in JupyterLab's Dark theme, dollar amounts never set
as math, and the static HTML page opening with no network request and no script error."""

from __future__ import annotations

from pathlib import Path

import pytest

from budgetloop import load_trace
from budgetloop_widgets import to_html
from tests.jupyter_browser import (
    ARGS,
    ARTIFACTS,
    CHROMIUM,
    ROOT,
    chromium,
    jupyter_server,
    need_chromium,
    open_and_run_all,
    stripped_copy,
    wait_until_idle,
)

pytestmark = pytest.mark.browser

# WCAG contrast of an element's text against what is behind it: the colour (an SVG text's fill)
# composited over the first opaque background up its ancestors, over the page's white.
CONTRAST = """(el) => {
  const rgba = (s) => { const m = s.match(/[\\d.]+/g).map(Number); return [m[0], m[1], m[2], m.length > 3 ? m[3] : 1]; };
  const over = (top, under) => [0, 1, 2].map((i) => top[i] * top[3] + under[i] * (1 - top[3]));
  const layers = [];
  for (let node = el; node; node = node.parentElement) {
    const bg = rgba(getComputedStyle(node).backgroundColor);
    if (bg[3] > 0) { layers.push(bg); }
    if (bg[3] >= 1) { break; }
  }
  let back = [255, 255, 255];
  for (const layer of layers.reverse()) { back = over(layer, back); }
  const style = getComputedStyle(el);
  const fore = over(rgba(el instanceof SVGElement ? style.fill : style.color), back);
  const lum = (c) => { const [r, g, b] = c.map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; }); return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
  const [a, b] = [lum(fore), lum(back)].sort((x, y) => y - x);
  return {ratio: (a + 0.05) / (b + 0.05), fore: fore.map(Math.round), back: back.map(Math.round)};
}"""


def test_the_panel_reads_in_the_dark_theme_and_dollars_stay_text(tmp_path: Path) -> None:
    from playwright.sync_api import expect

    root = tmp_path / "root"
    root.mkdir()
    stripped_copy(ROOT / "notebooks" / "stepping.ipynb", root / "stepping.ipynb")
    with (
        jupyter_server("lab", root, tmp_path, theme="JupyterLab Dark") as lab,
        chromium(lab, tmp_path / "profile") as browser,
    ):
        page = browser.page
        open_and_run_all(page, lab.url("lab/tree/stepping.ipynb"))
        panel = page.locator(".bl-panel")
        expect(panel).to_be_visible(timeout=30_000)
        page.wait_for_function(
            "() => document.body.dataset.jpThemeLight === 'false'", timeout=15_000
        )
        panel.get_by_role("button", name="Step", exact=True).click()
        expect(panel.locator(".bl-step-head").first).to_contain_text("Step 0", timeout=15_000)
        wait_until_idle(page)
        checked = {
            "model text": panel.locator("pre.bl-text").first,
            "table header": panel.locator(".bl-table th").first,
            "chart title": panel.locator("svg .bl-chart-title").first,
            "context text": panel.locator(".bl-context pre").first,
        }
        for name, element in checked.items():
            seen = element.evaluate(CONTRAST)
            assert seen["ratio"] >= 4.5, f"{name}: {seen}"
        panel.scroll_into_view_if_needed()
        panel.screenshot(path=str(ARTIFACTS / "panel-dark.png"))
        # the setup cell's prose: "The budget allows USD 0.03: try USD 0.05 ..."
        prose = page.locator(".jp-RenderedMarkdown p", has_text="The budget allows")
        expect(prose).to_contain_text("allows USD 0.03: try USD 0.05")
        amounts = page.locator(".jp-RenderedMarkdown p", has_text="USD 0.0")
        assert amounts.count() == 2
        assert (
            page.locator(
                ".jp-RenderedMarkdown mjx-container, .jp-RenderedMarkdown .MathJax"
            ).count()
            == 0
        )
        assert panel.locator("mjx-container, .MathJax").count() == 0
    assert browser.errors == []


def test_the_static_page_opens_offline_and_navigates(tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    need_chromium()
    path = tmp_path / "trace.html"
    result = load_trace(ROOT / "notebooks" / "trace.json")
    to_html(result, path)
    requests: list[str] = []
    errors: list[str] = []
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=CHROMIUM, headless=True, args=ARGS
        )
        try:
            page = context.pages[0] if context.pages else context.new_page()
            page.on("request", lambda r: requests.append(r.url))
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(path.as_uri())
            rows = page.locator("tr[data-step]")
            expect(rows).to_have_count(len(result.steps))
            card = page.locator("#blh-step-3")
            assert card.get_attribute("open") is None
            rows.nth(3).locator("td").nth(2).click()
            expect(card).to_have_attribute("open", "")
            page.locator("nav a", has_text="the stop").click()
            expect(page.locator(f"#blh-step-{len(result.steps) - 1}")).to_have_attribute(
                "open", ""
            )
            page.locator("input.blh-search").fill("weather")
            visible = [r for r in range(rows.count()) if rows.nth(r).is_visible()]
            assert visible == [1]
            page.screenshot(path=str(ARTIFACTS / "static.png"), full_page=False)
        finally:
            context.close()
    assert requests == [path.as_uri()]
    assert errors == []
