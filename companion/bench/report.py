"""Tables and figures from the benchmarks' results files, for the terminal and for the book.

A benchmark that writes a results file (``python -m companion.bench NAME --output PATH``) prints
its numbers with this module, and the book's page of benchmarks (sec-benchmarks) shows the
committed files with it too, so the two never disagree:

- :class:`Table` holds the cells, each formatted once, and renders them as a Markdown table
  padded to its columns' widths: the same text reads well in a terminal and renders as a table
  in a notebook (``_repr_markdown_``) and on the site;
- :class:`Report` is a list of tables and paragraphs, rendered the same way;
- ``attention_report``, ``decode_report``, ``train_report`` and ``tokenizer_report`` turn one
  results file into a :class:`Report`; :func:`section` loads a benchmark's files from a folder
  (``NAME-cpu.json``, ``NAME-gpu.json``) and says "not measured yet" for a missing one;
- ``plot_attention``, ``plot_decode`` and ``plot_train`` draw what a reader would rather look
  at, from the files of every device at once.

Every function reads what the results file holds and nothing else: the machine, threads and
versions come from :func:`companion.bench.common.run_record`'s fields.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The devices whose results files the book's page looks for, in the order it shows them.
DEVICES = {"cpu": "CPU", "gpu": "GPU"}
IMPLEMENTATIONS = ("explicit", "fused", "torch")
COLD = "†"  # marks a time measured by a single run without warm-up


# ---------------------------------------------------------------------------------------------
# Tables and reports: formatted once, rendered as text or Markdown.


def _escape(cell: str) -> str:
    """A cell as Markdown shows it literally: a ``|`` inside it does not end it."""
    return cell.replace("|", "\\|")


@dataclass
class Table:
    """Columns, rows of formatted cells, and one alignment per column (``"l"`` or ``"r"``).

    It renders as a Markdown table with its columns padded to one width, which reads as well in
    a terminal as it renders in the book."""

    columns: Sequence[str]
    rows: Sequence[Sequence[str]]
    align: str

    def __post_init__(self) -> None:
        if len(self.align) != len(self.columns) or set(self.align) - {"l", "r"}:
            raise ValueError(f"align needs one 'l' or 'r' per column; got {self.align!r}")
        for row in self.rows:
            if len(row) != len(self.columns):
                raise ValueError(f"a row has {len(row)} cells for {len(self.columns)} columns")

    def markdown(self) -> str:
        lines = [[_escape(cell) for cell in cells] for cells in (self.columns, *self.rows)]
        widths = [max(3, *(len(cells[i]) for cells in lines)) for i in range(len(self.columns))]
        rule = ["-" * w if a == "l" else "-" * (w - 1) + ":" for w, a in zip(widths, self.align)]
        padded = [
            [
                cell.ljust(w) if a == "l" else cell.rjust(w)
                for cell, w, a in zip(cells, widths, self.align)
            ]
            for cells in lines
        ]
        return "\n".join(
            "| " + " | ".join(cells) + " |" for cells in [padded[0], rule, *padded[1:]]
        )

    __str__ = markdown

    def _repr_markdown_(self) -> str:
        return self.markdown()

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(self.markdown())


@dataclass
class Report:
    """Tables and paragraphs of Markdown, in order: what a benchmark prints and what the book
    shows of it."""

    blocks: list[Table | str] = field(default_factory=list)

    def markdown(self) -> str:
        return "\n\n".join(b.markdown() if isinstance(b, Table) else b for b in self.blocks)

    __str__ = markdown

    def _repr_markdown_(self) -> str:
        return self.markdown()

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(self.markdown())


# ---------------------------------------------------------------------------------------------
# Results files.


def load(path: str | Path) -> dict[str, Any] | None:
    """The results file at ``path``, or None when there is none."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    results = json.loads(text)
    if not isinstance(results, dict):
        raise ValueError(f"{path}: a results file holds a JSON object")
    return results


def results_path(name: str, device: str, folder: str | Path) -> Path:
    """Where the book keeps benchmark ``name``'s results on ``device``: ``NAME-DEVICE.json``."""
    return Path(folder) / f"{name}-{device}.json"


