"""An :class:`~odqa.embed.Encoder` whose passage encoding runs on a Ray cluster, as a Ray Data pipeline.

Everything but the model calls stays where the local engine has it: the driver applies prompts, removes repeated
texts, consults the embedding cache and encodes the (few, short) questions; the index build and refinement loops
call it exactly as they call a local encoder, so shard boundaries, files, manifest and resuming are shared code.
The texts the cache lacks are cut into the slices the local encoder would hand its model
(:attr:`~odqa.embed.Encoder.slice_size`), and ``map_batches`` sends each slice to an encoder actor, which loads the
model once per pipeline. A vector depends, in its last bits, on the other texts of its slice; with the same slices
on the same kind of device, both engines write byte-identical outputs, so a job can move between them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import replace
from types import ModuleType
from typing import Any

import numpy as np

from odqa._optional import require
from odqa.config import EmbedConfig
from odqa.embed import Encoder
from odqa.embed.encoder import Progress
from odqa.errors import ConfigError, OdqaError
from odqa.ray.config import RayConfig

__all__ = ["EncoderActor", "RayEncoder", "engine_encoder"]


class EncoderActor:
    """A Ray Data actor: builds an :class:`~odqa.embed.Encoder` once, then encodes each slice it is handed.

    Rows in: ``slice`` (its number) and ``texts`` (prompted passage texts). Rows out: one per text, with its
    ``slice``, ``position`` in the slice and ``vector``.
    """

    def __init__(self, config: EmbedConfig) -> None:
        self.encoder: Encoder | None = None
        self.error: OdqaError | None = None
        try:
            self.encoder = Encoder(config)
        except OdqaError as exc:  # a model this node cannot load, say
            self.error = exc  # raised with the first slice: Ray keeps an __init__ error as text only

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        if self.encoder is None:
            raise self.error or RuntimeError("the encoder actor has no encoder")
        slices, positions, vectors = [], [], []
        for number, texts in zip(batch["slice"], batch["texts"], strict=True):
            part = self.encoder.encode_texts([str(t) for t in texts])  # one model call, as the local engine's slice
            slices.append(np.full(len(part), number, dtype=np.int64))
            positions.append(np.arange(len(part), dtype=np.int64))
            vectors.append(part)
        return {"slice": np.concatenate(slices), "position": np.concatenate(positions),
                "vector": np.concatenate(vectors)}


def _connect(ray: ModuleType, address: str | None) -> bool:
    """Attach to the cluster at ``address`` (or ``RAY_ADDRESS``, or a new local one); True when this started it.

    A process already connected (a test session, a notebook) keeps its connection.
    """
    if ray.is_initialized():
        return False
    try:
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
    except (ConnectionError, ValueError, RuntimeError) as exc:
        where = f"the Ray cluster at {address!r}" if address else "a Ray cluster"
        raise ConfigError(f"cannot attach to {where}: {exc}; pass the head node's address with --ray-address "
                          "(host:port, or 'auto'), or leave it out to start a local cluster") from exc
    return True


def _actor_device(device: str | None, gpus: float) -> str:
    """Where the actors run: GPUs when the cluster has them (or ``cuda`` is asked for), else CPUs."""
    if device is None:
        return "cuda" if gpus >= 1 else "cpu"
    if device.split(":")[0] == "cuda":
        if gpus < 1:
            raise ConfigError(f"device {device!r} asks for GPU actors but the Ray cluster has no GPUs; pass "
                              "--device cpu, or leave --device out to use whatever the cluster has")
        return "cuda"  # each actor sees only its own GPU, as cuda:0
    if device == "cpu":
        return "cpu"
    raise ConfigError(f"the Ray engine runs its actors on cpu or cuda, not {device!r}; pass --device cpu or cuda, "
                      "or leave --device out")


class RayEncoder(Encoder):
    """An encoder whose cache misses are encoded by actors on a Ray cluster; otherwise a local :class:`Encoder`.

    One actor per GPU when the cluster has GPUs (each with ``num_gpus=1``), else one per
    ``ray.cpus_per_actor`` CPUs; ``ray.actors`` overrides the count. ``close`` shuts down a cluster it started.
    """

    def __init__(self, config: EmbedConfig | None = None, ray: RayConfig | None = None) -> None:
        config = config or EmbedConfig()
        self.ray_config = ray or RayConfig()
        self._ray = require("ray", "ray")
        self._started = _connect(self._ray, self.ray_config.address)
        try:
            resources = self._ray.cluster_resources()
            device = _actor_device(config.device, float(resources.get("GPU", 0)))
            self._gpu = device == "cuda"
            available = int(resources.get("GPU", 0)) if self._gpu else int(resources.get("CPU", 0))
            per_actor = 1 if self._gpu else self.ray_config.cpus_per_actor
            self.actors = self.ray_config.actors or max(1, available // per_actor)
            if self.actors * per_actor > available:
                unit = "GPU" if self._gpu else "CPU"
                raise ConfigError(f"{self.actors} encoder actors need {self.actors * per_actor} {unit}s; the Ray "
                                  f"cluster has {available}; pass --ray-actors {max(1, available // per_actor)} "
                                  "or fewer")
            # The driver encodes questions and sizes the slices: on CPU when the actors are, so both use the
            # CPU batch size; with GPU actors, on this machine's GPU if it has one, with torch (the actors' backend).
            backend = "torch" if self._gpu and config.backend == "auto" else config.backend
            super().__init__(replace(config, device="cpu" if not self._gpu else None, backend=backend))
            # The actors read the driver's converted OpenVINO model (in a fraction of a second, where converting
            # takes seconds per pipeline; a node that cannot write there converts in memory); vectors are cached
            # by the driver alone.
            converted = str(self.converted_dir) if self.converted_dir is not None else ""
            self.actor_config = replace(self.config, device=device, batch_size=self.batch_size, cache_dir="",
                                        converted_dir=converted)
        except BaseException:
            self._shutdown()
            raise

    def _encode_new(self, texts: Sequence[str], progress: Progress | None) -> np.ndarray:
        size = self.slice_size
        items = [{"slice": number, "texts": list(texts[start : start + size])}
                 for number, start in enumerate(range(0, len(texts), size))]
        data: Any = self._ray.data
        encoded = data.from_items(items, override_num_blocks=len(items)).map_batches(
            EncoderActor, fn_constructor_kwargs={"config": self.actor_config}, batch_size=1,
            batch_format="numpy", compute=data.ActorPoolStrategy(size=min(self.actors, len(items))),
            num_gpus=1 if self._gpu else 0, num_cpus=0 if self._gpu else self.ray_config.cpus_per_actor,
        )
        encoded.context.enable_progress_bars = False  # the command shows its own
        encoded.context.print_on_execution_start = False
        encoded.context.raise_original_map_exception = True  # an actor's odqa error, not UserCodeException
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        done = 0
        try:
            for batch in _quiet(encoded.iter_batches(batch_size=None, batch_format="numpy")):
                out[batch["slice"] * size + batch["position"]] = batch["vector"]
                done += len(batch["slice"])
                if progress is not None:
                    progress(len(batch["slice"]))
        except Exception as exc:
            cause = _odqa_cause(exc)
            if cause is not None:
                cause.args = (str(cause).splitlines()[0],)  # Ray Data appends its retry advice to the message
                raise cause from exc
            raise
        if done != len(texts):  # never seen; a silent gap would write wrong vectors
            raise RuntimeError(f"the Ray pipeline returned {done} vectors for {len(texts)} texts")
        return out

    def _shutdown(self) -> None:
        if self._started and self._ray.is_initialized():
            self._ray.shutdown()
        self._started = False

    def close(self) -> None:
        """Close the embedding cache, and shut down the local Ray cluster if this encoder started it."""
        try:
            super().close()
        finally:
            self._shutdown()


def _quiet(batches: Iterator[dict[str, np.ndarray]]) -> Iterator[dict[str, np.ndarray]]:
    """``batches`` with Ray Data's log lines (start, plan, progress, an actor's error) held back while they flow;
    an error reaches the caller as an exception."""
    logger = logging.getLogger("ray.data")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield from batches
    finally:
        logger.setLevel(level)


def _odqa_cause(exc: BaseException) -> OdqaError | None:
    """The odqa error an actor raised (a model its node cannot load, say), found in Ray's chain of wrappers
    (``RayTaskError.cause`` holds the original; the wrapper itself only mimics its class)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        cause = getattr(current, "cause", None)
        if isinstance(cause, OdqaError):
            return cause
        current = cause if isinstance(cause, BaseException) else current.__cause__ or current.__context__
    return None


def engine_encoder(config: EmbedConfig, ray: RayConfig | None = None) -> Encoder:
    """The encoder of a run: a local :class:`~odqa.embed.Encoder`, or with ``ray`` settings a :class:`RayEncoder`
    encoding on that cluster (same bytes). Every command that embeds passages chooses here."""
    return Encoder(config) if ray is None else RayEncoder(config, ray)
