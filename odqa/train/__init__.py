"""Training retrievers and rerankers on a dataset's questions (``odqa train-retriever``, ``odqa train-reranker``).

- :mod:`odqa.train.config`: ``TrainRankerConfig`` (torch-free);
- :mod:`odqa.train.data`: candidates, positives, mined negatives, the split by article;
- :mod:`odqa.train.loop`: the shared loop (checkpoints, exact resume, dev recall per epoch, the best kept);
- :mod:`odqa.train.retriever` and :mod:`odqa.train.reranker`: the two models and their entry points.

Import the entry points from their modules (``from odqa.train.retriever import train_retriever``): they need torch.
"""
