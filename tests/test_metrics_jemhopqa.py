"""JEMHopQA metrics: the official similarity on hand-checked token lists, and the shipped slice scored with
oracle and perturbed predictions."""

from __future__ import annotations

from pathlib import Path

import pytest

from odqa.datasets.jemhopqa import load_jemhopqa
from odqa.errors import InputError
from odqa.evaluate.ja_similarity import TokenSimilarity, normalize_ja_answer
from odqa.evaluate.jemhopqa import alignment_score, evaluate_jemhopqa, flatten_derivations
from odqa.records import Example

pytest.importorskip("sudachipy")


@pytest.fixture(scope="module")
def similarity() -> TokenSimilarity:
    return TokenSimilarity(dictionary="core")


@pytest.fixture(scope="module")
def examples(data_dir: Path) -> list[Example]:
    return list(load_jemhopqa(data_dir / "jemhopqa" / "train_ver1.2.slice.json"))


def test_similarity_is_levenshtein_ratio_over_tokens(similarity: TokenSimilarity) -> None:
    """``2 * LCS / (len(gold) + len(pred))`` over the token sequences, paired tokens made equal."""
    assert similarity("東京都と大阪府", "東京都と大阪府") == 1.0
    assert similarity("大阪府と東京都", "東京都と大阪府") == 0.5  # both tokens paired, in the other order: LCS 1
    assert similarity("東京都", "東京都と大阪府") == pytest.approx(2 / 3)  # one of two gold tokens
    assert similarity("京都府", "東京都と大阪府") == 0.0
    assert similarity("。", "、") == 1.0  # no content token on either side


def test_normalize_ja_answer() -> None:
    assert normalize_ja_answer("はい") == "YES" and normalize_ja_answer("いいえ") == "NO"
    assert normalize_ja_answer("ゴールデンボンバー (バンド)") == "ゴールデンボンバー"
    assert normalize_ja_answer("『あまちゃん』") == "あまちゃん"


def test_similarity_cases(similarity: TokenSimilarity) -> None:
    # [a, b] vs [a, c]: the particle の is dropped
    assert similarity("アメリカ合衆国の首相", "アメリカ合衆国の大統領") == 0.5
    # order matters: the LCS of [1, 0] and [0, 1] is 1
    assert similarity("大阪府と東京都", "東京都と大阪府") == 0.5
    assert similarity("05月", "5月") == 1.0  # numeral + counter as one token, leading zero dropped
    assert similarity("はい", "YES") == 1.0
    assert similarity("日立", "日立製作所") == 0.0
    assert not similarity.synonyms or similarity.dictionary == "core"


def test_alignment_is_one_to_one_and_order_free(similarity: TokenSimilarity, examples: list[Example]) -> None:
    gold = flatten_derivations(examples[0].meta["derivations"], "gold")
    assert alignment_score(list(reversed(gold)), gold, similarity, "er") == pytest.approx(len(gold))
    # three copies of the first triple: one aligns with it (1), one with the second triple, which shares only
    # the relation (1/3), the third with nothing
    assert alignment_score(gold[:1] * 3, gold, similarity, "er") == pytest.approx(1 + 1 / 3)
    assert alignment_score([], gold, similarity, "e") == 0.0


def test_oracle_predictions_score_one(similarity: TokenSimilarity, examples: list[Example]) -> None:
    oracle = {e.id: {"answer": e.answers[0], "derivations": e.meta["derivations"]} for e in examples}
    out = evaluate_jemhopqa(examples, oracle, similarity=similarity)
    for dim in ("e", "r", "er"):
        assert out[dim] == {"prec": 1.0, "recall": 1.0, "f1": 1.0}
    assert out["a"] == {"em": 1.0, "score": 1.0}
    assert out["total"] == 30 and set(out["by_type"]) == {"comparison", "compositional"}
    assert "synonym matching: off" in str(out["note"])


def test_perturbed_predictions(similarity: TokenSimilarity, examples: list[Example]) -> None:
    n_yes = sum(e.answers[0] == "YES" for e in examples)
    first_only = {e.id: {"answer": "はい", "derivations": e.meta["derivations"][:1]} for e in examples}
    out = evaluate_jemhopqa(examples, first_only, similarity=similarity)
    assert out["a"]["em"] == pytest.approx(n_yes / 30)
    assert out["a"]["score"] == pytest.approx(n_yes / 30)
    # one step kept: precision 1, recall = its objects / all gold triples
    recalls = [len(e.meta["derivations"][0][2]) / len(flatten_derivations(e.meta["derivations"], "g"))
               for e in examples]
    assert out["e"]["prec"] == 1.0
    assert out["er"]["recall"] == pytest.approx(sum(recalls) / 30)
    assert out["er"]["f1"] == pytest.approx(sum(2 * r / (1 + r) for r in recalls) / 30)