def load_runs(name: str, folder: str | Path) -> dict[str, dict[str, Any] | None]:
    """``{"cpu": results or None, "gpu": ...}``: benchmark ``name``'s file for each device in
    ``folder`` (:func:`results_path`)."""
    return {device: load(results_path(name, device, folder)) for device in DEVICES}


def _versions(results: Mapping[str, Any]) -> str:
    versions = results.get("versions", {})
    return ", ".join(f"{name} {version}" for name, version in versions.items())


def machine_line(results: Mapping[str, Any]) -> str:
    """Where the numbers come from: the machine, its threads and the versions (no load)."""
    threads = results.get("threads")
    device = str(results.get("device", "?"))
    line = f"Measured on {results.get('machine', '?')} ({device.upper()}"
    line += f", {threads} thread{'s' if threads > 1 else ''})" if threads else ")"
    versions = _versions(results)
    return line + (f" with {versions}" if versions else "") + "."


# The command that writes a results file, where it is not ``python -m companion.bench NAME``.
COMMANDS = {"decode-llama": "decode --model llama"}


def not_measured(name: str, path: str | Path, device: str = "cpu") -> str:
    """What the page shows for a results file that is not there."""
    command = f"python -m companion.bench {COMMANDS.get(name, name)}"
    return (
        f"{DEVICES.get(device, device)}: not measured yet "
        f"(`{command} --output {Path(path).as_posix()}` writes it)."
    )


def section(
    name: str, folder: str | Path, build: Callable[[dict[str, Any]], Report] | None = None
) -> Report:
    """Benchmark ``name``'s results in ``folder`` for the book: for each device with a file,
    where it was measured and its report (``build``, by default ``REPORTS[name]``). A missing
    CPU file says "not measured yet"; a missing GPU file is left out."""
    blocks: list[Table | str] = []
    for device, results in load_runs(name, folder).items():
        if results is None:
            if device == "cpu":
                blocks.append(not_measured(name, results_path(name, device, folder)))
            continue
        blocks.append(f"**{DEVICES[device]}.** {machine_line(results)}")
        blocks += (build or REPORTS[name])(results).blocks
    return Report(blocks)


def _fixed(value: float | None, digits: int, missing: str = "n/a") -> str:
    return missing if value is None else f"{value:.{digits}f}"


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or b <= 0 else a / b


# ---------------------------------------------------------------------------------------------
# attention: one training step of multi-head self-attention, three implementations.

# (what, numerator, denominator, quantity, length or None for every length, bound)
ATTENTION_TARGETS = (
    ("fused time at most 1/3 of explicit at n = 512", "fused", "explicit", "ms", 512, 1 / 3),
    (
        "fused time at most 1.05 x torch.nn.MultiheadAttention at every length",
        "fused",
        "torch",
        "ms",
        None,
        1.05,
    ),
    (
        "fused peak memory at most 1/4 of explicit at n = 4096",
        "fused",
        "explicit",
        "mib",
        4096,
        1 / 4,
    ),
)


def attention_rows(results: Mapping[str, Any]) -> dict[int, dict[str, dict[str, Any]]]:
    """``{n: {implementation: {"ms", "mib", "runs", "cold", "skipped"}}}`` from the file."""
    return {int(n): row for n, row in results["lengths"].items()}


def _attention_cell(result: Mapping[str, Any], key: str) -> str:
    value = result.get(key)
    if value is None:
        return "skipped" if "skipped" in result else "n/a"
    return f"{value:.1f}" + (COLD if key == "ms" and result.get("cold") else "")


def attention_ratio(row: Mapping[str, Mapping[str, Any]], a: str, b: str, key: str) -> float | None:
    """``row[a][key] / row[b][key]``, or None where either is missing."""
    return _ratio(row.get(a, {}).get(key), row.get(b, {}).get(key))


def attention_targets(results: Mapping[str, Any]) -> list[str]:
    """Each target of :data:`ATTENTION_TARGETS`, with its verdict and the measured ratio."""
    rows, lines = attention_rows(results), []
    for what, a, b, key, length, bound in ATTENTION_TARGETS:
        if length is not None and length not in rows:
            lines.append(f"{what}: not measured (no n = {length} in this run)")
            continue
        lengths = list(rows) if length is None else [length]
        ratios = {n: attention_ratio(rows[n], a, b, key) for n in lengths}
        measured = [r for r in ratios.values() if r is not None]
        if len(measured) < len(ratios):
            verdict = "not measured" if not measured else "partly measured"
        else:
            verdict = "met" if all(r <= bound for r in measured) else "not met"
        shown = ", ".join(f"{_fixed(r, 2)} at n = {n}" for n, r in ratios.items())
        lines.append(f"{what}: {verdict} ({a}/{b} = {shown})")
    return lines


