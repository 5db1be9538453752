"""Fusion-in-Decoder (Izacard & Grave, 2021) over any Hugging Face encoder-decoder (T5, Flan-T5, T5-lm-adapt).

The whole idea is a reshape: each (question, passage) text is encoded on its own, ``(B*N) x L``; the encoder
states are laid end to end per question, ``B x (N*L)``, and the decoder attends over all of them at once. The
checkpoint stays a plain Hugging Face folder: ``save`` writes one that ``from_pretrained`` (and ``load``) reads.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from odqa.config import Precision
from odqa.errors import ConfigError, DependencyError, InputError, ModelError, ResourceError
from odqa.read.data import ReaderBatch
from odqa.records import Hit

try:
    import torch
except ImportError as exc:  # the reader needs torch; the rest of odqa does not
    raise DependencyError("torch", "embed") from exc

__all__ = ["FiDReader", "check_encodable", "fit_in_memory", "fused_mask", "is_out_of_memory", "unreadable"]


def fused_mask(attention_mask: torch.Tensor, passage_mask: torch.Tensor) -> torch.Tensor:
    """The decoder's ``(B, N*L)`` mask: token padding and filler rows masked; a question without any passage
    keeps its first row (the question alone), so no decoder row attends to nothing."""
    b, n, length = attention_mask.shape
    keep = passage_mask.clone()
    keep[~passage_mask.any(dim=1), 0] = True
    return (attention_mask * keep.unsqueeze(-1).to(attention_mask.dtype)).view(b, n * length)


class FiDReader:
    """A seq2seq model read the Fusion-in-Decoder way, with its tokenizer, device and precision."""

    def __init__(self, model: Any, tokenizer: Any, *, device: str | None = None, precision: Precision = "fp32",
                 name: str = "model") -> None:
        if not getattr(model.config, "is_encoder_decoder", False):
            raise ModelError(_not_seq2seq(name, model.config))
        self.name = name
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        if precision == "fp16" and self.device.type != "cuda":
            raise ConfigError(f"precision fp16 needs a GPU (device is {self.device}); use bf16 or fp32 on CPU")
        if precision == "bf16" and self.device.type == "cpu":
            from odqa.embed.openvino import cpu_bf16

            if not cpu_bf16():  # autocast would run, emulated and slower than fp32
                raise ConfigError("precision bf16 would run emulated on this CPU (it has no AVX-512 BF16 or AMX, "
                                  "as OpenVINO reports it); use --precision fp32 here, or bf16 on a GPU or a CPU "
                                  "that computes it")
        self.precision = precision
        self.model = model.to(self.device)
        self.tokenizer = tokenizer

    @classmethod
    def load(cls, name: str, *, device: str | None = None, precision: Precision = "fp32") -> FiDReader:
        """Load a checkpoint by hub id or local folder; a missing or non encoder-decoder model is a ModelError."""
        from transformers import AutoConfig, AutoModelForSeq2SeqLM, AutoTokenizer

        try:
            config = AutoConfig.from_pretrained(name)
        except (OSError, ValueError) as exc:
            raise ModelError(_missing(name)) from exc
        if not getattr(config, "is_encoder_decoder", False):
            raise ModelError(_not_seq2seq(name, config))
        try:
            tokenizer = AutoTokenizer.from_pretrained(name)
            model = AutoModelForSeq2SeqLM.from_pretrained(name, config=config)
        except (OSError, ValueError) as exc:
            raise ModelError(f"cannot load reader model {name!r}: {str(exc).splitlines()[0]}; the folder needs "
                             "config.json, the weights and the tokenizer files (save_pretrained writes them)") from exc
        return cls(model, tokenizer, device=device, precision=precision, name=name)

    def save(self, folder: str | Path) -> None:
        """Write the model (fp32, as trained) and tokenizer as a Hugging Face folder."""
        self.model.save_pretrained(folder)
        self.tokenizer.save_pretrained(folder)

    def gradient_checkpointing(self) -> None:
        """Recompute activations in the backward pass: far less memory for many passages, ~30% more time."""
        enable = getattr(self.model, "activation_checkpointing_enable", None) or \
            self.model.gradient_checkpointing_enable
        enable()

    @contextlib.contextmanager
    def autocast(self) -> Iterator[None]:
        """Run under bf16/fp16 autocast when asked for (weights stay fp32)."""
        if self.precision == "fp32":
            yield
            return
        dtype = torch.bfloat16 if self.precision == "bf16" else torch.float16
        with torch.autocast(device_type=self.device.type, dtype=dtype):
            yield

    def encode(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
               passage_mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Each of the ``(B, N, L)`` rows encoded on its own; returns ``(B, N*L, d)`` states and their mask."""
        b, n, length = input_ids.shape
        states = self.model.get_encoder()(input_ids=input_ids.reshape(b * n, length),
                                          attention_mask=attention_mask.reshape(b * n, length)).last_hidden_state
        if passage_mask is None:
            passage_mask = torch.ones((b, n), dtype=torch.bool, device=input_ids.device)
        return states.reshape(b, n * length, states.shape[-1]), fused_mask(attention_mask, passage_mask)

    def loss(self, batch: ReaderBatch) -> torch.Tensor:
        """Cross-entropy of the batch's targets, the decoder attending over all of each question's passages."""
        batch = batch.to(self.device)
        with self.autocast():
            states, mask = self.encode(batch.input_ids, batch.attention_mask, batch.passage_mask)
            out = self.model(encoder_outputs=(states,), attention_mask=mask, labels=batch.labels)
        loss: torch.Tensor = out.loss
        return loss

    @torch.no_grad()
    def generate(self, batch: ReaderBatch, *, num_beams: int = 1, max_length: int = 32) -> list[str]:
        """One answer text per question: greedy or beam search over the fused encoder states."""
        from transformers.modeling_outputs import BaseModelOutput

        batch = batch.to(self.device)
        with self.autocast():
            states, mask = self.encode(batch.input_ids, batch.attention_mask, batch.passage_mask)
            out = self.model.generate(encoder_outputs=BaseModelOutput(last_hidden_state=states),
                                      attention_mask=mask, num_beams=num_beams, max_new_tokens=max_length,
                                      do_sample=False)
        texts: list[str] = self.tokenizer.batch_decode(out, skip_special_tokens=True)
        return [text.strip() for text in texts]


