"""The skill model: parsing, validation rules, hashing and the write/load round trip."""

from __future__ import annotations

import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from upskill_hub.cases import Assertion, Case, SkillMeta
from upskill_hub.skill import (
    FrontmatterError,
    Skill,
    load_skill,
    name_problem,
    parse_frontmatter,
    split_frontmatter,
)

GOOD_MD = """---
name: demo-skill
description: Use when you need a demonstration skill.
license: Apache-2.0
metadata:
  author: upskill-hub
---

# Demo

Do the thing.
"""


def make_skill(tmp_path: Path, text: str | bytes, name: str = "demo-skill", meta: str | None = None) -> Path:
    folder = tmp_path / name
    folder.mkdir(parents=True)
    data = text.encode("utf-8") if isinstance(text, str) else text
    (folder / "SKILL.md").write_bytes(data)
    if meta is not None:
        (folder / "skill_meta.json").write_text(meta)
    return folder


def errors_of(path: Path, strict: bool = False) -> list[str]:
    return [str(p) for p in load_skill(path, strict=strict).errors]


def test_valid_skill_loads_with_facts(tmp_path: Path) -> None:
    folder = make_skill(tmp_path, GOOD_MD)
    (folder / "references").mkdir()
    (folder / "references" / "notes.md").write_text("more")
    res = load_skill(folder)
    assert res.ok, res.problems
    s = res.skill
    assert s.name == "demo-skill"
    assert s.license == "Apache-2.0"
    assert s.metadata == {"author": "upskill-hub"}
    assert s.resources()["references"] == ["references/notes.md"]
    assert len(s.version) == 12
    assert s.token_estimate > 10


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("# no frontmatter\n", "frontmatter"),
        ("---\nname: demo-skill\ndescription: x\n", "frontmatter"),
        ("---\n- a\n- b\n---\nbody\n", "frontmatter"),
        ("---\nname: !!python/object:os.system demo\ndescription: x\n---\n", "frontmatter"),
        ("---\nname: Demo-Skill\ndescription: x\n---\nbody\n", "name"),
        ("---\nname: demo--skill\ndescription: x\n---\nbody\n", "name"),
        ("---\nname: -demo-skill\ndescription: x\n---\nbody\n", "name"),
        ("---\nname: other-name\ndescription: x\n---\nbody\n", "name"),
        ("---\nname: demo-skill\ndescription: ''\n---\nbody\n", "description"),
        ("---\nname: demo-skill\ndescription: " + "d" * 1025 + "\n---\nbody\n", "description"),
        ("---\nname: demo-skill\ndescription: x\nmetadata:\n  version: [1]\n---\nbody\n", "metadata"),
        ("---\nname: demo-skill\ndescription: x\nmetadata: [a]\n---\nbody\n", "metadata"),
        ("---\nname: demo-skill\n---\nbody\n", "description"),
        ("---\nname: demo-skill\ndescription: x\ncompatibility: " + "c" * 501 + "\n---\n", "compatibility"),
    ],
)
def test_malformed_frontmatter_is_one_error_naming_the_field(tmp_path: Path, text: str, field: str) -> None:
    folder = make_skill(tmp_path, text)
    errs = load_skill(folder).errors
    assert errs, f"expected an error for {text!r}"
    assert any(p.field == field for p in errs), [str(p) for p in errs]
    for p in errs:
        assert "\n" not in str(p)


def test_name_of_65_chars_is_refused(tmp_path: Path) -> None:
    name = "a" * 65
    folder = make_skill(tmp_path, f"---\nname: {name}\ndescription: x\n---\nbody\n", name=name)
    assert any("name: is 65 characters" in e for e in errors_of(folder))


