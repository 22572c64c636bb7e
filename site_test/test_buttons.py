"""The header buttons of each page: Colab and Binder open the page's own notebook in the
configured repository and branch, the repository button opens the repository, and the download
button serves the page's source. Offline, a launch link "works" when it has the service's form
and names a notebook that exists, tracked by git, at that path of the repository."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from functools import cache

import pytest

from site_test.book import COLAB, ROOT, BookConfig, site_dir
from site_test.browser import Visit
from site_test.links import LinkChecker

# Files from which mybinder.org builds an environment, at the repository root or in binder/.
BINDER_ENVIRONMENT_FILES = ("environment.yml", "requirements.txt", "Pipfile", "setup.py")


@cache
def tracked_by_git(path: str) -> bool:
    """Colab and Binder read the repository on GitHub, so an untracked file would be missing.
    Outside a git checkout (an unpacked archive) the file's presence has to do."""
    if not (ROOT / ".git").exists():
        return (ROOT / path).is_file()
    result = subprocess.run(
        ["git", "ls-files", "--error-unmatch", path], cwd=ROOT, capture_output=True, text=True
    )
    return result.returncode == 0


def launch_links(record: Visit, label: str) -> list[str]:
    return [link["href"] for link in record.data["launchLinks"] if link["label"] == label]


def test_configuration_names_a_github_repository_and_branch(config: BookConfig) -> None:
    """Colab opens notebooks from GitHub only, and Jupyter Book's default branch is `master`."""
    assert config.owner and config.repo, f"not a github.com repository: {config.repository_url}"
    assert config.branch, "repository.branch must be set (Jupyter Book defaults to master)"
    assert config.colab_url == COLAB, f"launch_buttons.colab_url is {config.colab_url!r}"


def test_colab_link(page: str, visit: Callable[[str], Visit], config: BookConfig) -> None:
    notebook = config.notebook_in_repo(page)
    colab = launch_links(visit(page), "Colab")
    if notebook is None:
        assert not colab, f"a page without a notebook has a Colab link: {colab}"
        return
    assert colab == [config.colab_link(notebook)]
    named = config.notebook_named_by_colab_link(colab[0])
    assert named == notebook and tracked_by_git(named), f"{named} is not in the repository"


def test_binder_link(page: str, visit: Callable[[str], Visit], config: BookConfig) -> None:
    notebook = config.notebook_in_repo(page)
    binder = launch_links(visit(page), "Binder")
    if notebook is None:
        assert not binder, f"a page without a notebook has a Binder link: {binder}"
        return
    assert binder == [config.binder_link(notebook)]
    environment = [
        name
        for name in BINDER_ENVIRONMENT_FILES
        for folder in ("", "binder/")
        if tracked_by_git(folder + name)
    ]
    assert environment, "Binder would find no environment file in the repository"


def test_no_other_launch_services(page: str, visit: Callable[[str], Visit]) -> None:
    labels = {link["label"] for link in visit(page).data["launchLinks"]}
    assert labels <= {"Colab", "Binder"}, f"unexpected launch buttons: {labels}"


def test_repository_button(page: str, visit: Callable[[str], Visit], config: BookConfig) -> None:
    assert visit(page).data["repositoryLinks"] == [config.repository_url]


def test_download_button_serves_the_source(
    page: str, visit: Callable[[str], Visit], config: BookConfig, links: LinkChecker
) -> None:
    """A notebook page offers its .ipynb (a valid notebook); a text page its .md."""
    downloads = visit(page).data["downloadLinks"]
    suffix = ".ipynb" if config.notebook_in_repo(page) else ".md"
    expected_path = "/_sources/" + page.removesuffix(".html") + suffix
    assert len(downloads) == 1 and downloads[0].endswith(expected_path), downloads
    target = links.fetch(downloads[0])
    assert target.status == 200, f"{downloads[0]}: HTTP {target.status}"
    if suffix == ".ipynb":
        notebook = json.loads(target.body)
        assert notebook.get("nbformat") == 4 and notebook.get("cells"), "not a notebook"
    else:
        assert target.body.strip(), "empty source file"


CHAPTER_NOTEBOOKS = sorted(
    path.relative_to(ROOT).as_posix()
    for path in (ROOT / BookConfig.load().path_to_book / "book").glob("*.ipynb")
)


@pytest.mark.parametrize("notebook", CHAPTER_NOTEBOOKS)
def test_every_notebook_has_a_page(notebook: str, config: BookConfig) -> None:
    """The other direction: each chapter notebook in the repository has a page with buttons."""
    page = notebook.removeprefix(config.path_to_book).removesuffix(".ipynb") + ".html"
    assert (site_dir() / page).is_file(), f"{notebook} has no page {page} in the built site"