def attention_table(results: Mapping[str, Any]) -> Table:
    columns = ["n"]
    columns += [f"{name} ms" for name in IMPLEMENTATIONS]
    columns += [f"{name} MiB" for name in IMPLEMENTATIONS]
    columns += ["fused/explicit time", "fused/torch time", "fused/explicit memory", "runs e/f/t"]
    rows = []
    for n, row in attention_rows(results).items():
        cells = [str(n)]
        cells += [_attention_cell(row.get(name, {}), "ms") for name in IMPLEMENTATIONS]
        cells += [_attention_cell(row.get(name, {}), "mib") for name in IMPLEMENTATIONS]
        cells += [
            _fixed(attention_ratio(row, "fused", "explicit", "ms"), 2),
            _fixed(attention_ratio(row, "fused", "torch", "ms"), 2),
            _fixed(attention_ratio(row, "fused", "explicit", "mib"), 2),
            "/".join(str(row.get(name, {}).get("runs", 0)) for name in IMPLEMENTATIONS),
        ]
        rows.append(cells)
    return Table(columns, rows, "r" * len(columns))


def attention_report(results: Mapping[str, Any]) -> Report:
    """The table, its footnotes (cold runs, skipped lengths) and the targets."""
    settings, rows = results["settings"], attention_rows(results)
    capability = settings.get("cpu_capability")
    blocks: list[Table | str] = [
        f"Batch {settings['batch']}, {settings['hiddens']} hidden units, {settings['heads']} "
        f"heads, {settings['dtype']}"
        + (f", CPU capability {capability}" if capability else "")
        + "; time: the median of the timed steps in ms; peak memory: MiB, "
        f"{settings['memory']}.",
        attention_table(results),
    ]
    if any(row.get("explicit", {}).get("cold") for row in rows.values()):
        blocks.append(
            f"{COLD} a single run without warm-up, page faults of first use included: at this "
            "length one explicit step takes too long to repeat."
        )
    skipped = [
        f"n = {n} {name}: {result['skipped']}"
        for n, row in rows.items()
        for name, result in row.items()
        if "skipped" in result
    ]
    if skipped:
        blocks.append("Skipped: " + "; ".join(skipped) + ".")
    blocks.append("Targets:\n" + "\n".join(f"- {line}" for line in attention_targets(results)))
    return Report(blocks)