def test_python_tag_is_not_executed(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    text = f"---\nname: !!python/object/apply:os.system ['touch {marker}']\ndescription: x\n---\n"
    folder = make_skill(tmp_path, text)
    assert errors_of(folder)
    assert not marker.exists()


def test_non_utf8_is_an_encoding_error(tmp_path: Path) -> None:
    folder = make_skill(tmp_path, b"---\nname: demo-skill\ndescription: caf\xe9\n---\n")
    errs = load_skill(folder).errors
    assert errs[0].field == "SKILL.md" and "UTF-8" in errs[0].message


def test_bom_and_crlf_are_accepted(tmp_path: Path) -> None:
    text = "\ufeff" + GOOD_MD.replace("\n", "\r\n")
    folder = make_skill(tmp_path, text)
    res = load_skill(folder)
    assert res.ok, res.problems
    assert res.skill.description == "Use when you need a demonstration skill."
    assert "\r" not in res.skill.body


def test_unknown_keys_warn_and_fail_under_strict(tmp_path: Path) -> None:
    text = GOOD_MD.replace("license:", "disable-model-invocation: true\nlicense:")
    folder = make_skill(tmp_path, text)
    res = load_skill(folder)
    assert res.ok
    assert [w.field for w in res.warnings] == ["disable-model-invocation"]
    strict = load_skill(folder, strict=True)
    assert not strict.ok
    assert strict.errors[0].field == "disable-model-invocation"


def test_meta_not_json_and_unknown_assertion_are_errors(tmp_path: Path) -> None:
    bad_json = make_skill(tmp_path / "a", GOOD_MD, meta="{not json")
    assert any("skill_meta.json" in e and "not valid JSON" in e for e in errors_of(bad_json))
    unknown = make_skill(
        tmp_path / "b", GOOD_MD, meta='{"cases": [{"input": "q", "assert": [{"type": "smells-good"}]}]}'
    )
    assert any("unknown assertion type 'smells-good'" in e for e in errors_of(unknown))


def test_symlink_out_of_skill_is_an_error(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret")
    folder = make_skill(tmp_path / "s", GOOD_MD)
    (folder / "leak.txt").symlink_to(secret)
    errs = load_skill(folder).errors
    assert any(p.field == "leak.txt" and "outside" in p.message for p in errs)


def test_version_changes_with_any_file(tmp_path: Path) -> None:
    folder = make_skill(tmp_path, GOOD_MD)
    v1 = load_skill(folder).skill.version
    (folder / "scripts").mkdir()
    (folder / "scripts" / "run.sh").write_text("echo hi\n")
    v2 = load_skill(folder).skill.version
    assert v1 != v2
    assert load_skill(folder).skill.version == v2


def test_split_frontmatter_returns_body() -> None:
    fm, body = split_frontmatter(GOOD_MD)
    assert fm["name"] == "demo-skill"
    assert body.strip().startswith("# Demo")


# ---------------------------------------------------------------- property-based tests

_alnum = st.text(alphabet=string.ascii_lowercase + string.digits, min_size=1, max_size=10)
valid_names = st.lists(_alnum, min_size=1, max_size=6).map("-".join).filter(lambda n: len(n) <= 64)


@given(valid_names)
def test_generated_valid_names_pass(name: str) -> None:
    assert name_problem(name) is None


@given(st.text(alphabet=string.printable, max_size=80))
def test_name_rule_matches_the_spec(name: str) -> None:
    # ASCII names keep the spec's a-z/0-9/- rule (Unicode letters: tests/test_skill_reference.py).
    name = name.strip()
    ok = (
        1 <= len(name) <= 64
        and all(c in string.ascii_lowercase + string.digits + "-" for c in name)
        and not name.startswith("-")
        and not name.endswith("-")
        and "--" not in name
    )
    assert (name_problem(name) is None) == ok


_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\ufeff\u2028\u2029\x85"),
    min_size=1,
    max_size=200,
).filter(lambda s: s.strip() != "")


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    name=valid_names,
    description=_text.filter(lambda s: len(s) <= 1024),
    body=st.text(max_size=300).map(lambda s: s.replace("\r", "").replace("\x85", "")),
    metadata=st.dictionaries(_alnum, _text, max_size=3),
    inputs=st.lists(_text, max_size=3),
)
def test_write_then_load_round_trips(
    tmp_path_factory: pytest.TempPathFactory, name: str, description: str, body: str, metadata: dict, inputs: list
) -> None:
    cases = [
        Case(id=f"c{i}", input=text, asserts=(Assertion("contains", "x"),)) for i, text in enumerate(inputs)
    ]
    extra = {"metadata": metadata} if metadata else {}
    skill = Skill.create(name, description, body, extra_frontmatter=extra, meta=SkillMeta(cases=cases))
    dest = tmp_path_factory.mktemp("rt") / name
    skill.write(dest)
    res = load_skill(dest)
    assert res.ok, [str(p) for p in res.problems]
    loaded = res.skill
    assert loaded.name == name
    assert loaded.description == description
    assert loaded.metadata == metadata
    assert loaded.body == skill.body
    assert [c.input for c in loaded.meta.cases] == inputs
    assert loaded.version == skill.version
    # Writing the loaded skill again gives the same bytes, hence the same hash.
    again = tmp_path_factory.mktemp("rt2") / name
    loaded.write(again)
    assert load_skill(again).skill.full_hash == skill.full_hash


def test_yaml_alias_bomb_in_frontmatter_is_one_error_not_gigabytes() -> None:
    from upskill_hub.skill import FrontmatterError, split_frontmatter

    levels = [f'l0: &l0 [{", ".join(["lol"] * 9)}]']
    levels += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, 9)]
    text = "---\nname: bomb\ndescription: d\n" + "\n".join(levels) + "\n---\nbody\n"
    with pytest.raises(FrontmatterError, match="alias bomb"):
        split_frontmatter(text)
    with pytest.raises(FrontmatterError, match="deeper than"):
        split_frontmatter("---\nname: x\nd: " + "[" * 2000 + "]" * 2000 + "\n---\n")


@pytest.mark.parametrize(("char", "code"), [("\x00", "U+0000"), ("\x07", "U+0007"), ("\ufffe", "U+FFFE")])
def test_a_forbidden_character_in_frontmatter_is_named(char, code):
    """Issue 29 class 7: a NUL gave "invalid YAML: invalid YAML"."""
    with pytest.raises(FrontmatterError) as exc:
        parse_frontmatter(f"---\nname: a\ndescription: b{char}c\n---\nbody\n")
    assert exc.value.message == f"invalid YAML at line 3: character {code} is not allowed in YAML"
