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

tiktoken is a test dependency of the book, not a dependency of companion; without it only
companion's numbers are printed. It prints measurements; no test times anything.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from companion import corpus
from companion.bench.common import load_average, log
from companion.device import cpu_name
from companion.tokenizer import Tokenizer, spell_out


def build_text(megabytes: float) -> tuple[str, int]:
    """``(text, distinct bytes)``: the corpus and companion's source, about ``megabytes`` MB."""
    package = Path(corpus.__file__).parent
    parts = [corpus.load(kind) for kind in corpus.KINDS]
    parts += [path.read_text(encoding="utf-8") for path in sorted(package.rglob("*.py"))]
    distinct = "\n".join(parts).encode("utf-8")
    target = int(megabytes * 1_000_000)
    data = (distinct * (target // len(distinct) + 1))[:target]
    return data.decode("utf-8", errors="ignore"), min(len(distinct), target)


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
    args = parser.parse_args(list(argv))
    text, distinct = build_text(args.megabytes)
    size = len(text.encode("utf-8"))
    load_before = load_average()
    log(f"[tokenizer] training to {args.vocab_size} tokens, {args.repeats} runs")
    train_s, tok = timed(lambda: Tokenizer.train(text, args.vocab_size), args.repeats)
    assert isinstance(tok, Tokenizer)
    log("[tokenizer] encoding with companion")
    fresh = lambda: Tokenizer(tok.merges, (), tok.pattern).encode(text)  # noqa: E731
    encode_s, ids = timed(fresh, args.repeats)
    rows = [("companion", min(encode_s))]
    try:
        import tiktoken
    except ImportError:
        same = "tiktoken is not installed"
    else:
        log("[tokenizer] encoding with tiktoken")
        enc = tiktoken.Encoding(
            name="companion-bpe",
            pat_str=spell_out(tok.pattern),
            mergeable_ranks={token: i for i, token in enumerate(tok.vocab)},
            special_tokens={},
        )
        enc_s, tik_ids = timed(lambda: enc.encode_ordinary(text), args.repeats)
        rows.append(("tiktoken", min(enc_s)))
        same = "identical ids" if tik_ids == ids else "IDS DIFFER"
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
    return 0 if same != "IDS DIFFER" else 1
