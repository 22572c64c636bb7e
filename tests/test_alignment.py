"""Every word of the invented language is aligned with the English word it translates
(companion.experiments.alignment, sec-transformer)."""

from __future__ import annotations

from companion.data.tasks import translation_task
from companion.experiments.alignment import aligned_positions, english_forms


def test_every_target_word_finds_the_english_word_it_translates():
    splits = translation_task(2000, seed=3)
    for source, target in zip(splits.train.source, splits.train.target):
        aligned = aligned_positions(target, source)
        assert all(aligned), (source, target)
        used = {j for positions in aligned for j in positions}
        # every English word is translated, but for "do"/"does" before "not"
        assert set(range(len(source))) - used <= {
            j for j, w in enumerate(source) if w in ("do", "does")
        }


def test_the_chapters_example_and_the_forms_of_one_word():
    source = "the big school meets some tables behind the small tiny chicken".split()
    target = "ko ravo riti ka muva tegi boti mize mas bofan bamu".split()
    assert aligned_positions(target + ["<eos>"], source) == [
        [0, 7], [2], [1], [0, 7], [10], [9], [8], [6], [4], [5], [3], []
    ]  # fmt: skip
    assert english_forms("bofan") == {"tables"} and english_forms("bofa") == {"table"}
    assert english_forms("<eos>") == frozenset()
