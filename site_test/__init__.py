"""Browser test of the built site (`make site-test`): every page of `_build/html`, opened
offline in headless Chromium. Kept out of `tests/` so that `make test` does not need a browser."""
