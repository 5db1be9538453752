"""The reader side: batches for a Fusion-in-Decoder reader (``odqa.read.data``); needs torch."""
