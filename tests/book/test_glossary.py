"""Every step of every feature file uses a phrase of the step glossary (docs/writing-scenarios.md),
or is listed in features/glossary-allowlist.txt until its scenario is rewritten; the allow-list
has no stale entry, so it only shrinks."""

from __future__ import annotations

from pathlib import Path

from conformance.book import data
from conformance.book.glossary import allowlist, json_depth, normalise, phrases, to_regex
from conformance.paths import features_dir

ALLOWLIST = features_dir() / "glossary-allowlist.txt"
#: Inline JSON deeper than this is a table or doc string waiting to be written.
MAX_JSON_DEPTH = 3


def _steps() -> list[tuple[str, str, str]]:
    """(feature file, scenario name, step text) of every step, backgrounds included."""
    out = []
    for path in sorted(features_dir().glob("*.feature")):
        for sc in data.parse_feature(path):
            for step in sc.background + sc.steps:
                out.append((path.name, sc.name, step.text))
    return out


def test_the_glossary_is_parsed() -> None:
    found = phrases()
    assert len(found) > 60
    assert "the kernel runs" in found
    assert to_regex('the model answers "<text>"[ in <n> chunks]').fullmatch('the model answers "hi" in 3 chunks')
    assert to_regex("the (kernel|commonagent) profile").fullmatch("the commonagent profile")
    assert not to_regex("the kernel runs").fullmatch("the kernel runs, helper calls need not meet")


def test_every_step_uses_a_glossary_phrase_or_is_allow_listed() -> None:
    glossary = [to_regex(p) for p in phrases()]
    allowed_phrases, _ = allowlist(ALLOWLIST)
    allowed = [to_regex(p) for p in allowed_phrases]
    unknown = sorted(
        {f"{normalise(text)}    ({feature} / {name})" for feature, name, text in _steps()
         if not any(r.fullmatch(text) for r in glossary) and not any(r.fullmatch(text) for r in allowed)}
    )
    assert not unknown, "step phrases not in the glossary (docs/writing-scenarios.md):\n" + "\n".join(unknown)


def test_the_allow_list_has_no_stale_entry() -> None:
    """An entry no step needs any more (its scenarios were rewritten) must be removed."""
    glossary = [to_regex(p) for p in phrases()]
    steps = _steps()
    needed = [text for _, _, text in steps if not any(r.fullmatch(text) for r in glossary)]
    allowed_phrases, blobs = allowlist(ALLOWLIST)
    stale = [p for p in allowed_phrases if not any(to_regex(p).fullmatch(t) for t in needed)]
    deep = {f"{f} / {n}" for f, n, t in steps if json_depth(t) > MAX_JSON_DEPTH}
    stale += [f"json: {b}" for b in blobs if b not in deep]
    assert not stale, "remove from features/glossary-allowlist.txt:\n" + "\n".join(stale)


def test_inline_json_stays_shallow_or_is_allow_listed() -> None:
    _, blobs = allowlist(ALLOWLIST)
    deep = sorted({f"{f} / {n}" for f, n, t in _steps() if json_depth(t) > MAX_JSON_DEPTH} - set(blobs))
    assert not deep, f"inline JSON deeper than {MAX_JSON_DEPTH} levels (use a table or doc string):\n" + "\n".join(deep)


def test_allow_list_lives_with_the_features() -> None:
    assert isinstance(ALLOWLIST, Path) and ALLOWLIST.is_file()
