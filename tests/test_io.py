from __future__ import annotations

import contextlib
import gzip
import json
import os
from pathlib import Path

import pytest

from odqa.errors import FormatError, InputError, OutputError
from odqa.io import (
    atomic_write,
    example_from_dict,
    example_to_fid,
    read_dpr_tsv,
    read_fid,
    read_jsonl,
    write_dpr_tsv,
    write_jsonl,
)
from odqa.records import Hit, Passage


def test_malformed_line_is_reported_with_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text('{"question": "a"}\n\n{"question": "b"\n')
    with pytest.raises(FormatError) as info:
        list(read_jsonl(path))
    assert info.value.line == 3 and str(path) in str(info.value) and ":3:" in str(info.value)


def test_non_object_line_and_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text("[1, 2]\n")
    with pytest.raises(FormatError, match="expected a JSON object"):
        list(read_jsonl(path))
    with pytest.raises(InputError, match="no such file"):
        list(read_jsonl(tmp_path / "missing.jsonl"))


def test_atomic_write_keeps_old_file_on_failure(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    write_jsonl(path, [{"a": 1}])
    with pytest.raises(RuntimeError), atomic_write(path) as fh:
        fh.write("partial")
        raise RuntimeError("crash")
    assert path.read_text() == '{"a": 1}\n'
    assert list(tmp_path.iterdir()) == [path]  # no temp file left behind


def test_read_fid_json_array_gzip_and_shapes(tmp_path: Path) -> None:
    records = [
        {"id": "q1", "question": "Who?", "answers": ["X"], "ctxs": [{"id": "7", "title": "T", "text": "X did it"}]},
        {"_id": "q2", "question": "When?", "text_answers": {"text": ["1990", "1991"]}, "passages": ["plain text"]},
        {"question": "No id", "answer": "Y"},
    ]
    path = tmp_path / "q.json.gz"
    with gzip.open(path, "wt") as fh:
        json.dump(records, fh)
    q1, q2, q3 = read_fid(path)
    assert q1.id == "q1" and q1.answers == ("X",) and q1.ctxs is not None and q1.ctxs[0].id == "7"
    assert q2.id == "q2" and q2.answers == ("1990", "1991")
    assert q2.ctxs is not None and q2.ctxs[0].text == "plain text" and q2.ctxs[0].id == "q2:0"
    assert q3.id == "2" and q3.answers == ("Y",) and q3.ctxs is None


def test_bad_records() -> None:
    with pytest.raises(FormatError, match="no 'question'"):
        example_from_dict({"id": 1})
    with pytest.raises(FormatError, match="answers must be"):
        example_from_dict({"question": "q", "answers": {"a": 1}})
    with pytest.raises(FormatError, match="context 0"):
        example_from_dict({"question": "q", "ctxs": [{"title": "no text"}]})


def test_fid_record_and_atlas_key() -> None:
    ex = example_from_dict({"id": "q", "question": "Q?", "answers": ["a"]})
    hits = [Hit(Passage("p1", "d", "T", "text one"), 2.5), Hit(Passage("p2", "d", "T", "text two"), 1.0)]
    fid = example_to_fid(ex, hits, has_answer=[True, False])
    assert fid == {
        "id": "q", "question": "Q?", "answers": ["a"],
        "ctxs": [
            {"id": "p1", "title": "T", "text": "text one", "score": 2.5, "has_answer": True},
            {"id": "p2", "title": "T", "text": "text two", "score": 1.0, "has_answer": False},
        ],
    }
    assert "passages" in example_to_fid(ex, hits, ctx_key="passages")


def test_dpr_tsv_round_trip(tmp_path: Path) -> None:
    passages = [Passage("1", "Aaron", "Aaron", 'text with "quotes"\tand a tab'), Passage("2", "B", "B", "two")]
    path = tmp_path / "psgs.tsv"
    assert write_dpr_tsv(path, passages) == 2
    assert path.read_text().splitlines()[0] == "id\ttext\ttitle"
    assert list(read_dpr_tsv(path)) == passages


def test_dpr_tsv_without_header_row(tmp_path: Path) -> None:
    path = tmp_path / "psgs.tsv"
    path.write_text("1\tfirst text\tA\n2\tsecond\tB\n")
    assert [(p.id, p.text, p.title) for p in read_dpr_tsv(path)] == [("1", "first text", "A"), ("2", "second", "B")]
    path.write_text("id and text only\tno title\n")
    with pytest.raises(FormatError, match=r"psgs\.tsv:1: expected 3 tab-separated fields"):
        list(read_dpr_tsv(path))


def test_undecodable_and_corrupt_files_are_format_errors(tmp_path: Path) -> None:
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(b'{"question": "ok"}\n{"question": "caf\xe9"}\n')
    with pytest.raises(FormatError, match=r"latin\.jsonl:2: not UTF-8 text"):
        list(read_jsonl(latin))
    corrupt = tmp_path / "c.jsonl.gz"
    corrupt.write_bytes(b"plain bytes")
    with pytest.raises(FormatError, match="corrupt or truncated gzip"):
        list(read_jsonl(corrupt))
    with pytest.raises(InputError, match="is a folder"):
        list(read_jsonl(tmp_path))


def test_atomic_write_gives_normal_permissions_and_typed_errors(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    write_jsonl(path, [{"a": 1}])
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask
    (tmp_path / "file").write_text("x")
    with pytest.raises(OutputError, match="cannot write"):
        write_jsonl(tmp_path / "file" / "out.jsonl", [{"a": 1}])


def test_absurdly_nested_json_is_a_format_error(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(FormatError, match="nested too deeply"):
        list(read_fid(deep))
    deep_line = tmp_path / "deep.jsonl"
    deep_line.write_text('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    with pytest.raises(FormatError, match=r"deep\.jsonl:1: JSON nested too deeply"):
        list(read_jsonl(deep_line))


def test_dpr_tsv_field_over_the_csv_limit_is_a_format_error(tmp_path: Path) -> None:
    path = tmp_path / "psgs.tsv"
    path.write_text('id\ttext\ttitle\n1\tfine\tA\n2\t"an unclosed quote ' + "word " * 40_000 + "\tB\n")
    with pytest.raises(FormatError, match=r"psgs\.tsv:3: unreadable TSV \(field larger than field limit"):
        list(read_dpr_tsv(path))


def test_dpr_tsv_nul_byte_is_a_format_error(tmp_path: Path) -> None:
    path = tmp_path / "psgs.tsv"
    path.write_text("id\ttext\ttitle\n1\tfine\tA\n2\tbro\x00ken\tB\n")
    with pytest.raises(FormatError, match=r"psgs\.tsv:3: NUL byte"):
        list(read_dpr_tsv(path))


@pytest.mark.parametrize("key", ["id", "_id", "qid", "idx", "question_id"])
def test_one_list_of_id_keys_for_questions_and_predictions(tmp_path: Path, key: str) -> None:
    from odqa.evaluate.predictions import read_predictions
    from odqa.io import ID_KEYS

    assert key in ID_KEYS
    assert example_from_dict({key: "q7", "question": "Who?"}).id == "q7"
    path = tmp_path / "pred.json"
    path.write_text(json.dumps([{key: "q7", "prediction": "Anna"}]), encoding="utf-8")
    assert read_predictions(path) == {"q7": "Anna"}


def test_require_file_says_folder_or_missing_and_what_to_give(tmp_path: Path) -> None:
    from odqa.evaluate.predictions import read_predictions
    from odqa.io import require_file

    file = tmp_path / "q.jsonl"
    file.write_text("{}\n", encoding="utf-8")
    assert require_file(str(file), "the questions") == file
    with pytest.raises(InputError, match=f"^{tmp_path} is a folder, not a file; give the questions$"):
        require_file(tmp_path, "the questions")
    with pytest.raises(InputError, match=f"^{tmp_path}/none.jsonl: no such file; give the questions$"):
        require_file(tmp_path / "none.jsonl", "the questions")
    with pytest.raises(InputError, match=f"^{tmp_path} is a folder, not a file$"):
        list(read_jsonl(tmp_path))
    with pytest.raises(InputError, match=f"^{tmp_path} is a folder, not a file; give the prediction file"):
        read_predictions(tmp_path)
    with pytest.raises(InputError, match=f"^{tmp_path}/none.json: no such file; give the prediction file"):
        read_predictions(tmp_path / "none.json")


def test_a_named_pipe_is_read_like_a_file(tmp_path: Path) -> None:
    """`odqa refine <(zcat q.jsonl.gz)` hands over a pipe, which is not a regular file but can be read."""
    import threading

    fifo = tmp_path / "q.fifo"
    os.mkfifo(fifo)

    def feed() -> None:
        with contextlib.suppress(BrokenPipeError), fifo.open("w", encoding="utf-8") as fh:
            fh.write('{"question": "Who?"}\n')

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    try:
        assert [obj for _, obj in read_jsonl(fifo)] == [{"question": "Who?"}]
    finally:
        if writer.is_alive():  # the reader failed before opening the pipe: open it so the writer can finish
            os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
        writer.join(timeout=10)


def test_a_context_title_is_kept_as_its_json_spelling() -> None:
    # an article may be named by a number ("1999", "0"): a number in the JSON is that title, spelled as JSON does
    record = json.loads('{"question": "q", "ctxs": [{"title": 1999, "text": "a"}, {"title": 0, "text": "b"}, '
                        '{"title": 2.5, "text": "c"}, {"title": null, "text": "d"}, {"text": "e"}, '
                        '{"title": "1999", "text": "f"}]}')
    titles = [d.title for d in example_from_dict(record).ctxs or ()]
    assert titles == ["1999", "0", "2.5", "", "", "1999"]
    for bad in (True, ["a"], {"x": 1}):
        with pytest.raises(FormatError, match="context 0: 'title' must be a string or a number"):
            example_from_dict({"question": "q", "ctxs": [{"title": bad, "text": "a"}]})
