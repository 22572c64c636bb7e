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
companion's numbers are printed. It prints measurements; no test times anything.
"""

from __future__ import annotations

import argparse
import functools
import random
import statistics
import string
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import companion
from companion import corpus
from companion.bench.common import load_average, log
from companion.device import cpu_name
from companion.tokenizer import Tokenizer


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


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m companion.bench tokenizer",
        description="Byte-level BPE: training time, and encode throughput against tiktoken.",
    )
    parser.add_argument("--megabytes", type=float, default=1.0, help="size of the text (MB)")
    parser.add_argument("--vocab-size", type=int, default=4096, help="tokens after training")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs (best and median)")
    parser.add_argument("--run-length", type=int, default=40_000, help="letters in a long word")
    args = parser.parse_args(list(argv))
    text, distinct = build_text(args.megabytes)
    size = len(text.encode("utf-8"))
    load_before = load_average()
    log(f"[tokenizer] training to {args.vocab_size} tokens, {args.repeats} runs")
    train_s, tok = timed(lambda: Tokenizer.train(text, args.vocab_size), args.repeats)
    assert isinstance(tok, Tokenizer)
    log("[tokenizer] encoding with companion")
    encode_s, ids = timed(functools.partial(fresh_encode, tok, text), args.repeats)
    rows = [("companion", min(encode_s))]
    runs = long_runs(args.run_length)
    log(f"[tokenizer] encoding two {args.run_length:,}-letter words with companion")
    run_s = {}
    for name, word in runs.items():
        run_s[name], run_ids = timed(functools.partial(fresh_encode, tok, word), args.repeats)
        assert isinstance(run_ids, list) and tok.decode(run_ids) == word
    tiktoken_run_s: dict[str, float] = {}
    try:
        import tiktoken
    except ImportError:
        same = "tiktoken is not installed"
    else:
        log("[tokenizer] encoding with tiktoken")
        enc = tiktoken.Encoding(
            name="companion-bpe",
            pat_str=tok.pattern,
            mergeable_ranks={token: i for i, token in enumerate(tok.vocab)},
            special_tokens={},
        )
        enc_s, tik_ids = timed(lambda: enc.encode_ordinary(text), args.repeats)
        rows.append(("tiktoken", min(enc_s)))
        same = "identical ids" if tik_ids == ids else "IDS DIFFER"
        for name, word in runs.items():
            run_seconds, tik_run = timed(functools.partial(enc.encode_ordinary, word), args.repeats)
            tiktoken_run_s[name] = min(run_seconds)
            if tik_run != tok.encode(word):
                same = "IDS DIFFER"
    log(f"[tokenizer] training on the text and a {args.run_length:,}-letter word")
    with_run = text + " " + runs[f"{args.run_length} random letters"]
    train_run_s, _ = timed(lambda: Tokenizer.train(with_run, args.vocab_size), args.repeats)
    assert isinstance(ids, list)
    print(
        f"text: {size / 1e6:.2f} MB of UTF-8 ({distinct / 1e6:.2f} MB distinct: the book's prose, "
        f"Chinese, code, numbers, companion's source); {len(ids):,} tokens, "
        f"{size / len(ids):.2f} bytes per token"
    )
    print(f"cpu: {cpu_name()}; load average before: {load_before}, after: {load_average()}")
    print(
        f"training to {len(tok)} tokens: best {min(train_s):.2f} s, "
        f"median {statistics.median(train_s):.2f} s of {args.repeats}"
    )
    print(f"encoding ({same}), best of {args.repeats}:")
    print("| encoder | seconds | MB/s | tokens/s | x companion |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, seconds in rows:
        print(
            f"| {name} | {seconds:.3f} | {size / 1e6 / seconds:.2f} | "
            f"{len(ids) / seconds:,.0f} | {rows[0][1] / seconds:.1f} |"
        )
    print(f"long words (one pre-token each, {same}), best of {args.repeats}:")
    print("| word | companion s | tiktoken s | companion / tiktoken |")
    print("| --- | ---: | ---: | ---: |")
    for name in runs:
        mine, theirs = min(run_s[name]), tiktoken_run_s.get(name)
        ratio = f"{mine / theirs:.0f}" if theirs else "-"
        shown = f"{theirs:.4f}" if theirs else "-"
        print(f"| {name} | {mine:.4f} | {shown} | {ratio} |")
    print(
        f"training to {args.vocab_size} tokens on the text and {args.run_length:,} random "
        f"letters: best {min(train_run_s):.2f} s, median {statistics.median(train_run_s):.2f} s"
    )
    return 0 if same != "IDS DIFFER" else 1
