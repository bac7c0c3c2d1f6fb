"""The self-routing prompt (the paper's template) and the parsing of its yes/no answer."""

import pytest

from racer_lib import prompts


def test_self_routing_prompt_fills_the_template():
    text = prompts.self_routing_prompt("What is 2+2?", "4", "5")
    assert text.startswith("You are about to judge which of two AI responses")
    assert "[User Question]What is 2+2?\n" in text
    assert "[The Start of Response A]4[The End of Response A]" in text
    assert "[The Start of Response B]5[The End of Response B]" in text
    assert text.endswith("Answer with a single word: yes or no.")


def test_braces_in_the_pair_are_kept_verbatim():
    text = prompts.self_routing_prompt("f(x) = {x}", "{answer_b}", "b")
    assert "[User Question]f(x) = {x}" in text and "Response A]{answer_b}[The End" in text


@pytest.mark.parametrize("answer, decision", [
    ("yes", "yes"), ("No", "no"), ("YES.", "yes"), ("  no\n", "no"),
    ("**Yes**", "yes"), ("Yes, the math needs care.", "yes"),
    ("<think>Should I say no? yes</think>\nno", "no"),
    ("I think reasoning is not needed. No.", "no"),
    ("yes or no", "unparseable"), ("Nope", "unparseable"), ("", "unparseable"),
    (None, "unparseable"), ("Yesterday I would have said so", "unparseable"),
])
def test_parse_self_route(answer, decision):
    assert prompts.parse_self_route(answer) == decision
    assert decision in prompts.SELF_ROUTE_VALUES
