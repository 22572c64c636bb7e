"""axe-core's accessibility rules, run in a page that the browser has open.

axe-core comes inside the `axe-playwright-python` wheel (its `axe.min.js`, axe-core 4.12), so
nothing is fetched: the script is evaluated in the page, and `axe.run` checks the page as it
is. Only the WCAG 2.1 A and AA rules run, all of them in light mode (the one a page opens in
here). Colours depend on the theme's mode, so the rules about colour run again in dark mode:
sphinx-book-theme switches with the `data-theme` attribute of <html>, which is set here directly
(as the theme's own button does) instead of reloading. Colour contrast is most of axe's time on
a chapter (thousands of code tokens and MathJax glyphs): seconds per mode."""

from __future__ import annotations

from dataclasses import dataclass

from axe_playwright_python.base import AXE_SCRIPT
from playwright.sync_api import Page

WCAG_TAGS = ("wcag2a", "wcag2aa", "wcag21a", "wcag21aa")
MODES = ("light", "dark")
# The WCAG A/AA rules whose outcome depends on the colours (the rest see the same markup).
COLOUR_RULES = ("color-contrast", "link-in-text-block")
MAX_TARGETS = 10  # elements named per rule in a failure message

_RUN_JS = r"""
async (runOnly) => {
  const results = await axe.run(document, {runOnly, resultTypes: ['violations']});
  return {version: axe.version, violations: results.violations.map(v => ({
      rule: v.id, impact: v.impact || '', help: v.help,
      targets: v.nodes.map(n => n.target.join(' ')),
      why: (v.nodes[0].failureSummary || '').replace(/\s+/g, ' ').trim()}))};
}
"""

# The theme's colour mode, set at once: transitions off, so no colour is read mid-change.
_SET_MODE_JS = """
async (mode) => {
  if (!document.getElementById('site-test-no-transitions')) {
    const style = document.createElement('style');
    style.id = 'site-test-no-transitions';
    style.textContent = '*, *::before, *::after { transition: none !important; }';
    document.head.append(style);
  }
  document.documentElement.dataset.theme = mode;
  document.documentElement.dataset.mode = mode;
  await new Promise(resolve => requestAnimationFrame(() => requestAnimationFrame(resolve)));
}
"""


@dataclass(frozen=True)
class Violation:
    """One rule that some elements of a page break, in one colour mode."""

    mode: str
    rule: str
    impact: str  # minor, moderate, serious or critical
    help: str
    targets: tuple[str, ...]  # CSS selectors of the elements, as axe names them
    why: str  # axe's explanation for the first element (for colours: both, and the ratio)

    def __str__(self) -> str:
        shown = ", ".join(self.targets[:MAX_TARGETS])
        more = len(self.targets) - MAX_TARGETS
        return (
            f"{self.rule} ({self.impact}, {self.mode} mode): {self.help}; "
            f"{len(self.targets)} element(s): {shown}"
            + (f" and {more} more" if more > 0 else "")
            + f". The first: {self.why}"
        )


def check(tab: Page, modes: tuple[str, ...] = MODES) -> tuple[str, list[Violation]]:
    """axe's version and its WCAG 2.1 A/AA violations on the open page: every rule in the first
    of `modes`, the colour rules in the others. Leaves the page in the last mode."""
    tab.evaluate(AXE_SCRIPT)
    version, violations = "", []
    for mode in modes:
        tab.evaluate(_SET_MODE_JS, mode)
        run_only = (
            {"type": "tag", "values": list(WCAG_TAGS)}
            if mode == modes[0]
            else {"type": "rule", "values": list(COLOUR_RULES)}
        )
        result = tab.evaluate(_RUN_JS, run_only)
        version = result["version"]
        violations += [
            Violation(mode, v["rule"], v["impact"], v["help"], tuple(v["targets"]), v["why"])
            for v in result["violations"]
        ]
    return version, violations
