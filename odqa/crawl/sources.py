"""Offline sources, for users without keys or network: a MediaWiki XML dump and a folder of HTML files.

A dump is streamed (never loaded whole) and its wikitext turned into plain text with mwparserfromhell. A
folder gives each question the files under ``DIR/<question id>/`` and the file ``DIR/<Subject>.html``.
"""

from __future__ import annotations

import bz2
import contextlib
import gzip
import re
import xml.etree.ElementTree as ET
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, cast
from urllib.parse import quote, unquote, urlsplit

from odqa._optional import require
from odqa.crawl.fetch import decode_html
from odqa.crawl.wikipedia import normalise_title
from odqa.errors import InputError
from odqa.records import Example, Page

__all__ = ["DumpArticle", "html_files_for", "read_dump", "read_html_file", "subject_pages", "wikitext_to_text"]

_HIDDEN_TAGS = frozenset({"ref", "references", "gallery", "math", "score", "timeline", "syntaxhighlight"})
_MEDIA_NAMESPACES = frozenset({"6", "14", "-2"})  # File, Category, Media: their links are not prose
_HTML_SUFFIXES = frozenset({".html", ".htm", ".xhtml"})
_EMPTY_BRACKETS = re.compile(r"\s*\(\s*[,;:]?\s*\)")  # what is left of "(<template>)" once it is dropped


@dataclass(frozen=True)
class DumpArticle:
    """One article of a dump, as plain text, with the URL it has on the dumped site."""

    title: str
    text: str
    url: str


def wikitext_to_text(
    wikitext: str, hidden_prefixes: Iterable[str] = ("file", "image", "category", "media")
) -> str:
    """Plain prose from wikitext: templates, references, file and category links dropped, link text kept."""
    mwparser = require("mwparserfromhell", "crawl")
    code = mwparser.parse(wikitext)
    prefixes = {p.lower() for p in hidden_prefixes}
    for node in code.filter(recursive=True, forcetype=(mwparser.nodes.Tag, mwparser.nodes.Wikilink)):
        hidden = (
            str(node.tag).strip().lower() in _HIDDEN_TAGS
            if isinstance(node, mwparser.nodes.Tag)
            else str(node.title).split(":", 1)[0].strip().lower() in prefixes and ":" in str(node.title)
        )
        if hidden:
            with contextlib.suppress(ValueError):  # already gone with a removed parent
                code.remove(node)
    text = code.strip_code(normalize=True, collapse=True)
    lines = (" ".join(_EMPTY_BRACKETS.sub("", line).split()) for line in text.splitlines())
    return "\n".join(line for line in lines if line)


def _open_dump(path: Path) -> IO[bytes]:
    if path.suffix == ".bz2":
        return bz2.open(path, "rb")
    if path.suffix in {".gz", ".gzip"}:
        return cast(IO[bytes], gzip.open(path, "rb"))
    return path.open("rb")


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


@dataclass
class _Site:
    """What a dump's ``<siteinfo>`` says: the article URL prefix, and the names of the File/Category namespaces."""

    base: str = ""
    hidden: list[str] = field(default_factory=lambda: ["file", "image", "category", "media"])


def _iter_pages(path: Path, site: _Site) -> Iterator[dict[str, str]]:
    """Stream ``{title, ns, text, redirect}`` per page; fills ``site`` from ``<siteinfo>`` (which comes first).

    Finished elements are dropped from the tree as it goes, so memory stays flat on a multi-GB dump.
    """
    try:
        with _open_dump(path) as fh:
            root = None
            for event, elem in ET.iterparse(fh, events=("start", "end")):
                if root is None:
                    root = elem
                if event != "end":
                    continue
                name = _local(elem.tag)
                if name == "siteinfo":
                    for child in elem.iter():
                        if _local(child.tag) == "base" and child.text:
                            site.base = child.text.rsplit("/", 1)[0] + "/"
                        elif _local(child.tag) == "namespace" and child.get("key") in _MEDIA_NAMESPACES:
                            site.hidden.append((child.text or "").lower())
                    root.clear()
                elif name == "page":
                    page = {"title": "", "ns": "0", "text": "", "redirect": ""}
                    for child in elem.iter():
                        local = _local(child.tag)
                        if local in {"title", "ns", "text"}:
                            page[local] = child.text or ""
                        elif local == "redirect":
                            page["redirect"] = child.get("title", "")
                    root.clear()
                    yield page
    except ET.ParseError as exc:
        raise InputError(f"{path}: not a valid MediaWiki XML dump ({exc}); give a pages-articles .xml(.bz2)") from exc
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise InputError(_damaged(path, exc)) from exc
    except OSError as exc:
        if exc.errno is None:  # bz2 and gzip report damaged data as an OSError without an errno
            raise InputError(_damaged(path, exc)) from exc
        raise InputError(f"{path}: cannot read the dump: {exc}") from exc


