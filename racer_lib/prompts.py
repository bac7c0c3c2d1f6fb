"""Prompt templates and the parsing of what a judge answers.

Self-routing (the paper's appendix, its self-routing prompt table): before judging, the
*instruct* mode is shown the pair and asked whether it needs its reasoning mode, to be answered
with one word, yes or no. :func:`self_routing_prompt` fills the template and
:func:`parse_self_route` reads the answer into ``"yes"``, ``"no"`` or ``"unparseable"``, the
values of the records' ``self_route`` field (:mod:`racer_lib.records`).
"""

from __future__ import annotations

import re

from .records import SELF_ROUTE_VALUES  # noqa: F401  (the values parse_self_route returns)

#: The user prompt of the paper's self-routing table (instruct mode), line breaks as printed.
SELF_ROUTING_TEMPLATE = (
    "You are about to judge which of two AI responses better answers a user question.\n"
    "[User Question]{question}\n"
    "[The Start of Response A]{answer_a}[The End of Response A]\n"
    "[The Start of Response B]{answer_b}[The End of Response B]\n"
    "Do you need to enable your reasoning mode (i.e., think step-by-step carefully) to judge "
    "which response is better for the above question and responses? Answer with a single "
    "word: yes or no."
)


def self_routing_prompt(question: str, answer_a: str, answer_b: str) -> str:
    """The self-routing question for one pair (the template filled, nothing else added)."""
    return SELF_ROUTING_TEMPLATE.format(question=question, answer_a=answer_a, answer_b=answer_b)


_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_WORD = re.compile(r"\b(yes|no)\b", re.IGNORECASE)


def parse_self_route(text: str | None) -> str:
    """``"yes"``, ``"no"`` or ``"unparseable"`` from a self-routing answer.

    The answer is the first standalone *yes* or *no* (any case, punctuation around it allowed)
    after any ``<think>…</think>`` block is removed. An answer that contains neither word, or
    that says both in its first sentence ("yes or no"), is unparseable.
    """
    if text is None:
        return "unparseable"
    body = _THINK.sub(" ", str(text)).strip()
    first = re.split(r"(?<=[.!?\n])", body, maxsplit=1)[0]
    words = {m.group(1).lower() for m in _WORD.finditer(first)}
    if len(words) == 1:
        return words.pop()
    if words:  # both words in the first sentence: the judge echoed the question
        return "unparseable"
    match = _WORD.search(body)
    return match.group(1).lower() if match else "unparseable"