def test_wrong_relation_lowers_only_r_and_er(similarity: TokenSimilarity, examples: list[Example]) -> None:
    example = examples[0]  # 仮面ライダー電王 / あまちゃん, 放送回数, 49 / 156
    (s1, r1, o1), (s2, _, o2) = example.meta["derivations"]
    predictions = {example.id: {"answer": "あまちゃん", "derivations": [[s1, r1, o1], [s2, "XYZ", o2]]}}
    out = evaluate_jemhopqa([example], predictions, similarity=similarity)
    assert out["e"]["f1"] == 1.0
    assert out["r"] == {"prec": 0.5, "recall": 0.5, "f1": 0.5}
    assert out["er"]["f1"] == pytest.approx((1 + 2 / 3) / 2)


def test_empty_or_missing_parts_score_zero(similarity: TokenSimilarity, examples: list[Example]) -> None:
    out = evaluate_jemhopqa(examples[:2], {examples[0].id: "", examples[1].id: None}, similarity=similarity)
    assert out["a"] == {"em": 0.0, "score": 0.0} and out["er"]["f1"] == 0.0
    assert "2 predictions had no derivations" in str(out["note"])


class _FakeChikkar:
    """Stands in for chikkarpy.Chikkar (which cannot be installed offline): one synonym pair."""

    def __init__(self) -> None:
        self.dictionaries: list[object] = []

    def add_dictionary(self, dictionary: object) -> None:
        self.dictionaries.append(dictionary)

    def enable_verb(self) -> None:
        pass

    def find(self, word: str) -> list[str]:
        return {"出版": ["発行"], "発行": ["出版"]}.get(word, [])


def _fake_chikkarpy(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.machinery
    import sys
    import types

    package = types.ModuleType("chikkarpy")
    package.__spec__ = importlib.machinery.ModuleSpec("chikkarpy", None)
    package.Chikkar = _FakeChikkar  # type: ignore[attr-defined]
    dictionarylib = types.ModuleType("chikkarpy.dictionarylib")
    dictionarylib.Dictionary = lambda path=None: ("dictionary", path)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "chikkarpy", package)
    monkeypatch.setitem(sys.modules, "chikkarpy.dictionarylib", dictionarylib)


def test_synonyms_through_chikkarpy_when_installed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    plain = TokenSimilarity(dictionary="core")
    assert not plain.synonyms and plain("出版日", "発行日") == 0.5  # [出版, 日] vs [発行, 日]
    _fake_chikkarpy(monkeypatch)
    user_dic = tmp_path / "user.dic"
    user_dic.write_bytes(b"")
    with_synonyms = TokenSimilarity(dictionary="core", user_dic=user_dic)
    assert with_synonyms.synonyms and with_synonyms("出版日", "発行日") == 1.0
    out = evaluate_jemhopqa([], {}, similarity=with_synonyms)
    assert "synonym matching: on (chikkarpy, with user.dic)" in str(out["note"])
    with pytest.raises(InputError, match="no such synonym dictionary"):
        TokenSimilarity(dictionary="core", user_dic=tmp_path / "missing.dic")


def test_dictionary_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real_find_spec = importlib.util.find_spec
    if real_find_spec("sudachidict_full") is None:
        with pytest.raises(InputError, match="SudachiPy dictionary 'full' cannot be loaded"):
            TokenSimilarity(dictionary="full")
    placeholder = real_find_spec("json")  # any spec: sudachidict_full "installed" without its data
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: placeholder if name == "sudachidict_full" else real_find_spec(name, *a))
    assert TokenSimilarity().dictionary == "core"


def test_flatten_derivations() -> None:
    steps = [["A", "r", ["x", "y"]], ["B", "s", "z"]]
    assert flatten_derivations(steps, "p") == [("A", "r", "x"), ("A", "r", "y"), ("B", "s", "z")]
    assert flatten_derivations(None, "p") == []
    with pytest.raises(InputError, match="must be a list of strings"):
        flatten_derivations([["A", "r", 3]], "p")
    with pytest.raises(InputError, match=r"is not \[subject, relation, \[object, ...\]\]"):
        flatten_derivations([["A", "r"]], "p")


def test_a_synonym_dictionary_without_chikkarpy_is_checked_and_reported(tmp_path: Path) -> None:
    import importlib.util

    if importlib.util.find_spec("chikkarpy") is not None:
        pytest.skip("chikkarpy is installed")
    with pytest.raises(InputError, match="no such synonym dictionary"):
        TokenSimilarity(dictionary="core", user_dic=tmp_path / "missing.dic")
    user_dic = tmp_path / "user.dic"
    user_dic.write_bytes(b"")
    out = evaluate_jemhopqa([], {}, similarity=TokenSimilarity(dictionary="core", user_dic=user_dic))
    assert "synonym matching: off (chikkarpy is not installed" in str(out["note"])
    assert "--synonym-dic user.dic was not used (it needs chikkarpy)" in str(out["note"])
