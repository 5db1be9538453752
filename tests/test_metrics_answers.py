"""The answer metrics every dataset shares (odqa.evaluate.answers): one token-overlap F1 for all of them."""

from __future__ import annotations

import inspect

import pytest

import odqa.evaluate.hieradate as hieradate
from odqa.evaluate.answers import token_f1, token_prf


def test_token_prf_counts_shared_tokens_with_multiplicity() -> None:
    f1, precision, recall = token_prf(["a", "a", "b"], ["a", "c"])
    assert (precision, recall) == (pytest.approx(1 / 3), 0.5) and f1 == pytest.approx(0.4)
    assert token_prf(["x", "x"], ["x", "x", "y"]) == (pytest.approx(0.8), 1.0, pytest.approx(2 / 3))


def test_token_prf_without_a_shared_token_is_zero_even_for_two_empty_answers() -> None:
    assert token_prf(["a"], ["b"]) == (0.0, 0.0, 0.0)
    assert token_prf([], []) == (0.0, 0.0, 0.0)  # HotpotQA / HieraDate; SQuAD's token_f1 scores this 1


def test_squad_token_f1_is_built_on_the_same_overlap() -> None:
    expected = token_prf(["cat", "sat"], ["cat", "sat", "down"])[0]
    assert token_f1("The cat sat", ["cat sat down"]) == pytest.approx(expected) == 0.8
    assert token_f1("", [""]) == 1.0 and token_f1("", ["cat"]) == 0.0


def test_hieradate_has_no_overlap_count_of_its_own() -> None:
    """One definition: HieraDate's text and age F1 call odqa.evaluate.answers.token_prf."""
    assert "Counter" not in inspect.getsource(hieradate)
    assert hieradate.token_prf is token_prf
