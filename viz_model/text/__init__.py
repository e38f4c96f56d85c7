"""Text: tokenizers (HF tokenizers), the corpora and user text, n-gram counts, the corpus index."""
