"""Passage vectors computed elsewhere (a GPU cluster, ``--engine ray``, a download), brought to ``odqa index build``.

``--vectors V``: one ``.npy`` file, or a folder of ``.npy`` shards taken in file-name order, whose rows are the
passages' vectors in passage order. Every file is memory-mapped (``np.load(mmap_mode="r")``), so checking and
copying them holds one block of rows at a time, whatever their size. Each way they can be wrong is one typed line
before anything is written: no ``.npy`` file, a file numpy cannot read, a dtype that is not a float, a shape that is
not (rows, dimension), files of different dimensions, a row count other than the passages', a NaN or infinite
value, and vectors that are not unit length for a model that normalises.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from odqa.errors import InputError

__all__ = ["VectorSource"]

_BLOCK_ROWS = 65_536  # rows checked at a time: 192 MB at 768 dimensions
_UNIT_TOLERANCE = 1e-2  # |norm - 1| allowed for a normalising model (fp16 vectors are within ~1e-3)


class VectorSource:
    """The vectors of ``path`` (a ``.npy`` file or a folder of them), memory-mapped, as one row range."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if self.path.is_dir():
            files = sorted(p for p in self.path.iterdir() if p.suffix == ".npy")
        elif self.path.is_file():
            files = [self.path]
        else:
            raise InputError(f"--vectors {self.path}: no such file or folder; pass a .npy file or a folder of .npy "
                             "shards in passage order")
        if not files:
            raise InputError(f"--vectors {self.path}: the folder holds no .npy file; pass a .npy file or a folder of "
                             ".npy shards in passage order")
        self.files = files
        shapes = [self._open(file).shape for file in files]
        dimensions = sorted({shape[1] for shape in shapes})
        if len(dimensions) > 1:
            widths = ", ".join(f"{f.name} {shape[1]}" for f, shape in zip(files, shapes, strict=True))
            raise InputError(f"--vectors {self.path}: the files hold vectors of different dimensions ({widths}); every "
                             "shard must come from the same model")
        self.dimension = dimensions[0]
        self.starts = np.cumsum([0] + [shape[0] for shape in shapes])
        self.count = int(self.starts[-1])

    @staticmethod
    def _open(file: Path) -> np.ndarray:
        try:
            array: np.ndarray = np.load(file, mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise InputError(f"--vectors {file}: not a readable .npy array ({exc}); save the vectors with numpy.save"
                             ) from exc
        if not np.issubdtype(array.dtype, np.floating):
            raise InputError(f"--vectors {file}: dtype {array.dtype} is not a float; expected float32 (or float16 / "
                             "float64, converted to float32)")
        if array.ndim != 2 or array.shape[1] < 1:
            raise InputError(f"--vectors {file}: shape {array.shape} is not (passages, dimension); save one row per "
                             "passage")
        return array

    def rows(self, start: int, stop: int) -> np.ndarray:
        """Rows ``start:stop`` across the files, as float32 (each file mapped only while it is read, so the pages
        read do not stay in this process's memory as the build goes on)."""
        parts = []
        for number, file in enumerate(self.files):
            first, end = int(self.starts[number]), int(self.starts[number + 1])
            if end > start and first < stop:
                parts.append(np.array(self._open(file)[max(start, first) - first : min(stop, end) - first]))
        return np.ascontiguousarray(np.concatenate(parts) if parts else np.zeros((0, self.dimension)),
                                    dtype=np.float32)

    def check(self, count: int, dimension: int | None, normalize: bool) -> None:
        """Refuse vectors that cannot be ``count`` passages' vectors of ``dimension`` (None: any), from a model that
        does (``normalize``) or does not normalise; reads every row once, a block at a time."""
        if self.count != count:
            raise InputError(f"--vectors {self.path} holds {self.count:,} vectors but the input has {count:,} "
                             "passages; give one vector per passage, in passage order")
        if dimension is not None and self.dimension != dimension:
            raise InputError(f"--vectors {self.path} holds {self.dimension}-dimensional vectors but the model makes "
                             f"{dimension}-dimensional ones; pass the --model the vectors were computed with")
        for start in range(0, self.count, _BLOCK_ROWS):
            block = self.rows(start, min(start + _BLOCK_ROWS, self.count))
            finite = np.isfinite(block).all(axis=1)
            if not finite.all():
                row = start + int(np.flatnonzero(~finite)[0])
                raise InputError(f"--vectors {self.path}: vector {row:,} (counting from 0) holds NaN or infinite "
                                 "values; recompute it")
            if normalize:
                norms = np.linalg.norm(block, axis=1)
                off = np.abs(norms - 1.0) > _UNIT_TOLERANCE
                if off.any():
                    row = start + int(np.flatnonzero(off)[0])
                    raise InputError(f"--vectors {self.path}: vector {row:,} has length {norms[row - start]:.4f}, but "
                                     "the model normalises its vectors (length 1); normalise them, or pass the model "
                                     "(with --no-normalize) they were computed with")
