"""The scripted server's keyword teacher: it reads ``tune``'s request, never anything held out."""

from __future__ import annotations

from upskill_hub.testing.scripted_teacher import demo_script, keyword_teacher
from upskill_hub.triggering.tune import TEACHER_SYSTEM, Failure, parse_proposal, tune_request


def test_it_names_what_the_misses_share_and_drops_what_the_false_triggers_use():
    request = tune_request("sheets", "Load data from files. Use when asked.", [
        Failure("turn my spreadsheet into JSON", True, 0, 3),
        Failure("spreadsheet columns to JSON please", True, 1, 3),
        Failure("load the model weights from files", False, 3, 3),
    ])  # fmt: skip
    proposal = parse_proposal(keyword_teacher(request))
    # "load" and "files" made the false trigger; "from" is no word to the scripted model.
    assert proposal == "data from. Use when asked. Use when a request mentions json, spreadsheet, columns, please, turn."


def test_nothing_to_add_proposes_the_same_text_and_other_requests_are_echoed():
    request = tune_request("sheets", "Convert spreadsheets.", [])
    assert parse_proposal(keyword_teacher(request)) == "Convert spreadsheets."
    messages = [{"role": "user", "content": request}]
    assert parse_proposal(demo_script(TEACHER_SYSTEM, messages, {})) == "Convert spreadsheets."
    assert demo_script("other", [{"role": "user", "content": "hi"}], {}) == "You said: hi"
