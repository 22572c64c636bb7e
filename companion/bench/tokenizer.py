"""``python -m companion.bench tokenizer``: training time and encode throughput of companion's
byte-level BPE, against tiktoken with the same merges (sec-tokenization).

The text: companion's shipped corpus (:mod:`companion.corpus`: the book's prose, Chinese, a
code snapshot, generated numbers) followed by companion's own installed source files, cut at
``--megabytes`` of UTF-8 (about 1 MB by default; if it is shorter, it is repeated, and the
report says how much of it is distinct).

- **training**: ``Tokenizer.train(text, --vocab-size)``, the best and the median of
  ``--repeats`` runs (each run starts from nothing: pre-tokenizing, counting, merging);
- **encoding**: the whole text, by companion (a fresh tokenizer each run, so its cache of
  pre-tokens starts empty) and by a ``tiktoken.Encoding`` built from the same merges and
  pattern (``encode_ordinary``, one thread). Both must give identical ids.
- **long pre-tokens**: two runs of ``--run-length`` letters with no space (40,000 by default),
  each one pre-token: ``"a" * 40000`` and random ASCII letters (seeded). Each is encoded by
  both, and the table gives companion's time over tiktoken's; then training again, on the text
  followed by the random run, shows what such a word costs training.

tiktoken is a test dependency of the book, not a dependency of companion; without it only
companion's numbers are printed. The report goes to stdout (:mod:`companion.bench.report`);
``--output PATH`` writes the results as JSON, with the machine and versions that produced them.
It prints measurements; no test times anything.
"""

from __future__ import annotations

import argparse
import functools
import random
import string
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

import companion
from companion import corpus
from companion.bench.common import (
    add_output,
    load_average,
    log,
    run_lines,
    run_record,
    write_results,
)
from companion.bench.report import tokenizer_report
from companion.tokenizer import Tokenizer

DIFFER = "IDS DIFFER"


def build_text(megabytes: float) -> tuple[str, int]:
    """``(text, distinct bytes)``: the corpus and companion's source, about ``megabytes`` MB."""
    package = Path(companion.__file__).parent
    parts = [corpus.load(kind) for kind in corpus.KINDS]
    parts += [path.read_text(encoding="utf-8") for path in sorted(package.rglob("*.py"))]
    distinct = "\n".join(parts).encode("utf-8")
    target = int(megabytes * 1_000_000)
    data = (distinct * (target // len(distinct) + 1))[:target]
    return data.decode("utf-8", errors="ignore"), min(len(distinct), target)


def long_runs(length: int) -> dict[str, str]:
    """Two words of ``length`` letters: one letter repeated, and random letters (seeded)."""
    rng = random.Random(0)
    return {
        f'"a" * {length}': "a" * length,
        f"{length} random letters": "".join(rng.choices(string.ascii_letters, k=length)),
    }


def fresh_encode(tok: Tokenizer, text: str) -> list[int]:
    """``text`` encoded by a copy of ``tok`` whose cache of pre-tokens starts empty."""
    return Tokenizer(tok.merges, (), tok.pattern).encode(text)


def timed(fn: Callable[[], object], repeats: int) -> tuple[list[float], object]:
    seconds, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        seconds.append(time.perf_counter() - start)
    return seconds, result


def _rounded(seconds: list[float]) -> list[float]:
    return [round(t, 6) for t in seconds]


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m companion.bench tokenizer",
        description="Byte-level BPE: training time, and encode throughput against tiktoken.",
    )
    parser.add_argument("--megabytes", type=float, default=1.0, help="size of the text (MB)")
    parser.add_argument("--vocab-size", type=int, default=4096, help="tokens after training")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs (best and median)")
    parser.add_argument("--run-length", type=int, default=40_000, help="letters in a long word")
    add_output(parser)
    args = parser.parse_args(list(argv))
    text, distinct = build_text(args.megabytes)
    size = len(text.encode("utf-8"))
    load_before, start = load_average(), time.perf_counter()
    log(f"[tokenizer] training to {args.vocab_size} tokens, {args.repeats} runs")
    train_s, tok = timed(lambda: Tokenizer.train(text, args.vocab_size), args.repeats)
    assert isinstance(tok, Tokenizer)
    log("[tokenizer] encoding with companion")
    encode_s, ids = timed(functools.partial(fresh_encode, tok, text), args.repeats)
    assert isinstance(ids, list)
    encoders = {"companion": encode_s}
    runs = long_runs(args.run_length)
    log(f"[tokenizer] encoding two {args.run_length:,}-letter words with companion")
    run_s = {}
    for name, word in runs.items():
        run_s[name], run_ids = timed(functools.partial(fresh_encode, tok, word), args.repeats)
        assert isinstance(run_ids, list) and tok.decode(run_ids) == word
    tiktoken_run_s: dict[str, list[float]] = {}
    try:
        import tiktoken
    except ImportError:
        agreement = "tiktoken is not installed"
    else:
        log("[tokenizer] encoding with tiktoken")
        enc = tiktoken.Encoding(
            name="companion-bpe",
            pat_str=tok.pattern,
            mergeable_ranks={token: i for i, token in enumerate(tok.vocab)},
            special_tokens={},
        )
        encoders["tiktoken"], tik_ids = timed(lambda: enc.encode_ordinary(text), args.repeats)
        agreement = "identical ids" if tik_ids == ids else DIFFER
        for name, word in runs.items():
            run_seconds, tik_run = timed(functools.partial(enc.encode_ordinary, word), args.repeats)
            tiktoken_run_s[name] = run_seconds
            if tik_run != tok.encode(word):
                agreement = DIFFER
    log(f"[tokenizer] training on the text and a {args.run_length:,}-letter word")
    with_run = text + " " + runs[f"{args.run_length} random letters"]
    train_run_s, _ = timed(lambda: Tokenizer.train(with_run, args.vocab_size), args.repeats)
    results: dict[str, Any] = {
        **run_record("tokenizer", torch.device("cpu"), 1, load_before),
        "seconds": round(time.perf_counter() - start, 1),
        "settings": {
            "megabytes": args.megabytes,
            "vocab_size": args.vocab_size,
            "repeats": args.repeats,
            "run_length": args.run_length,
        },
        "text": {
            "contents": "the book's prose, Chinese, code, numbers, companion's source",
            "bytes": size,
            "distinct_bytes": distinct,
            "tokens": len(ids),
        },
        "training": {"vocab_size": len(tok), "seconds": _rounded(train_s)},
        "encoding": {
            "agreement": agreement,
            "encoders": {name: _rounded(seconds) for name, seconds in encoders.items()},
        },
        "long_words": [
            {
                "word": name,
                "companion": _rounded(run_s[name]),
                "tiktoken": _rounded(tiktoken_run_s[name]) if name in tiktoken_run_s else None,
            }
            for name in runs
        ],
        "training_with_long_word": _rounded(train_run_s),
    }
    write_results(results, args.output, "tokenizer")
    lines = [
        "Byte-level BPE: training, and encoding against tiktoken with the same merges",
        *run_lines(results, f"{args.megabytes} MB of text, vocabulary {args.vocab_size}"),
        "",
        tokenizer_report(results).markdown(),
    ]
    print("\n".join(lines))
    return 0 if agreement != DIFFER else 1