def unreadable(qid: str, question: str, hits: Sequence[Hit], tokenizer: Any, name: str) -> str | None:
    """Why the reader cannot read a question and its passages, or None: a text that is mostly unknown tokens to
    the tokenizer (say, Japanese with T5's vocabulary) would be read as noise and answered anyway."""
    unk = getattr(tokenizer, "unk_token_id", None)
    if unk is None:
        return None
    texts = [("question", question)] + [(f"passage {i}", f"{h.passage.title} {h.passage.text}")
                                        for i, h in enumerate(hits)]
    encoded = tokenizer([text for _, text in texts], add_special_tokens=False)["input_ids"]
    for (what, _), ids in zip(texts, encoded, strict=True):
        unknown = sum(1 for i in ids if i == unk)
        if ids and unknown / len(ids) > 0.5:
            return (f"question {qid!r}: the tokenizer of {name!r} maps {unknown} of {len(ids)} tokens of its {what} "
                    f"to {tokenizer.unk_token!r}, so the reader cannot read it; use a model whose vocabulary covers "
                    "the input's language (mT5 for non-English text)")
    return None


def check_encodable(batch: ReaderBatch, tokenizer: Any, name: str) -> None:
    """Refuse a batch holding a question the reader cannot read (:func:`unreadable`)."""
    for qid, question, hits in zip(batch.ids, batch.questions, batch.hits, strict=True):
        reason = unreadable(qid, question, hits, tokenizer, name)
        if reason is not None:
            raise InputError(reason)


def is_out_of_memory(exc: BaseException) -> bool:
    """A GPU out-of-memory error or a failed CPU allocation."""
    if isinstance(exc, torch.OutOfMemoryError):
        return True
    text = str(exc)
    return isinstance(exc, RuntimeError) and ("out of memory" in text or "can't allocate memory" in text)


def _shrunk(batch: ReaderBatch, b: int, n: int) -> ReaderBatch:
    return ReaderBatch(batch.ids[:b], batch.questions[:b], [row[:n] for row in batch.hits[:b]],
                       batch.input_ids[:b, :n], batch.attention_mask[:b, :n], batch.passage_mask[:b, :n],
                       batch.labels[:b])


def fit_in_memory(step: Callable[[ReaderBatch], object], batch: ReaderBatch, device: torch.device,
                  what: str) -> ResourceError:
    """After ``step`` ran out of memory on ``batch``: dry-run smaller batches, then fewer passages; say what fits."""
    b, n, length = batch.input_ids.shape
    tries = [(size, n) for size in _halvings(b)[1:]] + [(1, count) for count in _halvings(n)[1:]]
    head = f"{b} question(s) x {n} passages x {length} tokens do not fit in memory on {device} ({what})"
    for size, count in tries:
        _free(device)
        try:
            step(_shrunk(batch, size, count))
        except Exception as exc:  # only out-of-memory is expected; anything else is re-raised
            if not is_out_of_memory(exc):
                raise
            continue
        finally:
            _free(device)
        fix = f"--batch-size {size}" if count == n else f"--batch-size 1 --n-context {count}"
        return ResourceError(f"{head}; {size} x {count} fits: use {fix} (or --precision bf16, a shorter "
                             "--max-length, gradient checkpointing for training)")
    return ResourceError(f"{head}; not even 1 question x 1 passage fits: use a smaller model, a shorter "
                         "--max-length or a device with more memory")


def _halvings(value: int) -> list[int]:
    out = [value]
    while out[-1] > 1:
        out.append(out[-1] // 2)
    return out


def _free(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.empty_cache()


def _missing(name: str) -> str:
    where = "is not a local folder" if not Path(name).exists() else "is a path without a readable config.json"
    return (f"reader model {name!r} {where} and could not be fetched from the Hugging Face hub (no hub access "
            "here?); pass a local folder holding a T5-family checkpoint (config.json, weights, tokenizer), or "
            "allow hub access to download the hub id")


def _not_seq2seq(name: str, config: Any) -> str:
    kind = getattr(config, "model_type", type(config).__name__)
    return (f"reader model {name!r} is a {kind} model, not an encoder-decoder; Fusion-in-Decoder needs a "
            "T5-family checkpoint (t5-base, google/flan-t5-base, google/t5-base-lm-adapt, ...)")
