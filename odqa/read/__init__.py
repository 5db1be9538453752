"""The Fusion-in-Decoder reader; needs torch (``odqa[embed]``).

``data`` (reader batches, from a retriever or each question's ctxs), ``model`` (``FiDReader``), ``infer`` (``read``,
``read_to_file``), ``train`` (``train_reader``), ``config`` (``ReadConfig``, ``TrainReaderConfig``; torch-free),
``tiny`` (random-weight T5 models for tests, benchmarks and examples).
"""
