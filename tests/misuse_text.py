"""What a student does wrong with companion's tokenizer, and the error each gets: the rows that
``tests/test_misuse.py`` appends to its ``MISUSES`` table (sec-tokenization).

Each row is ``(what a student does, a zero-argument call, the exception, a regex its message
must match)``. Every message names the argument and what it got.
"""

from __future__ import annotations

import functools
import re
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from companion.tokenizer import Tokenizer, merge, train_merges

EOT = "<|endoftext|>"


@functools.cache
def tokenizer() -> Tokenizer:
    """A small trained tokenizer with one special token (270 ids: 0..269)."""
    return Tokenizer.train("the cat sat on the mat; the cats sat on the mats", 270, [EOT])


def load_written(text: str, name: str = "bpe.json") -> Callable[[], Tokenizer]:
    """``Tokenizer.load`` of a file holding ``text``."""

    def call() -> Tokenizer:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / name
            path.write_text(text, encoding="utf-8")
            return Tokenizer.load(path)

    return call


MISUSES: list[tuple[str, Callable[[], object], type[Exception], str]] = [
    # special tokens
    (
        "special_tokens='<eos>': a str where a list is meant (five tokens '<', 'e', 'o', ...)",
        lambda: Tokenizer(special_tokens="<eos>"),
        TypeError,
        r"special_tokens must be a list of strings such as \['<\|endoftext\|>'\], got '<eos>'",
    ),
    (
        "Tokenizer.train(text, 300, special_tokens='<eos>')",
        lambda: Tokenizer.train("the eos of the text", 300, special_tokens="<eos>"),
        TypeError,
        r"special_tokens must be a list of strings .*, got '<eos>'",
    ),
    (
        "train_merges(text, 10, special_tokens='<eos>')",
        lambda: train_merges("the eos of the text", 10, special_tokens="<eos>"),
        TypeError,
        r"special_tokens must be a list of strings .*, got '<eos>'",
    ),
    (
        "special tokens given as a set: their ids would change from run to run",
        lambda: Tokenizer(special_tokens={EOT, "<|pad|>"}),
        TypeError,
        r"special_tokens must be ordered \(a list or tuple\)",
    ),
    (
        "the same special token twice",
        lambda: Tokenizer(special_tokens=[EOT, EOT]),
        ValueError,
        r"special_tokens has duplicates: \['<\|endoftext\|>', '<\|endoftext\|>'\]",
    ),
    (
        "an empty special token",
        lambda: Tokenizer(special_tokens=[EOT, ""]),
        ValueError,
        r"special_tokens\[1\] is the empty string",
    ),
    (
        "a special token given by its id",
        lambda: Tokenizer(special_tokens=[50256]),
        TypeError,
        r"special_tokens\[0\] must be a str, got 50256",
    ),
    # vocabulary size, merges, pattern
    (
        "vocab_size below 256 + the special tokens",
        lambda: Tokenizer.train("the cat", 256, special_tokens=[EOT]),
        ValueError,
        r"vocab_size must be at least 256 \(the bytes\) \+ 1 special tokens, got 256",
    ),
    (
        "vocab_size=300.0, a float",
        lambda: Tokenizer.train("the cat", 300.0),
        TypeError,
        r"vocab_size must be an int, got 300.0 \(float\)",
    ),
    (
        "vocab_size=True, a bool",
        lambda: Tokenizer.train("the cat", True),
        TypeError,
        r"vocab_size must be an int, got True \(bool\)",
    ),
    (
        "num_merges=-1",
        lambda: train_merges("the cat", -1),
        ValueError,
        r"num_merges must be an int >= 0, got -1",
    ),
    (
        "a merge of three ids",
        lambda: Tokenizer([(97, 98, 99)]),
        TypeError,
        r"merges\[0\] must be a pair of token ids, got \(97, 98, 99\)",
    ),
    (
        "a merge that uses an id learned later",
        lambda: Tokenizer([(97, 98), (300, 1)]),
        ValueError,
        r"merges\[1\] = \(300, 1\) uses an id that is not defined yet",
    ),
    (
        "the same merge twice",
        lambda: Tokenizer([(97, 98), (97, 98)]),
        ValueError,
        r"merges\[1\] = \(97, 98\) repeats merges\[0\]",
    ),
    (
        "a compiled pattern where its string is meant",
        lambda: Tokenizer(pattern=re.compile(r"\w+|\W")),
        TypeError,
        r"pattern must be a str \(a regular expression\), got re.compile",
    ),
    (
        "a pattern that does not compile",
        lambda: Tokenizer.train("the cat", 300, pattern=r"( ?\p{L}+"),
        ValueError,
        r"pattern does not compile: missing \).* in '\( \?\\\\p\{L\}\+'",
    ),
    (
        "a pattern whose matches leave characters out: encoding would drop them",
        lambda: Tokenizer(pattern=r"(\d{1,3})| ?\p{L}+").encode("the cat's mat"),
        ValueError,
        r"""leaves text\[7\] = "'" out of every pre-token""",
    ),
    (
        "training with a pattern whose matches leave characters out",
        lambda: Tokenizer.train("the cat's mat", 300, pattern=r" ?\p{L}+"),
        ValueError,
        r"pattern ' \?\\\\p\{L\}\+' leaves text\[7\] = \"'\" out of every pre-token",
    ),
    # encode
    (
        "encode(b'...'): bytes where text is meant",
        lambda: tokenizer().encode(b"the cat"),
        TypeError,
        r"text must be a str, got bytes",
    ),
    (
        "allowed_special='<|endoftext|>': a str that is not 'all'",
        lambda: tokenizer().encode("the cat", allowed_special=EOT),
        TypeError,
        r"allowed_special must be 'all' or a collection of special tokens, got '<\|endoftext\|>'",
    ),
    (
        "allowed_special names a token the tokenizer does not have",
        lambda: tokenizer().encode("the cat", allowed_special={"<|eot|>"}),
        ValueError,
        r"allowed_special has unknown special tokens \['<\|eot\|>'\]",
    ),
    (
        "a special token inside the text, not allowed",
        lambda: tokenizer().encode(f"the cat{EOT}"),
        ValueError,
        r"text contains the special token '<\|endoftext\|>' at index 7, which encode does not "
        r"allow: pass allowed_special=\{'<\|endoftext\|>'\}",
    ),
    (
        "disallowed_special=None",
        lambda: tokenizer().encode("the cat", disallowed_special=None),
        TypeError,
        r"disallowed_special must be 'all' or a collection of special tokens, got None",
    ),
    (
        "a lone surrogate in the text",
        lambda: tokenizer().encode("a\ud800"),
        ValueError,
        r"text has a lone surrogate at index 1, which UTF-8 cannot encode",
    ),
    (
        "encode_word('cat'): a str where the pre-token's bytes are meant",
        lambda: tokenizer().encode_word("cat"),
        TypeError,
        r"word must be bytes \(a pre-token's UTF-8\), got 'cat'",
    ),
    (
        "merge with the pair as a list",
        lambda: merge([1, 2, 3], [1, 2], 256),
        TypeError,
        r"pair must be a tuple of two ids such as \(101, 114\), got \[1, 2\]",
    ),
    # decode
    (
        "decode of a float tensor (logits.argmax(-1).float())",
        lambda: tokenizer().decode(torch.tensor([116.0, 104.0])),
        TypeError,
        r"ids\[0\] is 116.0 \(float\), not an integer token id",
    ),
    (
        "decode of a bool array",
        lambda: tokenizer().decode(np.array([True, False])),
        TypeError,
        r"ids\[0\] is True \(bool\), not an integer token id",
    ),
    (
        "decode of numpy ids with one out of range",
        lambda: tokenizer().decode(np.array([116, 270], dtype=np.int32)),
        ValueError,
        r"ids: 270 is not a token id of this tokenizer \(0\.\.269\), at ids\[1\]",
    ),
    (
        "decode of a negative id",
        lambda: tokenizer().decode_bytes([116, -1]),
        ValueError,
        r"ids: -1 is not a token id of this tokenizer \(0\.\.269\), at ids\[1\]",
    ),
    (
        "decode of a batch of sequences (a 2-d tensor)",
        lambda: tokenizer().decode(torch.zeros(2, 3, dtype=torch.long)),
        ValueError,
        r"ids must be 1-d \(one sequence of ids\), got shape \(2, 3\)",
    ),
    (
        "decode of a list of lists",
        lambda: tokenizer().decode([[116, 104], [101]]),
        TypeError,
        r"ids\[0\] is \[116, 104\] \(list\), not an integer token id",
    ),
    (
        "decode('the cat'): text where ids are meant",
        lambda: tokenizer().decode("the cat"),
        TypeError,
        r"ids must be a sequence of token ids .*, got str: 'the cat'",
    ),
    (
        "decode(ids, errors='ignored'): no such error handler",
        lambda: tokenizer().decode([116], errors="ignored"),
        ValueError,
        r"errors must be a codec error handler such as 'replace' or 'strict', got 'ignored'",
    ),
    # save, load
    (
        "save(None)",
        lambda: tokenizer().save(None),
        TypeError,
        r"path must be a str or a Path, got None",
    ),
    (
        "loading a JSON file of another format",
        load_written('{"model": {"type": "BPE"}}', "tokenizer.json"),
        ValueError,
        r"path: .*tokenizer.json is not a 'companion-bpe 1' file",
    ),
    (
        "loading a file that is not JSON",
        load_written("#version: 0.2\nĠ t\n", "merges.txt"),
        ValueError,
        r"path: .*merges.txt is not a 'companion-bpe 1' file \(Expecting value",
    ),
    (
        "loading a companion file without its merges",
        load_written('{"format": "companion-bpe 1", "pattern": "", "special_tokens": []}'),
        ValueError,
        r"path: .*bpe.json is a 'companion-bpe 1' file without \['merges'\]",
    ),
]
