"""The experiment behind sec-bahdanau's exercise ex-bahdanau-dates-plain: its scores and the
committed results the solution prints."""

from __future__ import annotations

from companion.data.text import ParallelCorpus
from companion.experiments.fixed_context_dates import (
    BANDS,
    DECODERS,
    load_fixed_context_results,
    scores,
)


def test_scores_count_the_bands_and_the_fields():
    sources = [list("8/4/2035"), list("25.07.38"), list("TUESDAY, SEPTEMBER 26, 2006")]
    targets = [list("2035-08-04"), list("2038-07-25"), list("2006-09-26")]
    predictions = [list("2035-08-04"), list("2038-07-52"), list("2006-10-26")]
    result = scores(predictions, ParallelCorpus(sources, targets))
    assert result["exact_match"] == round(1 / 3, 4)
    assert result["exact_match_6_10"] == 0.5 and result["count_6_10"] == 2
    assert result["exact_match_20_29"] == 0.0 and result["count_20_29"] == 1
    assert result["count_11_19"] == 0 and result["exact_match_11_19"] is None
    assert result["year_right"] == 1.0
    assert result["month_right"] == round(2 / 3, 4) and result["day_right"] == round(2 / 3, 4)


def test_the_committed_results_hold_every_seed_and_model():
    results = load_fixed_context_results()
    runs = {(run["seed"], run["model"]): run for run in results["runs"]}
    assert set(runs) == {(seed, model) for seed in (0, 1, 2) for model in DECODERS}
    for run in runs.values():
        assert 0 <= run["exact_match"] <= 1
        assert sum(run[f"count_{low}_{high}"] for low, high in BANDS) == 800  # the test dates
    assert results["settings"]["num_epochs"] == {"fixed context": 10, "attention": 3}
