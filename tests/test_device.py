from pathlib import Path

import pytest
import torch

from companion import get_device


def test_auto_picks_what_the_machine_has(monkeypatch):
    monkeypatch.setenv("COMPANION_DEVICE", "auto")
    if torch.cuda.is_available():
        expected = "cuda"
    elif torch.backends.mps.is_available():
        expected = "mps"
    else:
        expected = "cpu"
    assert get_device().type == expected


def test_default_is_auto(monkeypatch):
    monkeypatch.delenv("COMPANION_DEVICE", raising=False)
    assert get_device() == get_device("auto")


@pytest.mark.parametrize("value", ["cpu", "CPU", " cpu "])
def test_cpu_is_always_available(monkeypatch, value):
    monkeypatch.setenv("COMPANION_DEVICE", value)
    assert get_device() == torch.device("cpu")


def test_argument_overrides_the_environment(monkeypatch):
    monkeypatch.setenv("COMPANION_DEVICE", "nonsense")
    assert get_device("cpu") == torch.device("cpu")


def test_unknown_name_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("COMPANION_DEVICE", "tpu")
    with pytest.raises(
        ValueError, match="COMPANION_DEVICE must be one of auto, cpu, cuda, mps; got 'tpu'"
    ):
        get_device()


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_missing_cuda_is_an_error_not_a_fallback(monkeypatch):
    monkeypatch.setenv("COMPANION_DEVICE", "cuda")
    with pytest.raises(RuntimeError, match="COMPANION_DEVICE=cuda was requested"):
        get_device()


@pytest.mark.skipif(torch.backends.mps.is_available(), reason="this machine has MPS")
def test_missing_mps_is_an_error(monkeypatch):
    with pytest.raises(RuntimeError, match="COMPANION_DEVICE=mps was requested"):
        get_device("mps")


def test_cpu_name_is_what_the_system_reports():
    from companion.device import cpu_name

    name = cpu_name()
    assert isinstance(name, str) and name.strip() == name and name
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists() and "model name" in cpuinfo.read_text():
        assert f": {name}\n" in cpuinfo.read_text()


@pytest.mark.parametrize(
    ("value", "default", "expected"),
    [(None, 2, 2), (None, None, None), ("", 2, 2), ("3", 2, 3), (" 1 ", None, 1)],
)
def test_thread_count_comes_from_the_environment_or_the_default(
    monkeypatch, value, default, expected
):
    from companion.repro import configured_threads

    if value is None:
        monkeypatch.delenv("COMPANION_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("COMPANION_NUM_THREADS", value)
    assert configured_threads(default) == expected


@pytest.mark.parametrize("value", ["0", "two", "-1", "1.5"])
def test_a_bad_thread_count_names_the_variable(monkeypatch, value):
    from companion.repro import configured_threads

    monkeypatch.setenv("COMPANION_NUM_THREADS", value)
    message = f"COMPANION_NUM_THREADS must be a positive integer; got '{value}'"
    with pytest.raises(ValueError, match=message.replace(".", r"\.")):
        configured_threads()
