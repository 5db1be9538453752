"""Which engine runs the encoding of a refine or index build, and how the Ray engine runs (no ray import here)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from odqa.errors import ConfigError

__all__ = ["Engine", "RayConfig", "ray_config"]

Engine = Literal["local", "ray"]


@dataclass(frozen=True)
class RayConfig:
    """The Ray cluster to use and the encoder actors to run on it.

    ``address`` None attaches to ``RAY_ADDRESS`` when set and otherwise starts a local cluster for the run;
    ``actors`` None runs one actor per GPU of the cluster, or one per ``cpus_per_actor`` CPUs when it has none.
    """

    address: str | None = None
    actors: int | None = None
    cpus_per_actor: int = 1

    def __post_init__(self) -> None:
        if self.actors is not None and self.actors < 1:
            raise ConfigError(f"Ray actors must be >= 1, got {self.actors}; leave it out for one per GPU or CPU")
        if self.cpus_per_actor < 1:
            raise ConfigError(f"cpus_per_actor must be >= 1, got {self.cpus_per_actor}")


def ray_config(engine: Engine, address: str | None, actors: int | None) -> RayConfig | None:
    """The Ray settings of a command's flags, or None for the local engine (which takes no Ray flags).

    The Ray engine distributes the embedding of passages; a run that embeds none (a bm25 index or scorer) has
    nothing to send and runs here.
    """
    if engine == "local":
        given = [flag for flag, value in (("--ray-address", address), ("--ray-actors", actors)) if value is not None]
        if given:
            raise ConfigError(f"{' and '.join(given)} only apply to the Ray engine; add --engine ray, or drop them")
        return None
    return RayConfig(address=address, actors=actors)
