"""Prompt templates and the parsing of what a judge answers.

Judging (the paper's prompt table, ``tab:prompts``): a system prompt per mode
(:data:`SYSTEM_PROMPTS`) and one user template (:data:`USER_TEMPLATE`);
:func:`judge_messages` builds the chat messages of one pair and :func:`parse_verdict` reads the
judge's answer into ``"A"``, ``"B"`` or ``"unparseable"`` (the records' verdict values). The
prompted chain-of-thought mode adds :data:`COT_INSTRUCTION` to the reasoning mode's user turn.
:data:`RETRY_MESSAGE` and :func:`retry_messages` build JudgeBench's one follow-up turn for an
answer without a verdict.

Self-routing (the paper's appendix, its self-routing prompt table): before judging, the
*instruct* mode is shown the pair and asked whether it needs its reasoning mode, to be answered
with one word, yes or no. :func:`self_routing_prompt` fills the template and
:func:`parse_self_route` reads the answer into ``"yes"``, ``"no"`` or ``"unparseable"``, the
values of the records' ``self_route`` field (:mod:`racer_lib.records`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .records import (
    SELF_ROUTE_VALUES,  # noqa: F401  (the values parse_self_route returns)
    UNPARSEABLE,
)

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


# ----------------------------------------------------------------------------------------
# Judging prompts (the paper's table tab:prompts)

_SYSTEM_HEAD = (
    "Please act as an impartial judge and evaluate the quality of the responses provided by "
    "two AI assistants to the user question displayed below. You should choose the assistant "
    "that follows the user's instructions and answers the user's question better. Your "
    "evaluation should consider factors such as the helpfulness, relevance, accuracy, depth, "
    "creativity, and level of detail of their responses. Begin your evaluation by comparing "
    "the two responses and provide "
)
_SYSTEM_TAIL = (
    ". Avoid any position biases and ensure that the order in which the responses were "
    "presented does not influence your decision. Do not allow the length of the responses to "
    "influence your evaluation. Do not favor certain names of the assistants. Be as objective "
    "as possible. After providing your explanation, output your final verdict by strictly "
    'following this format: "[[A]]" if assistant A is better, "[[B]]" if assistant B is '
    "better."
)
#: The system prompts of the two modes, the paper's text as printed in its prompt table
#: (LaTeX quotes ``...'' written as ASCII double quotes). They differ only where the table
#: highlights it: "a short explanation" (instruct) vs "an explanation" (reasoning). The
#: instruct prompt's duplicated word ("a short explanation explanation") is in the paper's
#: text and is kept on purpose: these are the prompts the paper's judges saw.
SYSTEM_PROMPTS: dict[str, str] = {
    "instruct": _SYSTEM_HEAD + "a short explanation explanation" + _SYSTEM_TAIL,
    "reasoning": _SYSTEM_HEAD + "an explanation" + _SYSTEM_TAIL,
}

#: The paper's user template: three blocks, one blank line between them as printed, no
#: line breaks inside a block (the answers follow their opening tag directly).
USER_TEMPLATE = (
    "[User Question]{question}\n\n"
    "[The Start of Assistant A's Answer]{answer_a}[The End of Assistant A's Answer]\n\n"
    "[The Start of Assistant B's Answer]{answer_b}[The End of Assistant B's Answer]"
)

#: Prompted chain-of-thought (our wording; the paper's judges reason through a thinking mode
#: instead): appended, after a blank line, to the user turn of the *reasoning* mode, whose
#: system prompt is the paper's reasoning prompt. It asks for the reasoning before the verdict
#: and does not repeat the verdict format (the system prompt gives it; an echoed format is
#: what weak judges copy instead of deciding).
COT_INSTRUCTION = (
    "Think step by step before you decide. First work out the correct answer to the user "
    "question yourself. Then check each assistant's answer step by step against it and note "
    "every error. Write out this reasoning, and give your final verdict only at the end."
)


def judge_user_prompt(question: str, answer_a: str, answer_b: str) -> str:
    """The user template filled with one pair (texts verbatim, braces included)."""
    return USER_TEMPLATE.format(question=question, answer_a=answer_a, answer_b=answer_b)


def judge_messages(
    mode: str, question: str, answer_a: str, answer_b: str, cot: bool = False
) -> list[dict[str, str]]:
    """Chat messages for judging one pair in ``mode`` (``instruct`` or ``reasoning``).

    A system message (the mode's paper prompt) and a user message (:data:`USER_TEMPLATE`).
    ``cot=True`` (prompted chain of thought) appends :data:`COT_INSTRUCTION` to the user
    message; it is meant for the reasoning mode.
    """
    if mode not in SYSTEM_PROMPTS:
        raise ValueError(f"unknown mode {mode!r}; modes are {', '.join(SYSTEM_PROMPTS)}")
    user = judge_user_prompt(question, answer_a, answer_b)
    if cot:
        user += "\n\n" + COT_INSTRUCTION
    return [{"role": "system", "content": SYSTEM_PROMPTS[mode]}, {"role": "user", "content": user}]


# ----------------------------------------------------------------------------------------
# Thinking and verdicts

_OPEN, _CLOSE = "<think>", "</think>"
_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_CLOSE_RE = re.compile(r"</think>", re.IGNORECASE)
_OPEN_RE = re.compile(r"<think>", re.IGNORECASE)


def split_thinking(text: str | None, thinking_open: bool = False) -> tuple[str, str]:
    """``(thinking, answer)`` of a generated text.

    Thinking is every ``<think>...</think>`` block; then, where a ``</think>`` is left without
    its opening tag (templates such as DeepSeek-R1's put ``<think>`` in the prompt, or pass
    ``thinking_open=True``), everything before the last one; then, where a ``<think>`` is left
    open (a generation cut off while thinking), everything from it to the end. The answer is
    what remains, stripped.
    """
    text = "" if text is None else str(text)
    if thinking_open:
        text = _OPEN + text
    parts = [m.group(0) for m in _BLOCK.finditer(text)]
    rest = _BLOCK.sub("\n", text)
    closes = list(_CLOSE_RE.finditer(rest))
    if closes:
        parts.append(rest[: closes[-1].end()])
        rest = rest[closes[-1].end() :]
    opened = _OPEN_RE.search(rest)
    if opened:
        parts.append(rest[opened.start() :])
        rest = rest[: opened.start()]
    return "\n".join(parts), rest.strip()


#: A verdict token: two square brackets around up to 24 characters (no brackets, no line
#: break), e.g. ``[[A]]``, ``[[ B ]]``, ``[[**A**]]``, ``[[A/B]]``.
_TOKEN = re.compile(r"\[\[([^\[\]\n]{1,24})\]\]")
_DECOR = re.compile(r"[*_`\"'\u201c\u201d\u2018\u2019]")
_BOTH = re.compile(r"^([AB])\s*(?:/|\||,|&|\+|-|or|and|vs\.?|versus)?\s*([AB])$")
_TIE = re.compile(r"^(?:C|tie|TIE|Tie|A\s*=\s*B|B\s*=\s*A)$")
#: What may stand between two verdict tokens of one group: markdown, quotes, brackets and a
#: connector (``[[A]] or [[B]]``, ``[[A]]/[[B]]``), or the echo of the system prompt's format
#: (``"[[A]]" if assistant A is better, "[[B]]"``).
_JOIN = re.compile(
    r"^[\s*_`\"'()\u201c\u201d]*(?:or|and|/|\||,|&|vs\.?|versus)?[\s*_`\"'()\u201c\u201d]*$"
    r"|^[\s*_`\"'\u201c\u201d]*if\s+(?:assistant|response)\s+[AB]\s+is\s+better"
    r"[\s.,;:*_`\"'\u201c\u201d]*(?:and|or)?[\s*_`\"'\u201c\u201d]*$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class VerdictParse:
    """What :func:`parse_verdict_details` found in an answer.

    ``verdict``: ``A``, ``B`` or ``unparseable``; ``reason``: ``verdict`` (a single letter
    decided), ``none`` (no verdict token in the final answer), ``both`` (the last group names
    both letters) or ``tie`` (the last group is a tie, ``[[C]]``); ``n_groups``: the verdict
    groups found in the final answer.
    """

    verdict: str
    reason: str
    n_groups: int


def _token_kind(content: str) -> str | None:
    """``A``, ``B``, ``both``, ``tie`` or ``None`` (not a verdict, e.g. ``[[1, 2]]`` in code)."""
    content = re.sub(r"\s+", " ", _DECOR.sub("", content)).strip()
    if content in ("A", "B"):
        return content
    both = _BOTH.match(content)
    if both:
        return "both" if both.group(1) != both.group(2) else both.group(1)
    if _TIE.match(content):
        return "tie"
    return None


def _groups(answer: str) -> list[str]:
    """Verdict groups in order: ``A``, ``B``, ``both`` or ``tie`` each."""
    groups: list[set[str]] = []
    last_end = None
    for m in _TOKEN.finditer(answer):
        kind = _token_kind(m.group(1))
        if kind is None:
            continue
        joined = last_end is not None and _JOIN.match(answer[last_end : m.start()]) is not None
        if joined:
            groups[-1].add(kind)
        else:
            groups.append({kind})
        last_end = m.end()
    out = []
    for g in groups:
        if "tie" in g:
            out.append("tie" if g <= {"tie"} else "both")
        elif "both" in g or g == {"A", "B"}:
            out.append("both")
        else:
            out.append(g.pop())
    return out


def parse_verdict_details(
    text: str | None, thinking: str | None = None, thinking_open: bool = False
) -> VerdictParse:
    """:func:`parse_verdict` with the reason of its decision (see :class:`VerdictParse`)."""
    _, answer = split_thinking(text, thinking_open)
    groups = _groups(answer)
    if not groups:
        return VerdictParse(UNPARSEABLE, "none", 0)
    last = groups[-1]
    if last in ("A", "B"):
        return VerdictParse(last, "verdict", len(groups))
    return VerdictParse(UNPARSEABLE, last, len(groups))


def parse_verdict(
    text: str | None, thinking: str | None = None, thinking_open: bool = False
) -> str:
    """``"A"``, ``"B"`` or ``"unparseable"`` from a judge's output.

    Rules (JudgeBench's verdict format, made robust to real outputs):

    - Only the **final answer** counts: ``<think>...</think>`` blocks in ``text`` (and the
      separate ``thinking`` text of a backend that splits it off) are never read, even when
      the final answer has no verdict: a verdict the judge only thought of is unparseable, as
      in JudgeBench, which sees no hidden reasoning. ``thinking_open=True`` says the prompt
      opened the thinking (see :func:`split_thinking`).
    - A verdict token is ``[[A]]`` or ``[[B]]``: spaces and markdown inside or around the
      brackets are allowed (``[[ A ]]``, ``[[**B**]]``, ``**[[A]]**``, `` `[[B]]` ``,
      ``\\boxed{[[A]]}``); the letter must be a **capital** (``[[a]]`` is a nested list in
      code far more often than a verdict, and the format asks for capitals); a single bracket
      (``[A]``) or a bare letter is not a verdict.
    - Tokens joined only by a connector, quotes or markdown (``[[A]] or [[B]]``,
      ``[[A]]/[[B]]``, ``[[A]][[B]]``), or by the echo of the prompt's format (``"[[A]]" if
      assistant A is better, "[[B]]"``), form one group; ``[[A/B]]``, ``[[A or B]]``,
      ``[[AB]]`` are one token naming both letters.
    - The **last group wins**: a judge that writes ``[[A]]`` and later ``[[B]]`` has changed its
      mind, and its last verdict is its final one.
    - **None or both is unparseable**: no group at all; or a last group naming both letters
      (the literal format echo, ``[[A/B]]``); or a last group that is a tie (``[[C]]``,
      ``[[tie]]``, ``[[A=B]]``, not in the paper's format). Anything else in double brackets
      (``[[1, 2]]``) is not a verdict and is skipped.

    Unparseable counts as incorrect (:mod:`racer_lib.records`).
    """
    return parse_verdict_details(text, thinking, thinking_open).verdict


#: JudgeBench's follow-up turn when a judgment holds no verdict (its Arena-Hard judge,
#: ``utils/judges.py``): the judge's output goes back as the assistant turn, then this.
RETRY_MESSAGE = "continue your judgment and finish by outputting a final verdict label"


def needs_retry(text: str | None, thinking_open: bool = False) -> bool:
    """Whether JudgeBench would ask again: the final answer holds no verdict token at all
    (an answer naming both letters is not retried: the judge did answer, ambiguously)."""
    return parse_verdict_details(text, thinking_open=thinking_open).reason == "none"


def retry_messages(messages: list[dict[str, str]], output: str) -> list[dict[str, str]]:
    """The conversation for the single retry: ``messages``, the judge's ``output`` as the
    assistant turn, then :data:`RETRY_MESSAGE` as a user turn (a new list)."""
    return [
        *messages,
        {"role": "assistant", "content": output},
        {"role": "user", "content": RETRY_MESSAGE},
    ]