def plot_attention(
    runs: Mapping[str, Mapping[str, Any] | None],
    figsize: tuple[float, float] = (6.5, 2.8),
    *,
    path: str | Path | None = None,
) -> None:
    """Time and peak memory of one step against n, on log axes: one colour per
    implementation, one line style per device (``runs``: device -> results or None), and an
    open marker for a time measured by a single cold run. Draws nothing when no device has
    results."""
    measured = {device: r for device, r in runs.items() if r is not None}
    if not measured:
        return
    import matplotlib.pyplot as plt

    from companion.figures.plot import _finish

    fig, (time_ax, memory_ax) = plt.subplots(1, 2, figsize=figsize, layout="constrained")
    styles = dict(zip(DEVICES, ("-", "--")))
    lengths: set[int] = set()
    for device, results in measured.items():
        rows = attention_rows(results)
        for i, name in enumerate(IMPLEMENTATIONS):
            label = name if len(measured) == 1 else f"{name} ({DEVICES.get(device, device)})"
            for ax, key in ((time_ax, "ms"), (memory_ax, "mib")):
                points = {n: row[name] for n, row in rows.items() if row.get(name, {}).get(key)}
                if not points:
                    continue
                lengths |= set(points)
                ns = list(points)
                ax.plot(
                    ns,
                    [points[n][key] for n in ns],
                    styles.get(device, ":"),
                    marker="o",
                    ms=4,
                    color=f"C{i}",
                    label=label if ax is time_ax else None,
                )
                cold = [n for n in ns if key == "ms" and points[n].get("cold")]
                if cold:  # an open marker over the filled one
                    ax.plot(
                        cold,
                        [points[n][key] for n in cold],
                        "o",
                        ms=4,
                        color=f"C{i}",
                        markerfacecolor="white",
                    )
    for ax, ylabel in ((time_ax, "ms per step"), (memory_ax, "peak MiB per step")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(sorted(lengths), labels=[str(n) for n in sorted(lengths)])
        ax.minorticks_off()
        ax.set_xlabel("sequence length n")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    time_ax.legend(fontsize="small")
    _finish(fig, path)


# ---------------------------------------------------------------------------------------------
# train: time to quality of each recipe.


def train_table(results: Mapping[str, Any]) -> Table:
    columns = ["recipe", "task", "model", "target", "seconds", "epochs", "test score"]
    rows = [
        [
            row["name"],
            row["task"],
            row["model"],
            row["target"],
            f"{row['seconds']:.1f}" if row["reached"] else "not reached",
            str(row["epochs"]),
            f"{row['score']:.4f}",
        ]
        for row in results["rows"]
    ]
    return Table(columns, rows, "llllrrr")


def train_report(results: Mapping[str, Any]) -> Report:
    """The table and what its last column means."""
    return Report(
        [
            f"Seed {results['settings']['seed']}; seconds: training and the validation after each "
            "epoch, data generation excluded; test score: on a split that neither training nor "
            "stopping saw.",
            train_table(results),
            "Test score: exact match or BLEU for the recipes, the gap to the entropy floor "
            "(nats per token) for gpt and llama, accuracy for bert and vit.",
        ]
    )


def plot_train(
    runs: Mapping[str, Mapping[str, Any] | None],
    figsize: tuple[float, float] = (5.5, 2.8),
    *,
    path: str | Path | None = None,
) -> None:
    """Seconds to reach the target, one bar from zero per recipe and device (hatched where the
    target was not reached: the bar is the time it trained). Draws nothing when no device has
    results."""
    measured = {device: r for device, r in runs.items() if r is not None}
    if not measured:
        return
    import matplotlib.pyplot as plt

    from companion.figures.plot import _finish

    names = list(dict.fromkeys(row["name"] for r in measured.values() for row in r["rows"]))
    height = 0.8 / len(measured)
    fig, ax = plt.subplots(figsize=figsize, layout="constrained")
    for i, (device, results) in enumerate(measured.items()):
        by_name = {row["name"]: row for row in results["rows"]}
        for j, name in enumerate(names):
            if name not in by_name:
                continue
            row = by_name[name]
            ax.barh(
                j - 0.4 + height * (i + 0.5),
                row["seconds"],
                height=height * 0.9,
                color=f"C{i}",
                hatch=None if row["reached"] else "//",
                fill=row["reached"],
                edgecolor=f"C{i}",
                label=DEVICES.get(device, device) if j == 0 else None,
            )
    ax.set_yticks(range(len(names)), labels=names)
    ax.invert_yaxis()
    ax.set_xlim(left=0)
    ax.set_xlabel("seconds to reach the target")
    ax.grid(axis="x", alpha=0.3)
    if len(measured) > 1:
        ax.legend(fontsize="small")
    _finish(fig, path)


# ---------------------------------------------------------------------------------------------
# tokenizer: companion's byte-level BPE against tiktoken.


def _best(seconds: Sequence[float]) -> float:
    return min(seconds)


def tokenizer_report(results: Mapping[str, Any]) -> Report:
    """Training time, encoding against tiktoken, and encoding words of one pre-token each."""
    text, training = results["text"], results["training"]
    settings, encoding = results["settings"], results["encoding"]
    repeats, letters = settings["repeats"], f"{settings['run_length']:,}"
    size, tokens = text["bytes"], text["tokens"]
    trainings = {
        "the text": training["seconds"],
        f"the text and {letters} random letters": results["training_with_long_word"],
    }
    train = Table(
        ["trained on", "best s", "median s"],
        [[name, f"{_best(s):.2f}", f"{statistics.median(s):.2f}"] for name, s in trainings.items()],
        "lrr",
    )
    encoders = encoding["encoders"]
    encode = Table(
        ["encoder", "seconds", "MB/s", "tokens/s", "x companion"],
        [
            [
                name,
                f"{_best(s):.3f}",
                f"{size / 1e6 / _best(s):.2f}",
                f"{tokens / _best(s):,.0f}",
                f"{_best(encoders['companion']) / _best(s):.1f}",
            ]
            for name, s in encoders.items()
        ],
        "lrrrr",
    )

    def ratio(word: Mapping[str, Any]) -> str:
        theirs = word["tiktoken"]
        return "-" if not theirs else f"{_best(word['companion']) / _best(theirs):.0f}"

    words = Table(
        ["word", "companion s", "tiktoken s", "companion / tiktoken"],
        [
            [
                word["word"],
                f"{_best(word['companion']):.4f}",
                "-" if not word["tiktoken"] else f"{_best(word['tiktoken']):.4f}",
                ratio(word),
            ]
            for word in results["long_words"]
        ],
        "lrrr",
    )
    return Report(
        [
            f"The text: {size / 1e6:.2f} MB of UTF-8 ({text['distinct_bytes'] / 1e6:.2f} MB "
            f"distinct: {text['contents']}); {tokens:,} tokens, {size / tokens:.2f} bytes per "
            f"token. Each time is the best or the median of {repeats} runs.",
            f"Training to {training['vocab_size']} tokens:",
            train,
            f"Encoding the text ({encoding['agreement']}):",
            encode,
            f"Encoding words of {letters} letters, each one pre-token ({encoding['agreement']}):",
            words,
        ]
    )


# ---------------------------------------------------------------------------------------------
# decode: the KV cache against the designs it replaced (--model transformer, decode-cpu.json),
# and multi-head, grouped-query and multi-query attention (--model llama, decode-llama-cpu.json).

DECODE_TARGET = 4.0  # the KV cache at least this many times faster than the block-input cache


def _decode_transformer(results: Mapping[str, Any]) -> Report:
    s, per_token = results["settings"], results["ms_per_token"]
    kv = per_token["KV cache"]
    table = Table(
        ["decoder", "ms per token", "x KV cache"],
        [[name, f"{ms:.2f}", f"{ms / kv:.1f}"] for name, ms in per_token.items()],
        "lrr",
    )
    speedup = per_token["block-input cache"] / kv
    identical = results["identical_tokens"]
    met = "met" if speedup >= DECODE_TARGET and identical else "not met"
    return Report(
        [
            f"Greedy decoding of {s['new_tokens']} new tokens: batch {s['batch']}, width "
            f"{s['hiddens']}, {s['heads']} heads, {s['blocks']} + {s['blocks']} blocks, FFN "
            f"{s['ffn']}, vocabulary {s['vocab']:,}, source length {s['source_steps']}; the best "
            f"of {s['repeats']} runs.",
            table,
            f"Identical tokens: {'yes' if identical else 'no'}. Target: the KV cache at least "
            f"{DECODE_TARGET:.0f}x faster than the block-input cache: {met} ({speedup:.1f}x).",
        ]
    )


def _decode_llama(results: Mapping[str, Any]) -> Report:
    s, kinds = results["settings"], results["kinds"]
    mha = next(iter(kinds.values()))["ms_per_token"]
    first = next(iter(kinds))
    table = Table(
        ["attention", "kv heads", "ms per token", f"x {first}", "cache MiB", "bytes per token"],
        [
            [
                name,
                str(kind["kv_heads"]),
                f"{kind['ms_per_token']:.2f}",
                f"{kind['ms_per_token'] / mha:.2f}",
                f"{kind['cache_bytes'] / 2**20:.1f}",
                f"{kind['bytes_per_token']:,}",
            ]
            for name, kind in kinds.items()
        ],
        "lrrrrr",
    )
    return Report(
        [
            f"Decoding {s['new_tokens']} tokens after a prompt of {s['prompt']:,}: batch "
            f"{s['batch']}, width {s['num_hiddens']}, {s['num_heads']} query heads, "
            f"{s['num_blks']} blocks, SwiGLU {s['ffn_num_hiddens']}, vocabulary "
            f"{s['vocab_size']:,}; the best of {s['repeats']} runs.",
            table,
            "Cache MiB: the keys and values that every block holds at the end; bytes per token: "
            "per token of context and batch row.",
        ]
    )


def decode_report(results: Mapping[str, Any]) -> Report:
    """The file of ``decode --model transformer`` (decoders) or ``--model llama`` (kinds of
    attention): its table, and the target of the first."""
    model = results.get("model", "transformer")
    if model == "llama":
        return _decode_llama(results)
    if model == "transformer":
        return _decode_transformer(results)
    raise ValueError(f"a decode results file of model {model!r}: expected transformer or llama")


def plot_decode(
    runs: Mapping[str, Mapping[str, Any] | None],
    figsize: tuple[float, float] = (6.5, 2.4),
    *,
    path: str | Path | None = None,
) -> None:
    """For ``decode --model llama``'s files: milliseconds per new token and the cache's MiB of
    each kind of attention, bars from zero, one colour per device. Draws nothing when no device
    has results."""
    measured = {device: r for device, r in runs.items() if r is not None}
    if not measured:
        return
    import matplotlib.pyplot as plt

    from companion.figures.plot import _finish

    names = list(dict.fromkeys(name for r in measured.values() for name in r["kinds"]))
    height = 0.8 / len(measured)
    fig, (time_ax, cache_ax) = plt.subplots(1, 2, figsize=figsize, layout="constrained")
    for i, (device, results) in enumerate(measured.items()):
        kinds = results["kinds"]
        for j, name in enumerate(names):
            if name not in kinds:
                continue
            y = j - 0.4 + height * (i + 0.5)
            label = DEVICES.get(device, device) if j == 0 else None
            for ax, value in (
                (time_ax, kinds[name]["ms_per_token"]),
                (cache_ax, kinds[name]["cache_bytes"] / 2**20),
            ):
                ax.barh(y, value, height=height * 0.9, color=f"C{i}", label=label)
    for ax, xlabel in ((time_ax, "ms per new token"), (cache_ax, "cache MiB")):
        ax.set_yticks(range(len(names)), labels=names)
        ax.invert_yaxis()
        ax.set_xlim(left=0)
        ax.set_xlabel(xlabel)
        ax.grid(axis="x", alpha=0.3)
    if len(measured) > 1:
        time_ax.legend(fontsize="small")
    _finish(fig, path)


# ---------------------------------------------------------------------------------------------
# The results files that chapters read: companion/experiments/results/.


def chapter_results() -> dict[str, dict[str, Any] | None]:
    """The results file of each benchmark that writes into companion for a chapter to read
    (``rnn``, ``scaling``, ``ablation``, ``length``, ``vit``), by its path in the repository."""
    from companion.experiments import (
        ablation,
        extrapolation,
        rnn_comparison,
        scaling,
        vit_comparison,
    )

    paths = (
        rnn_comparison.RESULTS,
        scaling.RESULTS,
        ablation.RESULTS,
        extrapolation.RESULTS,
        vit_comparison.RESULTS,
    )
    return {f"companion/experiments/results/{path.name}": load(path) for path in paths}


def chapter_results_table(files: Mapping[str, Mapping[str, Any] | None]) -> Table:
    """One row per file: the command that wrote it, where, with which versions, in how long
    (``not recorded`` where a file does not say)."""
    rows = []
    for name, results in files.items():
        if results is None:
            rows.append([f"`{name}`", "not measured yet", "", "", "", ""])
            continue
        command, machine = results.get("benchmark"), results.get("machine")
        device = str(results.get("device") or "").upper()
        rows.append(
            [
                f"`{name}`",
                f"`{command}`" if command else "not recorded",
                f"{machine} ({device})" if machine and device else machine or "",
                str(results.get("threads") or ""),
                _versions(results),
                _fixed(results.get("seconds"), 0, missing=""),
            ]
        )
    columns = ["file", "written by", "machine", "threads", "versions", "seconds"]
    return Table(columns, rows, "lllrlr")


# ---------------------------------------------------------------------------------------------
# Which report each benchmark's results file gets.

REPORTS: dict[str, Callable[[dict[str, Any]], Report]] = {
    "attention": attention_report,
    "train": train_report,
    "tokenizer": tokenizer_report,
    "decode": decode_report,
    "decode-llama": decode_report,
}
