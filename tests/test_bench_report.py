"""companion.bench.report: the tables a benchmark prints and the book's page shows, from small
results dicts (nothing is timed here)."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib.pyplot as plt
import pytest

from companion.bench import main as bench_main
from companion.bench import report

RECORD = {
    "machine": "Test CPU",
    "device": "cpu",
    "threads": 2,
    "versions": {"python": "3.11.7", "torch": "2.13.0+cpu", "companion": "0.1.0"},
    "load_average": {"before": 0.5, "after": 0.7},
    "seconds": 12.3,
}


def attention_results(**lengths) -> dict:
    return {
        **RECORD,
        "benchmark": "python -m companion.bench attention",
        "settings": {
            "batch": 8,
            "hiddens": 256,
            "heads": 8,
            "dtype": "float32",
            "memory": "resident-set growth",
        },
        "lengths": lengths,
    }


def impl(ms=None, mib=None, runs=None, **extra) -> dict:
    result = {key: v for key, v in (("ms", ms), ("mib", mib), ("runs", runs)) if v is not None}
    return {**result, **extra}


ATTENTION = attention_results(
    **{
        "128": {
            "explicit": impl(20.0, 20.8, 10),
            "fused": impl(15.0, 10.4, 10),
            "torch": impl(16.0, 11.2, 10),
        },
        "512": {
            "explicit": impl(400.0, 276.0, 1, cold=True),
            "fused": impl(100.0, 41.0, 8),
            "torch": impl(110.0, 45.0, 8),
        },
        "4096": {
            "explicit": {"skipped": "needs ~18 GiB, 3.0 GiB free"},
            "fused": impl(4800.0, 323.0, 2),
            "torch": impl(5100.0, 356.0, 2),
        },
    }
)

TRAIN = {
    **RECORD,
    "settings": {"seed": 0},
    "rows": [
        {
            "name": "transformer-mt",
            "kind": "recipe",
            "task": "translation",
            "model": "transformer (64 wide, 2 layers)",
            "target": "bleu >= 0.9",
            "reached": True,
            "seconds": 20.31,
            "epochs": 2,
            "score": 0.99581,
        },
        {
            "name": "vit",
            "kind": "model",
            "task": "digits",
            "model": "ViT",
            "target": "accuracy >= 0.9",
            "reached": False,
            "seconds": 1.25,
            "epochs": 3,
            "score": 0.5,
        },
    ],
}

TOKENIZER = {
    **RECORD,
    "threads": 1,
    "settings": {"megabytes": 1.0, "vocab_size": 300, "repeats": 3, "run_length": 40000},
    "text": {"contents": "prose", "bytes": 1_000_000, "distinct_bytes": 500_000, "tokens": 400_000},
    "training": {"vocab_size": 300, "seconds": [1.0, 1.2, 1.1]},
    "encoding": {
        "agreement": "identical ids",
        "encoders": {"companion": [0.5, 0.6, 0.55], "tiktoken": [0.1, 0.2, 0.3]},
    },
    "long_words": [
        {"word": '"a" * 40000', "companion": [0.02], "tiktoken": [0.001]},
        {"word": "40000 random letters", "companion": [0.03], "tiktoken": None},
    ],
    "training_with_long_word": [2.0, 2.5, 3.0],
}


def test_a_table_renders_as_padded_markdown_with_its_alignments():
    table = report.Table(["name", "ms"], [["a|b", "1.5"], ["long name", "12.25"]], "lr")
    assert table.markdown().splitlines() == [
        "| name      |    ms |",
        "| --------- | ----: |",
        "| a\\|b      |   1.5 |",
        "| long name | 12.25 |",
    ]
    assert str(table) == table._repr_markdown_() == table.markdown()


@pytest.mark.parametrize(
    "rows, align, message",
    [
        ([["1"]], "lr", "a row has 1 cells for 2 columns"),
        ([["1", "2"]], "l", "one 'l' or 'r' per column"),
        ([["1", "2"]], "lc", "one 'l' or 'r' per column"),
    ],
)
def test_a_table_refuses_rows_and_alignments_that_do_not_fit(rows, align, message):
    with pytest.raises(ValueError, match=message):
        report.Table(["a", "b"], rows, align)


def test_load_reads_a_file_and_says_none_for_a_missing_one(tmp_path: Path):
    assert report.load(tmp_path / "nothing.json") is None
    (tmp_path / "x.json").write_text(json.dumps(RECORD))
    assert report.load(tmp_path / "x.json") == RECORD
    (tmp_path / "list.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="holds a JSON object"):
        report.load(tmp_path / "list.json")


def test_the_machine_line_names_the_machine_threads_and_versions_but_not_the_load():
    line = report.machine_line(RECORD)
    assert line == (
        "Measured on Test CPU (CPU, 2 threads) with python 3.11.7, torch 2.13.0+cpu, "
        "companion 0.1.0."
    )
    assert "load" not in line
    assert "1 thread)" in report.machine_line({**RECORD, "threads": 1})
    assert report.machine_line({**RECORD, "device": "cuda", "threads": None}).startswith(
        "Measured on Test CPU (CUDA) with"
    )


def test_a_section_without_files_says_not_measured_yet(tmp_path: Path):
    shown = report.section("attention", tmp_path).markdown()
    path = (tmp_path / "attention-cpu.json").as_posix()
    assert shown == (
        f"CPU: not measured yet (`python -m companion.bench attention --output {path}` writes it)."
    )
    assert report.section("no-such-benchmark", tmp_path).markdown().startswith("CPU: not measured")


def test_a_section_shows_the_cpu_file_and_a_gpu_file_where_there_is_one(tmp_path: Path):
    (tmp_path / "train-cpu.json").write_text(json.dumps(TRAIN))
    cpu_only = report.section("train", tmp_path)
    assert cpu_only.blocks[0] == f"**CPU.** {report.machine_line(TRAIN)}"
    assert "GPU" not in cpu_only.markdown()
    gpu = {**TRAIN, "machine": "Test GPU", "device": "cuda", "threads": None}
    (tmp_path / "train-gpu.json").write_text(json.dumps(gpu))
    both = report.section("train", tmp_path)
    headings = [b for b in both.blocks if isinstance(b, str) and b.startswith("**")]
    assert headings == [
        f"**CPU.** {report.machine_line(TRAIN)}",
        f"**GPU.** {report.machine_line(gpu)}",
    ]
    assert both.markdown().count("| transformer-mt |") == 2


def test_the_attention_table_marks_cold_runs_and_skips_and_computes_the_ratios():
    table = report.attention_table(ATTENTION)
    assert table.columns[:4] == ["n", "explicit ms", "fused ms", "torch ms"]
    assert table.rows[0] == [
        "128",
        "20.0",
        "15.0",
        "16.0",
        "20.8",
        "10.4",
        "11.2",
        "0.75",
        "0.94",
        "0.50",
        "10/10/10",
    ]
    assert table.rows[1][1] == "400.0" + report.COLD and table.rows[1][-1] == "1/8/8"
    assert table.rows[2][1] == "skipped" and table.rows[2][4] == "skipped"
    assert table.rows[2][7] == "n/a"
    shown = report.attention_report(ATTENTION).markdown()
    assert f"{report.COLD} a single run without warm-up" in shown
    assert "Skipped: n = 4096 explicit: needs ~18 GiB, 3.0 GiB free." in shown


def test_the_attention_targets_give_each_verdict_with_its_measured_ratio():
    assert report.attention_targets(ATTENTION) == [
        "fused time at most 1/3 of explicit at n = 512: met (fused/explicit = 0.25 at n = 512)",
        "fused time at most 1.05 x torch.nn.MultiheadAttention at every length: met "
        "(fused/torch = 0.94 at n = 128, 0.91 at n = 512, 0.94 at n = 4096)",
        "fused peak memory at most 1/4 of explicit at n = 4096: not measured "
        "(fused/explicit = n/a at n = 4096)",
    ]
    short = attention_results(**{"128": ATTENTION["lengths"]["128"]})
    assert report.attention_targets(short)[0].endswith("not measured (no n = 512 in this run)")
    slow = attention_results(
        **{"512": {**ATTENTION["lengths"]["512"], "fused": impl(200.0, 41.0, 8)}}
    )
    assert ": not met (fused/explicit = 0.50 at n = 512)" in report.attention_targets(slow)[0]


def test_the_train_table_says_not_reached_and_its_bars_start_at_zero():
    assert report.train_table(TRAIN).rows == [
        [
            "transformer-mt",
            "translation",
            "transformer (64 wide, 2 layers)",
            "bleu >= 0.9",
            "20.3",
            "2",
            "0.9958",
        ],
        ["vit", "digits", "ViT", "accuracy >= 0.9", "not reached", "3", "0.5000"],
    ]
    report.plot_train({"cpu": TRAIN, "gpu": None})
    ax = plt.gcf().axes[0]
    assert ax.get_xlim()[0] == 0
    assert [t.get_text() for t in ax.get_yticklabels()] == ["transformer-mt", "vit"]
    plt.close("all")


def test_the_tokenizer_report_gives_best_and_median_and_the_ratios():
    shown = report.tokenizer_report(TOKENIZER).markdown()
    assert "1.00 MB of UTF-8 (0.50 MB distinct: prose); 400,000 tokens, 2.50 bytes per token" in (
        shown
    )
    assert "| the text                           |   1.00 |     1.10 |" in shown
    assert "| the text and 40,000 random letters |   2.00 |     2.50 |" in shown
    assert "| tiktoken  |   0.100 | 10.00 | 4,000,000 |         5.0 |" in shown
    assert '| "a" * 40000          |      0.0200 |     0.0010 |                   20 |' in shown
    assert "| 40000 random letters |      0.0300 |          - |                    - |" in shown


def test_the_attention_plot_draws_each_device_and_nothing_without_results():
    report.plot_attention({"cpu": None, "gpu": None})
    assert plt.get_fignums() == []
    gpu = {**ATTENTION, "device": "cuda"}
    report.plot_attention({"cpu": ATTENTION, "gpu": gpu})
    time_ax, memory_ax = plt.gcf().axes
    assert time_ax.get_xscale() == "log" and memory_ax.get_yscale() == "log"
    _, labels = time_ax.get_legend_handles_labels()
    devices = ("CPU", "GPU")
    assert labels == [f"{name} ({d})" for d in devices for name in report.IMPLEMENTATIONS]
    explicit, cold = time_ax.get_lines()[:2]  # the line, and an open marker on its cold run
    assert list(explicit.get_xdata()) == [128, 512]  # n = 4096 was skipped
    assert list(cold.get_xdata()) == [512] and cold.get_markerfacecolor() == "white"
    assert [t.get_text() for t in time_ax.get_xticklabels()] == ["128", "512", "4096"]
    plt.close("all")
    report.plot_attention({"cpu": ATTENTION})
    _, labels = plt.gcf().axes[0].get_legend_handles_labels()
    assert labels == list(report.IMPLEMENTATIONS)  # one device: no device in the legend
    plt.close("all")


def test_the_chapters_results_files_are_listed_with_where_they_were_measured():
    files = report.chapter_results()
    assert "companion/experiments/results/ablation.json" in files
    assert files["companion/experiments/results/ablation.json"]["benchmark"].endswith("ablation")
    table = report.chapter_results_table(
        {"a.json": RECORD, "b.json": {"settings": {}}, "missing.json": None}
    )
    assert table.rows == [
        ["`a.json`", "not recorded", "Test CPU (CPU)", "2", report._versions(RECORD), "12"],
        ["`b.json`", "not recorded", "", "", "", ""],
        ["`missing.json`", "not measured yet", "", "", "", ""],
    ]
    written = report.chapter_results_table({"c.json": {**RECORD, "benchmark": "python -m x"}})
    assert written.rows[0][1] == "`python -m x`"


def test_a_benchmark_prints_the_report_of_the_file_it_writes(tmp_path: Path, capsys):
    path = tmp_path / "tokenizer-cpu.json"
    arguments = ["--megabytes", "0.02", "--vocab-size", "300", "--repeats", "1"]
    assert bench_main(["tokenizer", *arguments, "--output", str(path)]) == 0
    results = report.load(path)
    assert results is not None and results["benchmark"] == "python -m companion.bench tokenizer"
    assert {"machine", "device", "threads", "versions", "load_average"} <= set(results)
    assert report.tokenizer_report(results).markdown() in capsys.readouterr().out
    assert bench_main(["tokenizer", *arguments]) == 0  # the default, "-", writes no file
    assert list(tmp_path.iterdir()) == [path]


DECODE = {
    **RECORD,
    "model": "transformer",
    "settings": {
        "batch": 32,
        "source_steps": 32,
        "new_tokens": 128,
        "hiddens": 256,
        "heads": 8,
        "ffn": 1024,
        "blocks": 2,
        "vocab": 1000,
        "repeats": 3,
    },
    "ms_per_token": {"KV cache": 2.5, "block-input cache": 11.0, "no cache": 60.0},
    "identical_tokens": True,
}
DECODE_LLAMA = {
    **RECORD,
    "model": "llama",
    "settings": {
        "batch": 8,
        "prompt": 2048,
        "new_tokens": 32,
        "num_hiddens": 256,
        "num_heads": 8,
        "num_blks": 2,
        "ffn_num_hiddens": 688,
        "vocab_size": 512,
        "repeats": 3,
    },
    "kinds": {
        "MHA": {"kv_heads": 8, "ms_per_token": 4.0, "cache_bytes": 2**25, "bytes_per_token": 4096},
        "GQA": {"kv_heads": 2, "ms_per_token": 2.0, "cache_bytes": 2**23, "bytes_per_token": 1024},
        "MQA": {"kv_heads": 1, "ms_per_token": 1.0, "cache_bytes": 2**22, "bytes_per_token": 512},
    },
}


def test_the_decode_reports_give_the_ratios_and_the_target():
    shown = report.decode_report(DECODE).markdown()
    assert "| block-input cache |        11.00 |        4.4 |" in shown
    assert "Target: the KV cache at least 4x faster than the block-input cache: met (4.4x)." in (
        shown
    )
    slow = {**DECODE, "ms_per_token": {**DECODE["ms_per_token"], "block-input cache": 5.0}}
    assert ": not met (2.0x)." in report.decode_report(slow).markdown()
    different = {**DECODE, "identical_tokens": False}
    assert "Identical tokens: no." in report.decode_report(different).markdown()
    llama = report.decode_report(DECODE_LLAMA)
    table = next(b for b in llama.blocks if isinstance(b, report.Table))
    assert table.rows[1] == ["GQA", "2", "2.00", "0.50", "8.0", "1,024"]
    with pytest.raises(ValueError, match="of model 'gpt'"):
        report.decode_report({**DECODE, "model": "gpt"})


def test_the_llama_decode_file_has_its_own_command_and_plot(tmp_path: Path):
    assert "decode --model llama --output" in report.section("decode-llama", tmp_path).markdown()
    (tmp_path / "decode-llama-cpu.json").write_text(json.dumps(DECODE_LLAMA))
    assert "| MQA " in report.section("decode-llama", tmp_path).markdown()
    report.plot_decode(report.load_runs("decode-llama", tmp_path))
    time_ax, cache_ax = plt.gcf().axes
    assert [p.get_width() for p in time_ax.patches] == [4.0, 2.0, 1.0]
    assert [p.get_width() for p in cache_ax.patches] == [32.0, 8.0, 4.0]
    assert time_ax.get_xlim()[0] == 0 == cache_ax.get_xlim()[0]
    plt.close("all")
