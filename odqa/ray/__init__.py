"""Scale-out on Ray (extra ``odqa[ray]``): the encoding of ``odqa refine`` and ``odqa index build`` on a cluster.

``ray`` itself is imported only when a :class:`RayEncoder` is built.
"""

from __future__ import annotations

from odqa.ray.config import Engine, RayConfig, ray_config
from odqa.ray.encoder import EncoderActor, RayEncoder, engine_encoder

__all__ = ["EncoderActor", "Engine", "RayConfig", "RayEncoder", "engine_encoder", "ray_config"]