def _damaged(path: Path, exc: Exception) -> str:
    return (f"{path}: truncated or corrupt compressed dump ({exc}); download it again (check its size or "
            "checksum against the dump's listing)")


def read_dump(path: str | Path, titles: Iterable[str]) -> dict[str, DumpArticle]:
    """The articles named ``titles`` (normalised title -> article), redirects followed one hop.

    One streaming pass, plus a second one only for redirect targets that appeared before their redirect.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such dump file")
    wanted = {normalise_title(t) for t in titles}
    found: dict[str, DumpArticle] = {}
    redirects: dict[str, str] = {}
    for pass_number in range(2):
        targets = set(redirects.values()) - set(found)
        if pass_number == 1 and not targets:
            break
        look = wanted | targets
        site = _Site()
        for page in _iter_pages(path, site):
            title = normalise_title(page["title"])
            if page["ns"] != "0" or title not in look or title in found:
                continue
            if page["redirect"]:
                redirects[title] = normalise_title(page["redirect"])
                look.add(redirects[title])
                continue
            url = f"{site.base}{quote(title.replace(' ', '_'))}" if site.base else f"dump:{path.name}#{title}"
            found[title] = DumpArticle(title, wikitext_to_text(page["text"], site.hidden), url)
    for source, target in redirects.items():
        if target in found and source not in found:
            found[source] = found[target]
    return {title: found[title] for title in wanted if title in found}


def _plain(name: str) -> bool:
    """A name that is one file name (not ``a/b``, ``..``), so it cannot reach outside the folder."""
    return name not in {"", ".", ".."} and Path(name).name == name


def subject_pages(root: str | Path, example: Example) -> list[Path]:
    """The question's subject page in the folder: ``root/<Subject>.html`` (spaces or underscores), if any."""
    subject = example.subject or ""
    return [candidate for stem in dict.fromkeys((subject, subject.replace(" ", "_"))) if _plain(stem)
            for suffix in sorted(_HTML_SUFFIXES) if (candidate := Path(root) / f"{stem}{suffix}").is_file()]


def html_files_for(root: str | Path, example: Example) -> list[Path]:
    """The HTML files of one question: ``root/<id>/*.html`` in name order, then ``root/<Subject>.html``.

    An id or subject that is not a plain file name (``a/b``, ``..``) matches nothing.
    """
    root = Path(root)
    files = []
    if _plain(example.id):
        files = sorted(p for p in (root / example.id).glob("*") if p.suffix.lower() in _HTML_SUFFIXES)
    return files + [page for page in dict.fromkeys(subject_pages(root, example)) if page not in files]


def read_html_file(url: str, root: str | Path, max_bytes: int) -> Page:
    """A ``file://`` result as a Page; refuses files outside ``root`` and files over ``max_bytes``."""
    path = Path(unquote(urlsplit(url).path)).resolve()
    if not path.is_relative_to(Path(root).resolve()):
        return Page(url=url, status="error", error=f"blocked_address: {path} is outside --html-dir")
    try:
        size = path.stat().st_size
        if size > max_bytes:
            return Page(url=url, status="error", error=f"too_large: {size} bytes > {max_bytes}")
        body = path.read_bytes()
    except OSError as exc:
        return Page(url=url, status="error", error=f"error: {exc.strerror or exc}")
    if b"\x00" in body[:2048]:
        return Page(url=url, status="error", error="not_html: binary file")
    return Page(url=url, status="ok", content_type="text/html", html=decode_html(body, None), final_url=url)
