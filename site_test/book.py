"""What the site should contain, read from the book's own configuration (`_config.yml`,
`_toc.yml`) and the built tree, so that the tests never hard-code the repository or the pages."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import yaml

ROOT = Path(__file__).resolve().parents[1]
COLAB = "https://colab.research.google.com"
# sphinx-book-theme's prefixes for Binder's `urlpath`, by `launch_buttons.notebook_interface`.
NOTEBOOK_INTERFACE_PATHS = {"classic": "tree", "jupyterlab": "lab/tree"}
# Pages that are not content: Sphinx's generated index and search page (tested on its own).
GENERATED_PAGES = {"genindex.html", "search.html"}


def site_dir() -> Path:
    """The built site; SITE_TEST_HTML points the tests at another copy (e.g. a broken one)."""
    return Path(os.environ.get("SITE_TEST_HTML", ROOT / "_build" / "html")).resolve()


def student_site_dir() -> Path:
    """The student edition (`make student`); SITE_TEST_STUDENT_HTML points at another copy."""
    default = ROOT / "_build" / "student" / "html"
    return Path(os.environ.get("SITE_TEST_STUDENT_HTML", default)).resolve()


def screenshot_dir() -> Path:
    """`_build/screenshots` next to `_build/html`."""
    return site_dir().parent / "screenshots"


def is_redirect_stub(html_file: Path) -> bool:
    """Sphinx's root `index.html` only forwards to the first page with a meta refresh."""
    head = html_file.read_text(encoding="utf-8", errors="replace")[:2000]
    return re.search(r'<meta[^>]+http-equiv="refresh"', head, re.IGNORECASE) is not None


def content_pages(site: Path) -> list[str]:
    """Every page a reader can open, as paths relative to the site root (`book/intro.html`)."""
    pages = []
    for path in sorted(site.rglob("*.html")):
        relative = path.relative_to(site).as_posix()
        if relative.startswith("_") or relative in GENERATED_PAGES or is_redirect_stub(path):
            continue
        pages.append(relative)
    return pages


def screenshot_name(page: str) -> str:
    """`book/intro.html` -> `book__intro.png`."""
    return page.removesuffix(".html").replace("/", "__") + ".png"


@dataclass(frozen=True)
class BookConfig:
    """The parts of `_config.yml` and `_toc.yml` that decide the site's links."""

    repository_url: str
    owner: str
    repo: str
    branch: str
    path_to_book: str  # "" or "docs/" style: empty, or ending in one slash
    binderhub_url: str
    colab_url: str
    binder_ui: str
    root_page: str

    @classmethod
    def load(cls, root: Path = ROOT) -> BookConfig:
        config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
        toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
        repository = config.get("repository") or {}
        launch = config.get("launch_buttons") or {}
        url = str(repository.get("url", "")).rstrip("/")
        parts = urlsplit(url)
        owner, _, repo = parts.path.strip("/").removesuffix(".git").partition("/")
        book_path = str(repository.get("path_to_book") or "").strip("/")
        interface = launch.get("notebook_interface", "classic")
        return cls(
            repository_url=url,
            owner=owner if parts.netloc == "github.com" else "",
            repo=repo,
            branch=str(repository.get("branch", "")),
            path_to_book=f"{book_path}/" if book_path else "",
            binderhub_url=str(launch.get("binderhub_url", "")).rstrip("/"),
            colab_url=str(launch.get("colab_url", "")).rstrip("/"),
            binder_ui=NOTEBOOK_INTERFACE_PATHS.get(interface, f"<unknown {interface}>"),
            root_page=f"{toc['root']}.html",
        )

    def notebook_in_repo(self, page: str) -> str | None:
        """The repository path of the notebook a page was built from, if it was a notebook."""
        source = self.path_to_book + page.removesuffix(".html") + ".ipynb"
        return source if (ROOT / source).is_file() else None

    def colab_link(self, notebook: str) -> str:
        """Colab's form for a notebook on GitHub: /github/<owner>/<repo>/blob/<branch>/<path>."""
        return f"{COLAB}/github/{self.owner}/{self.repo}/blob/{self.branch}/{notebook}"

    def binder_link(self, notebook: str) -> str:
        """What sphinx-book-theme 1.3 (Jupyter Book 1.0.4) builds for a GitHub repository."""
        base = f"{self.binderhub_url}/v2/gh/{self.owner}/{self.repo}/{self.branch}"
        return f"{base}?urlpath={self.binder_ui}/{notebook}"

    def notebook_named_by_colab_link(self, link: str) -> str | None:
        """The repository path a Colab link opens, or None if the link is not of Colab's form."""
        prefix = f"{COLAB}/github/{self.owner}/{self.repo}/blob/{self.branch}/"
        return link.removeprefix(prefix) if link.startswith(prefix) else None
