"""``--device`` is checked before the model loads: one typed line naming the devices this machine has."""

from __future__ import annotations

from typing import Any

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


@pytest.fixture
def loads_on(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The devices encoders load their model onto (a stand-in model: no weights are read)."""
    from types import SimpleNamespace

    devices: list[str] = []

    def load(self: Encoder) -> Any:
        devices.append(self.device)
        return SimpleNamespace(device=self.device)

    monkeypatch.setattr(Encoder, "_load", load)
    return devices


@pytest.mark.parametrize(("gpus", "device"), [(0, "cpu"), (0, "cpu:0"), (1, "cuda"), (1, "cuda:0"), (2, "cuda:1")])
def test_a_device_this_machine_has_is_the_one_the_model_loads_onto(gpus: int, device: str, loads_on: list[str],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    machine(monkeypatch, gpus)
    encoder = Encoder(EmbedConfig(model="minilm", cache_dir="", device=device, backend="torch"))
    assert loads_on == [device] and encoder.device == device


def test_no_device_picks_the_first_gpu_else_the_cpu(loads_on: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from odqa.embed import encoder as encoder_module

    monkeypatch.setattr(encoder_module, "_no_accelerator", lambda: False)  # as where a GPU device node exists
    for gpus, chosen in ((0, "cpu"), (2, "cuda:0")):
        machine(monkeypatch, gpus)
        encoder = Encoder(EmbedConfig(model="minilm", cache_dir="", backend="torch"))
        assert encoder.device == loads_on[-1] == chosen
        assert encoder.precision == ("fp16" if chosen.startswith("cuda") else encoder.precision)


def cpu_reports(monkeypatch: pytest.MonkeyPatch, capabilities: list[str] | None) -> None:
    """Pretend OpenVINO reports these CPU capabilities (None: OpenVINO is not installed)."""
    import importlib
    from types import SimpleNamespace

    class Core:
        def get_property(self, device: str, name: str) -> list[str]:
            assert (device, name) == ("CPU", "OPTIMIZATION_CAPABILITIES")
            return list(capabilities or ())

    real = importlib.import_module

    def import_module(name: str, package: str | None = None) -> Any:
        if name != "openvino":
            return real(name, package)
        if capabilities is None:
            raise ImportError("No module named 'openvino'")
        return SimpleNamespace(Core=Core, __name__="openvino")

    monkeypatch.setattr(importlib, "import_module", import_module)


NATIVE = ["FP32", "BF16", "INT8", "BIN"]  # what OpenVINO reports on a CPU with AVX-512 BF16 or AMX
AVX2 = ["FP32", "INT8", "BIN", "EXPORT_IMPORT"]  # what it reports on this build machine


def test_auto_precision_is_the_fastest_measured_per_device(monkeypatch: pytest.MonkeyPatch) -> None:
    from odqa.embed import resolve_precision

    assert resolve_precision("fp16", "cpu") == "fp16"  # an explicit choice is kept
    assert resolve_precision("auto", "cuda:0") == "fp16"
    assert resolve_precision("auto", "mps") == "fp32"
    for capabilities, expected in ((NATIVE, "bf16"), (AVX2, "fp32"), (None, "fp32")):
        cpu_reports(monkeypatch, capabilities)
        assert resolve_precision("auto", "cpu") == expected


def test_cpu_bf16_is_what_openvino_reports_and_no_where_it_is_absent(monkeypatch: pytest.MonkeyPatch) -> None:
    from odqa.embed.openvino import cpu_bf16, supports

    for capabilities, native in ((NATIVE, True), (AVX2, False), (None, False)):
        cpu_reports(monkeypatch, capabilities)
        assert cpu_bf16() is native
        assert supports("bf16") is native and supports("fp32") is (capabilities is not None)


@pytest.mark.parametrize(("capabilities", "match"), [
    (AVX2, r"precision 'bf16' would run emulated on this CPU .*OpenVINO reports no AVX-512 BF16 or AMX.*"
           r"pass --precision auto or fp32"),
    (None, r"precision 'bf16' would run emulated on this CPU .*OpenVINO, which odqa asks, is not installed.*"
           r"pass --precision auto or fp32"),
])
def test_bf16_on_a_cpu_without_it_is_refused_in_one_line_before_the_model_loads(
    capabilities: list[str] | None, match: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    cpu_reports(monkeypatch, capabilities)
    for backend in ("auto", "torch", "openvino"):
        with pytest.raises(ConfigError, match=match) as caught:
            Encoder(EmbedConfig(model="minilm", cache_dir="", device="cpu", precision="bf16",
                                backend=backend))  # type: ignore[arg-type]
        assert "\n" not in str(caught.value)


def test_bf16_runs_where_the_device_computes_it(monkeypatch: pytest.MonkeyPatch,
                                                no_model_load: type[Exception]) -> None:
    from odqa.embed import resolve_precision

    cpu_reports(monkeypatch, NATIVE)
    assert resolve_precision("bf16", "cpu") == "bf16"
    with pytest.raises(no_model_load):  # accepted: the encoder goes on to load its model
        Encoder(EmbedConfig(model="minilm", cache_dir="", device="cpu", precision="bf16", backend="torch"))
    cpu_reports(monkeypatch, AVX2)
    machine(monkeypatch, 1)
    assert resolve_precision("bf16", "cuda:0") == "bf16"  # GPUs are not this CPU check's concern
