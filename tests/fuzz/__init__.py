"""The request-side fuzzer: its in-process broker (broker.py), atheris target (fuzz_requests.py)
and the seed corpus of frames real clients sent (corpus/, recorded by record_corpus.py)."""

from pathlib import Path

CORPUS = Path(__file__).parent / "corpus"
