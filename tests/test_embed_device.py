"""``--device`` is checked before the model loads: one typed line naming the devices this machine has."""

from __future__ import annotations

import pytest

from odqa.config import EmbedConfig
from odqa.embed import Encoder
from odqa.errors import ConfigError

torch = pytest.importorskip("torch")


pytestmark = pytest.mark.usefixtures("no_model_load")  # reaching the model load means the device was accepted


def machine(monkeypatch: pytest.MonkeyPatch, gpus: int) -> None:
    """Pretend this machine has ``gpus`` CUDA devices and no other accelerator."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: gpus > 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: gpus)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    monkeypatch.setattr(torch.xpu, "is_available", lambda: False)


def encoder_on(device: str) -> Encoder:
    return Encoder(EmbedConfig(model="minilm", cache_dir="", device=device))


@pytest.mark.parametrize(
    ("gpus", "device", "match"),
    [
        (0, "cuda", r"device 'cuda' is not available here; this machine has: cpu\b"),
        (0, "cuda:0", r"device 'cuda:0' is not available here; this machine has: cpu\b"),
        (1, "cuda:7", r"device 'cuda:7' is not available here; this machine has: cpu, cuda:0\b"),
        (2, "mps", r"device 'mps' is not available here; this machine has: cpu, cuda:0, cuda:1\b"),
        (1, "gpu0", r"device 'gpu0' is not a device name; this machine has: cpu, cuda:0\b"),
        (0, "cuda:x", r"device 'cuda:x' is not a device name"),
        (0, "CPU", r"device 'CPU' is not a device name"),
        (1, "meta", r"device 'meta' is not available here"),
    ],
)
def test_a_bad_device_is_one_typed_line_before_the_model_loads(
    gpus: int, device: str, match: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    machine(monkeypatch, gpus)
    with pytest.raises(ConfigError, match=match) as caught:
        encoder_on(device)
    assert "\n" not in str(caught.value)
    assert "--device" in str(caught.value)  # says how to fix it


def test_cuda_on_a_cpu_only_torch_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    machine(monkeypatch, 0)
    monkeypatch.setattr(torch.version, "cuda", None)
    with pytest.raises(ConfigError, match=r"built without CUDA"):
        encoder_on("cuda")


@pytest.mark.parametrize(("gpus", "device"), [(0, "cpu"), (0, "cpu:0"), (1, "cuda"), (1, "cuda:0"), (2, "cuda:1")])
def test_a_device_this_machine_has_is_accepted(gpus: int, device: str, monkeypatch: pytest.MonkeyPatch,
                                               no_model_load: type[Exception]) -> None:
    machine(monkeypatch, gpus)
    with pytest.raises(no_model_load):
        encoder_on(device)


def test_no_device_leaves_the_choice_to_sentence_transformers(no_model_load: type[Exception]) -> None:
    with pytest.raises(no_model_load):
        Encoder(EmbedConfig(model="minilm", cache_dir=""))


def test_auto_precision_is_the_fastest_measured_per_device(monkeypatch: pytest.MonkeyPatch) -> None:
    from odqa.embed import encoder as encoder_module
    from odqa.embed import resolve_precision

    assert resolve_precision("fp16", "cpu") == "fp16"  # an explicit choice is kept
    assert resolve_precision("auto", "cuda:0") == "fp16"
    assert resolve_precision("auto", "mps") == "fp32"
    for native, expected in ((True, "bf16"), (False, "fp32")):
        monkeypatch.setattr(encoder_module, "cpu_has_bf16", lambda native=native: native)
        assert resolve_precision("auto", "cpu") == expected
