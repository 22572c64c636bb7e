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
