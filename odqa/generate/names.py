"""Fictional entity names for pseudo-instruction data, written for odqa (paper 004 used ChatGPT's).

Names are built by combining short word lists, so each kind offers hundreds to thousands of distinct names.
Invented surnames and place stems keep them from colliding with real people or places.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Literal

from odqa.errors import InputError

__all__ = ["KINDS", "EntityKind", "fictional_pool", "sample_names"]

EntityKind = Literal["person", "team", "company", "school", "town", "country", "award", "party", "position"]
KINDS: tuple[EntityKind, ...] = (
    "person",
    "team",
    "company",
    "school",
    "town",
    "country",
    "award",
    "party",
    "position",
)

_GIVEN = [
    "Ada",
    "Bram",
    "Celia",
    "Dorian",
    "Edda",
    "Fenn",
    "Greta",
    "Hollis",
    "Ines",
    "Jory",
    "Kaia",
    "Lorcan",
    "Mirela",
    "Nils",
    "Odette",
    "Pim",
    "Quinta",
    "Rafe",
    "Sabine",
    "Tobin",
    "Ulla",
    "Vesper",
    "Wren",
    "Xavi",
    "Yara",
    "Zeno",
    "Alba",
    "Basil",
    "Cosima",
    "Dag",
    "Elowen",
    "Florian",
    "Gwen",
    "Hugo",
    "Isolde",
    "Jonah",
]
_FAMILY = [
    "Ambervale",
    "Brindlecott",
    "Caskwell",
    "Dunmorrow",
    "Elderquist",
    "Fennimore",
    "Gorsebury",
    "Hartwhistle",
    "Ivelstone",
    "Juniperra",
    "Kettleby",
    "Larkspurr",
    "Mossington",
    "Nettlefold",
    "Oakhallow",
    "Pebbleton",
    "Quillberry",
    "Rookfield",
    "Sallowmere",
    "Thistlewick",
    "Umberlay",
    "Vantress",
    "Willowstrand",
    "Yarrowby",
    "Zephyrin",
    "Ashgrove",
    "Bramblecourt",
    "Cinderlow",
    "Dovecombe",
    "Emberley",
]
_PLACE_STEM = [
    "Corvel",
    "Dunmar",
    "Estwyn",
    "Falhaven",
    "Glenmere",
    "Harrowick",
    "Istrel",
    "Jessow",
    "Kelderan",
    "Lunmoor",
    "Merrowind",
    "Norvale",
    "Orlesk",
    "Pellagrin",
    "Quarnby",
    "Rostwick",
    "Selvane",
    "Tarrowin",
    "Ulverin",
    "Vellmark",
]
_PLACE_SUFFIX = (
    "",
    " Falls",
    " Crossing",
    " Harbour",
    " Heights",
    "ton",
    "ford",
    " Springs",
    " Bay",
    " Hollow",
)
_COUNTRY = [
    "Aldoria",
    "Belvania",
    "Corvessa",
    "Drastavia",
    "Eskaland",
    "Fervania",
    "Galdonia",
    "Hestmark",
    "Illyrene",
    "Jorvalia",
    "Kestrania",
    "Lumeria",
    "Mordavia",
    "Norrenia",
    "Ostravel",
    "Pellandia",
    "Quorvia",
    "Rostavia",
    "Sildavia",
    "Tavaria",
    "Ulmeria",
    "Varnesse",
    "Westerrin",
    "Zandoria",
]
_MASCOT = ["Herons", "Foxes", "Comets", "Badgers", "Owls", "Lynxes", "Otters", "Falcons", "Stags", "Ravens"]
_COMPANY_HEAD = [
    "Bright",
    "Silver",
    "Quiet",
    "Copper",
    "North",
    "Clear",
    "Swift",
    "Keen",
    "Amber",
    "Tidal",
    "Lumen",
    "Vertex",
]
_COMPANY_TAIL = [
    "Works",
    "Dynamics",
    "Systems",
    "Foundry",
    "Labs",
    "Logistics",
    "Partners",
    "Holdings",
    "Mills",
    "Ventures",
]
_SCHOOL = ("College", "University", "Academy", "Institute of Technology", "School of Arts")
_AWARD_HEAD = (
    "Golden Quill",
    "Silver Lantern",
    "Northern Star",
    "Crimson Ribbon",
    "Iron Compass",
    "Blue Harbour",
    "Open Gate",
    "Evergreen",
)
_AWARD_TAIL = ["Medal", "Prize", "Award", "Honour", "Laurel"]
_PARTY_HEAD = ["United", "Progressive", "Civic", "Radical", "Agrarian", "Liberal", "National", "Green"]
_PARTY_TAIL = ["Union", "Party", "Alliance", "Movement", "Front", "League"]
_ROLE = ("Mayor", "Chancellor", "High Treasurer", "Governor", "Speaker of the Assembly", "Chief Magistrate")


def _towns() -> list[str]:
    return [stem + suffix for stem, suffix in itertools.product(_PLACE_STEM, _PLACE_SUFFIX)]


@cache
def fictional_pool(kind: EntityKind) -> tuple[str, ...]:
    """Every fictional name of ``kind``, in a fixed order (sampling order comes from the caller's RNG)."""
    pools: Mapping[EntityKind, Sequence[str]] = {
        "person": [f"{g} {f}" for g, f in itertools.product(_GIVEN, _FAMILY)],
        "team": [f"{t} {m}" for t, m in itertools.product(_PLACE_STEM, _MASCOT)],
        "company": [f"{h} {t}" for h, t in itertools.product([*_COMPANY_HEAD, *_PLACE_STEM], _COMPANY_TAIL)],
        "school": [f"{s} {k}" for s, k in itertools.product([*_PLACE_STEM, *_FAMILY], _SCHOOL)],
        "town": _towns(),
        "country": list(_COUNTRY),
        "award": [f"{h} {t}" for h, t in itertools.product(_AWARD_HEAD, _AWARD_TAIL)],
        "party": [f"{h} {t}" for h, t in itertools.product(_PARTY_HEAD, _PARTY_TAIL)],
        "position": [f"{r} of {t}" for r, t in itertools.product(_ROLE, _towns())],
    }
    return tuple(pools[kind])


def sample_names(kind: EntityKind, count: int, rng: random.Random, *, subject: str | None = None) -> list[str]:
    """``count`` distinct fictional names of ``kind`` for the facts of ``subject`` (named in the error).

    Raises :class:`~odqa.errors.InputError` when the subject has more distinct entities of ``kind`` than the
    built-in pool holds.
    """
    pool = fictional_pool(kind)
    if count > len(pool):
        whose = f"subject {subject!r}" if subject is not None else "one subject"
        raise InputError(
            f"{whose} has {count} distinct {kind} entities, but the built-in {kind} name pool has only "
            f"{len(pool)}; split that subject's facts into several subjects of at most {len(pool)} {kind} "
            "entities each (or drop some of its facts)"
        )
    return rng.sample(pool, count)
