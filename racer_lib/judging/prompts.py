"""Prompt templates and the parsing of what a judge answers.

Judging (the paper's prompt table, ``tab:prompts``): a system prompt per mode
(:data:`SYSTEM_PROMPTS`) and one user template (:data:`USER_TEMPLATE`);
:func:`judge_messages` builds the chat messages of one pair and :func:`parse_verdict` reads the
judge's answer into ``"A"``, ``"B"`` or ``"unparseable"`` (the records' verdict values), in
the verdict format the prompt asked for (:data:`VERDICT_FORMATS`: the paper's ``[[A]]`` /
``[[B]]``, or JudgeBench's Arena-Hard labels ``[[A>>B]]`` ... ``[[B>>A]]``, whose decision
:func:`parse_verdict_details` keeps). The prompted chain-of-thought mode adds
:data:`COT_INSTRUCTION` to the reasoning mode's user turn. :data:`_RETRY_MESSAGE` and
:func:`retry_messages` build JudgeBench's one follow-up turn for an answer without a verdict
(:func:`needs_retry`).

One rule says which of several answers counts, for verdicts and self-routing alike
(:func:`_decide`): the answer anchored by a final-answer phrase if the anchored ones agree, else
the single distinct answer, else the answer is ambiguous (unparseable).

Self-routing (the paper's appendix, its self-routing prompt table): before judging, the
*instruct* mode is shown the pair and asked whether it needs its reasoning mode, to be answered
with one word, yes or no. :func:`self_routing_prompt` fills the template and
:func:`parse_self_route` reads the answer into ``"yes"``, ``"no"`` or ``"unparseable"``, the
values of the records' ``self_route`` field (:mod:`racer_lib.records.schema`).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from racer_lib.records.schema import (
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


_WORD = re.compile(r"\b(yes|no)\b", re.IGNORECASE)
#: Both words joined, the question echoed: "yes or no", "yes/no", "no or yes".
_WORD_PAIR = re.compile(r"\b(yes|no)\s*(?:or|/|\||and|,|vs\.?)\s*(yes|no)\b", re.IGNORECASE)
#: What may stand between the start of a sentence, line or clause and its answer word.
_WORD_LEAD = " \t*_\"'`(>#-"
#: After an answer word: punctuation, a line break or the end (markdown and quotes allowed).
_WORD_CLOSES = re.compile(r"[ \t*_\"'`)]*(?:[.,;:!?)\n]|$)")


@dataclass(frozen=True)
class SelfRouteParse:
    """What :func:`parse_self_route_details` found: ``answer`` (``yes``, ``no`` or
    ``unparseable``), ``reason`` (``answer``; or ``none``, ``both``, ``conflict``) and
    ``n_words`` (the answer words and pairs found)."""

    answer: str
    reason: str
    n_words: int


def parse_self_route_details(text: str | None) -> SelfRouteParse:
    """:func:`parse_self_route` with the reason of its decision (see :class:`SelfRouteParse`)."""
    _, body = split_thinking(text)
    pairs = [m.span() for m in _WORD_PAIR.finditer(body)]
    found: list[tuple[str, int, int, bool]] = [("both", a, b, True) for a, b in pairs]
    for m in _WORD.finditer(body):
        if any(a <= m.start() < b for a, b in pairs):
            continue
        lead = body[max(0, m.start() - 64) : m.start()].rstrip(_WORD_LEAD)
        opens = lead[-1:] in (".", "!", "?", ":", ";", "\n") or (not lead and m.start() <= 64)
        if opens or _WORD_CLOSES.match(body, m.end()):
            found.append((m.group(1).lower(), m.start(), m.end(), False))
    found.sort(key=lambda f: f[1])
    cands, prev_end = [], 0
    for value, start, end, mention in found:
        cands.append((value, _anchored(body, prev_end, start, _ROUTE_ANCHOR), mention))
        prev_end = end
    value, _ = _decide(cands)
    if value is None:
        return SelfRouteParse(UNPARSEABLE, "conflict" if cands else "none", len(cands))
    if value == "both":
        return SelfRouteParse(UNPARSEABLE, "both", len(cands))
    return SelfRouteParse(value, "answer", len(cands))


def parse_self_route(text: str | None) -> str:
    """``"yes"``, ``"no"`` or ``"unparseable"`` from a self-routing answer.

    Thinking is removed first (:func:`split_thinking`). An **answer word** is a standalone
    *yes* or *no* (any case, markdown around it allowed) that opens the answer, a sentence,
    a line or a clause (``No need to.``), or is followed by punctuation, a line break or the
    end (``..., so no.``); *no* inside a sentence (``there is no error``) is not an answer. A
    pair of both words (``yes or no``, ``yes/no``: the question echoed) is a *mention*.
    **Which answer counts** is the rule :func:`parse_verdict` uses: the answer **anchored**
    by a phrase before it (:data:`_SELF_ROUTE_ANCHORS`: "my answer", "the answer",
    "answer:", "final answer", ...; within :data:`_ANCHOR_SPAN` characters, in the same
    sentence) if the anchored ones say one thing; else the **single distinct** answer (a
    mention counts only where nothing else is there, and is unparseable); else **ambiguous**
    and unparseable: ``"I'd say no. Well... yes, actually."`` is unparseable. No answer word
    at all is unparseable.
    """
    return parse_self_route_details(text).answer


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
#: A closing tag that ends its line (R1's ``...\n</think>\n\n``), not one inside a sentence.
_CLOSE_LINE = re.compile(r"</think>[ \t]*(?=\n|$)", re.IGNORECASE)
#: An opening tag that starts its line.
_OPEN_LINE = re.compile(r"(?:^|(?<=\n))[ \t]*<think>", re.IGNORECASE)


def split_thinking(text: str | None, thinking_open: bool = False) -> tuple[str, str]:
    """``(thinking, answer)`` of a generated text.

    Thinking is, in this order:

    1. every ``<think>...</think>`` block (``thinking_open=True`` says the prompt opened the
       thinking, as DeepSeek-R1's template does: the text then starts inside a block, which
       ends at the first ``</think>``);
    2. where there is no block, everything up to the first ``</think>`` that **ends its line**
       (a prompt that opened the thinking without the caller saying so);
    3. where a ``<think>`` that **starts its line** is never closed (a generation cut off while
       thinking), everything from it to the end.

    The answer is what remains, stripped. A tag inside a sentence of the answer ("B ends
    with a stray </think> tag", `` `</think>` ``) and any ``</think>`` left after a block are
    text of the answer: a tag quoted in a judgment never discards the verdict before it.
    """
    text = "" if text is None else str(text)
    if thinking_open:
        text = _OPEN + text
    parts = [m.group(0) for m in _BLOCK.finditer(text)]
    rest = _BLOCK.sub("\n", text)
    if not parts:
        close = _CLOSE_LINE.search(rest)
        if close:
            parts.append(rest[: close.end()])
            rest = rest[close.end() :]
    opened = _OPEN_LINE.search(rest)
    if opened and not _CLOSE_RE.search(rest, opened.end()):
        parts.append(rest[opened.start() :].strip())
        rest = rest[: opened.start()]
    return "\n".join(parts), rest.strip()


# ----------------------------------------------------------------------------------------
# Which answer counts: one rule for verdicts and for self-routing

#: Phrases that anchor the verdict token after them as the judge's final one (case-insensitive
#: regular expressions): "final verdict", "final decision", "final answer", "final judgment",
#: "final choice", "final label", "my verdict", "the verdict", "overall verdict", "verdict:",
#: "verdict is". An anchored token is the first group after the phrase, in its sentence.
_VERDICT_ANCHORS: tuple[str, ...] = (
    r"final\s+(?:verdict|decision|answer|judge?ment|choice|label)",
    r"(?:my|the|overall)\s+verdict",
    r"verdict\s*(?::|is\b)",
)
#: Phrases that anchor a self-routing *yes*/*no*: "final answer", "my answer", "the answer",
#: "answer:", "my decision", "decision:".
_SELF_ROUTE_ANCHORS: tuple[str, ...] = (
    r"(?:final|my|the)\s+answer",
    r"answer\s*:",
    r"(?:final|my)\s+decision",
    r"decision\s*:",
)
_VERDICT_ANCHOR = re.compile(r"\b(?:" + "|".join(_VERDICT_ANCHORS) + ")", re.IGNORECASE)
_ROUTE_ANCHOR = re.compile(r"\b(?:" + "|".join(_SELF_ROUTE_ANCHORS) + ")", re.IGNORECASE)
#: How far (characters) an anchor phrase may stand before its answer.
_ANCHOR_SPAN = 120
_SENTENCE_END = re.compile(r"[.!?](?=\s)")
_SENTENCE_TAIL = re.compile(r"[.!?][\s*_`\"'(]*$")


def _anchored(text: str, prev_end: int, start: int, anchor: re.Pattern) -> bool:
    """Whether an anchor phrase stands before ``text[start:]``: after the previous answer
    (``prev_end``), at most :data:`_ANCHOR_SPAN` characters before it, in the same sentence or
    right after the end of the sentence it opened ("Final verdict: A is better. [[A>B]]")."""
    window = text[max(prev_end, start - _ANCHOR_SPAN) : start]
    found = list(anchor.finditer(window))
    if not found:
        return False
    between = _SENTENCE_TAIL.sub("", window[found[-1].end() :])
    return not _SENTENCE_END.search(between)


def _decide(cands: list[tuple[str, bool, bool]]) -> tuple[str | None, set[str]]:
    """The answer that counts among ``cands`` (``(value, anchored, mention)`` in order), and
    the values it was chosen from (``None``: ambiguous, or no candidate).

    The rule (:func:`parse_verdict` and :func:`parse_self_route`): the **anchored** answer
    if the anchored candidates hold exactly one distinct value; else (none anchored) the
    **single distinct** answer, where a *mention* (a group naming both options, ``[[A]] or
    [[B]]``, "yes or no") is no answer, unless there is nothing else; else **ambiguous**.
    """
    anchored = {v for v, a, _ in cands if a}
    pool = anchored or {v for v, _, m in cands if not m} or {v for v, _, _ in cands}
    return (next(iter(pool)) if len(pool) == 1 else None), pool


# ----------------------------------------------------------------------------------------
# Verdict tokens

#: The verdict formats: ``paper`` (the paper's prompt table: ``[[A]]`` or ``[[B]]``) and
#: ``arena-hard`` (JudgeBench's Arena-Hard judge: ``[[A>>B]]``, ``[[A>B]]``, ``[[A=B]]``,
#: ``[[B>A]]``, ``[[B>>A]]``).
VERDICT_FORMATS: tuple[str, ...] = ("paper", "arena-hard")
#: The arena-hard decisions, A's strongest first.
ARENA_HARD_DECISIONS: tuple[str, ...] = ("A>>B", "A>B", "A=B", "B>A", "B>>A")

#: A verdict token: two square brackets around up to 24 characters (no brackets, no line
#: break), e.g. ``[[A]]``, ``[[ B ]]``, ``[[**A**]]``, ``[[A/B]]``, ``[[A>>B]]``.
_TOKEN = re.compile(r"\[\[([^\[\]\n]{1,24})\]\]")
#: An opening ``[[`` never closed at the end of the answer (a cut-off verdict).
_TRUNCATED = re.compile(r"\[\[[^\[\]\n]{0,24}\]?[\s*_`\"'\u201c\u201d]*$")
#: Code: a fenced block (to its closing fence or the end).
_FENCE = re.compile(r"```.*?(?:```|$)", re.DOTALL)
_DECOR = re.compile(r"[*_`\"'\u201c\u201d\u2018\u2019]")
_BOTH = re.compile(r"^([AB])\s*(?:/|\||,|&|\+|-|OR|AND|VS\.?|VERSUS)?\s*([AB])$")
_COMPARE = re.compile(r"^([AB])\s*(>>|>|<<|<|==|=)\s*([AB])$")
_TIE = re.compile(r"^(?:C|TIE|DRAW)$")
#: Look-alikes of A, B and the comparison signs (Cyrillic, Greek, Cherokee, Lisu, maths
#: signs, zero-width characters); full-width and mathematical letters are folded by NFKC.
_CONFUSABLES = str.maketrans(
    {
        "\u0410": "A",
        "\u0430": "a",
        "\u0412": "B",
        "\u0432": "b",
        "\u0391": "A",
        "\u03b1": "a",
        "\u0392": "B",
        "\u03b2": "b",
        "\u13aa": "A",
        "\u13f4": "B",
        "\ua4ee": "A",
        "\ua4d0": "B",
        "\u226b": ">>",
        "\u226a": "<<",
        "\u2265": ">",
        "\u2264": "<",
        "\u200b": "",
        "\u200c": "",
        "\u200d": "",
        "\u2060": "",
        "\ufeff": "",
    }
)
#: What may stand between two verdict tokens of one group: markdown, quotes, brackets and a
#: connector (``[[A]] or [[B]]``, ``[[A]]/[[B]]``, ``[[A]] > [[B]]``), or the echo of the
#: paper's format (``"[[A]]" if assistant A is better, "[[B]]"``).
_JOIN = re.compile(
    r"^[\s*_`\"'()\u201c\u201d]*(?:or|and|/|\||,|&|vs\.?|versus|>>|>|<<|<|==|=)?"
    r"[\s*_`\"'()\u201c\u201d]*$"
    r"|^[\s*_`\"'\u201c\u201d]*if\s+(?:assistant|response)\s+[AB]\s+is\s+better"
    r"[\s.,;:*_`\"'\u201c\u201d]*(?:and|or)?[\s*_`\"'\u201c\u201d]*$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class VerdictParse:
    """What :func:`parse_verdict_details` found in an answer.

    ``verdict``: ``A``, ``B`` or ``unparseable``. ``reason``: ``verdict`` (a letter decided),
    or why it is unparseable: ``none`` (no verdict group in the final answer), ``both`` (the
    answer that counts names both letters: the format echoed, ``[[A/B]]``), ``tie``
    (``[[C]]``, ``[[A=B]]``), ``conflict`` (distinct answers, none or several anchored),
    ``confusable`` (the answer that counts, or one of those in conflict, is written with
    look-alike letters, ``[[А]]`` in Cyrillic), ``truncated`` (the answer ends in an opening
    ``[[`` never closed), ``format`` (a verdict of the other format: ``[[A>B]]`` under the
    paper's prompt, ``[[A]]`` under arena-hard's). ``n_groups``: the verdict groups found in
    the final answer. ``decision``: for the arena-hard format the decision that counts, one of
    :data:`ARENA_HARD_DECISIONS` (``""`` when unparseable, except a tie: ``A=B``); ``""`` for
    the paper's format.
    """

    verdict: str
    reason: str
    n_groups: int
    decision: str = ""


def _ascii_kind(content: str) -> str | None:
    """Kind of an upper-cased ASCII token content: ``A``, ``B``, a decision of
    :data:`ARENA_HARD_DECISIONS`, ``both``, ``tie`` or ``None`` (not a verdict)."""
    if content in ("A", "B"):
        return content
    compare = _COMPARE.match(content)
    if compare:
        a, op, b = compare.groups()
        if a == b:
            return None
        if "=" in op:
            return "A=B"
        winner = a if op.startswith(">") else b
        strength = ">>" if len(op) == 2 else ">"
        return f"{winner}{strength}{'B' if winner == 'A' else 'A'}"
    both = _BOTH.match(content)
    if both:
        return "both" if both.group(1) != both.group(2) else both.group(1)
    if _TIE.match(content):
        return "tie"
    return None


def _token_kind(content: str, in_code: bool = False) -> str | None:
    """Kind of a token's content (:func:`_ascii_kind`), ``confusable`` (a verdict written with
    look-alike characters) or ``None``. Letters are read in any case, except in code, where
    only capitals are a verdict (``[[a, b]]`` there is a list)."""
    content = re.sub(r"\s+", " ", _DECOR.sub("", content)).strip()
    if not content.isascii():
        look = unicodedata.normalize("NFKC", content).translate(_CONFUSABLES)
        look = re.sub(r"\s+", " ", _DECOR.sub("", look)).strip()
        return "confusable" if look.isascii() and _ascii_kind(look.upper()) else None
    if in_code and content != content.upper():
        return None
    return _ascii_kind(content.upper())


def _groups(answer: str) -> list[tuple[str, int, int]]:
    """Verdict groups in order: ``(kind, start, end)``, the kind one of :func:`_token_kind`'s
    (``both`` for a group of distinct kinds, ``confusable`` if any token is). A token glued to
    a name (``df[["a"]]``, ``x[[1]]``) is indexing, not a verdict."""
    fences = [m.span() for m in _FENCE.finditer(answer)]
    groups: list[tuple[set[str], int, int]] = []
    for m in _TOKEN.finditer(answer):
        if m.start() and re.match(r"[A-Za-z0-9_)]", answer[m.start() - 1]):
            continue
        kind = _token_kind(m.group(1), any(a <= m.start() < b for a, b in fences))
        if kind is None:
            continue
        if groups and _JOIN.match(answer[groups[-1][2] : m.start()]):
            groups[-1] = (groups[-1][0] | {kind}, groups[-1][1], m.end())
        else:
            groups.append(({kind}, m.start(), m.end()))
    out = []
    for kinds, start, end in groups:
        if "confusable" in kinds:
            kind = "confusable"
        elif len(kinds) == 1:
            kind = next(iter(kinds))
        else:
            kind = "both"
        out.append((kind, start, end))
    return out


def _format_value(kind: str, verdict_format: str) -> str:
    """A group's kind as an answer of the format: a letter or decision of the format, ``tie``,
    ``both``, ``confusable``, or ``format:<kind>`` (the other format's verdict)."""
    if kind in ("both", "confusable"):
        return kind
    if verdict_format == "paper":
        if kind in ("A", "B"):
            return kind
        return "tie" if kind in ("tie", "A=B") else f"format:{kind}"
    return kind if kind in ARENA_HARD_DECISIONS else f"format:{kind}"


def _check_format(verdict_format: str) -> None:
    if verdict_format not in VERDICT_FORMATS:
        raise ValueError(
            f"unknown verdict format {verdict_format!r}; formats are {', '.join(VERDICT_FORMATS)}"
        )


def verdict_format_of(system_prompt: str) -> str:
    """The verdict format a judging prompt asks for: ``arena-hard`` where it shows the
    ``[[A>>B]]`` or ``[[A>B]]`` label, else ``paper``."""
    return "arena-hard" if "[[A>>B]]" in system_prompt or "[[A>B]]" in system_prompt else "paper"


def parse_verdict_details(
    text: str | None,
    thinking: str | None = None,
    thinking_open: bool = False,
    verdict_format: str = "paper",
) -> VerdictParse:
    """:func:`parse_verdict` with the reason of its decision (see :class:`VerdictParse`)."""
    _check_format(verdict_format)
    _, answer = split_thinking(text, thinking_open)
    groups = _groups(answer)
    n = len(groups)
    if _TRUNCATED.search(answer):
        return VerdictParse(UNPARSEABLE, "truncated", n)
    cands, prev_end = [], 0
    for kind, start, end in groups:
        anchored = _anchored(answer, prev_end, start, _VERDICT_ANCHOR)
        cands.append((_format_value(kind, verdict_format), anchored, kind == "both"))
        prev_end = end
    value, pool = _decide(cands)
    if value is None:
        if not cands:
            return VerdictParse(UNPARSEABLE, "none", 0)
        return VerdictParse(UNPARSEABLE, "confusable" if "confusable" in pool else "conflict", n)
    if value in ("A", "B"):
        return VerdictParse(value, "verdict", n)
    if value == "A=B":
        return VerdictParse(UNPARSEABLE, "tie", n, value)
    if value in ARENA_HARD_DECISIONS:
        return VerdictParse(value[0], "verdict", n, value)
    return VerdictParse(UNPARSEABLE, value.split(":")[0], n)


def parse_verdict(
    text: str | None,
    thinking: str | None = None,
    thinking_open: bool = False,
    verdict_format: str = "paper",
) -> str:
    """``"A"``, ``"B"`` or ``"unparseable"`` from a judge's output.

    ``verdict_format`` (:data:`VERDICT_FORMATS`) is the format the judging prompt asked for
    (:func:`verdict_format_of`): ``paper``, the paper's ``[[A]]`` / ``[[B]]``, or
    ``arena-hard``, JudgeBench's Arena-Hard labels ``[[A>>B]]``, ``[[A>B]]``, ``[[A=B]]``,
    ``[[B>A]]``, ``[[B>>A]]`` (``>>`` and ``>`` give the same verdict, as in JudgeBench;
    :func:`parse_verdict_details` keeps the decision). Rules:

    - Only the **final answer** counts: thinking (:func:`split_thinking`) is never read, nor
      the separate ``thinking`` text of a backend that splits it off, even when the final
      answer has no verdict: a verdict the judge only thought of is unparseable, as in
      JudgeBench, which sees no hidden reasoning. ``thinking_open=True`` says the prompt
      opened the thinking. A ``</think>`` quoted inside a sentence of the answer is text.
    - A **verdict token** is two square brackets around a verdict: ``[[A]]``, ``[[b]]`` (any
      case), ``[[A>>B]]``, ``[[A > B]]``, ``[[B<A]]`` (read as ``A>B``), ``[[A=B]]``,
      ``[[C]]`` / ``[[tie]]`` (ties), ``[[A/B]]`` / ``[[A or B]]`` (both letters); spaces and
      markdown inside or around are allowed (``[[ A ]]``, ``[[**B**]]``, ``**[[A]]**``,
      ``\\boxed{[[A]]}``). Not verdicts: single brackets (``[A]``), bare letters, other
      contents (``[[1, 2]]``), a token glued to a name (``df[["a"]]``: indexing), lower-case
      letters inside a fenced code block (a list there).
    - Tokens joined only by a connector, a comparison sign, quotes or markdown (``[[A]] or
      [[B]]``, ``[[A]]/[[B]]``, ``[[A]] > [[B]]``), or by the echo of the paper's format
      (``"[[A]]" if assistant A is better, "[[B]]"``), form **one group**; a group of distinct
      verdicts names both letters, as ``[[A/B]]`` does.
    - **Which group counts** (the rule :func:`parse_self_route` shares): the group
      **anchored** by a final-verdict phrase before it (:data:`_VERDICT_ANCHORS`: "final
      verdict", "my verdict is", "verdict:", ...; within :data:`_ANCHOR_SPAN` characters, in
      the same sentence, no group between) if the anchored groups say exactly one distinct
      thing; else the **single distinct** answer of all groups (repeats agree: ``[[B]] ...
      [[B]]``), where a group naming both letters is a mention of the format, not an answer,
      unless nothing else is there; else the answer is **ambiguous** (``conflict``):
      ``"[[A]] is better than [[B]]."`` is unparseable, ``"Final verdict: [[A]] (had B not
      erred, [[B]])"`` is A.
    - **Look-alike letters** (Cyrillic ``А``, Greek ``Β``, full-width ``Ａ``) are never a
      verdict, but a token written with them is an answer of its own: it makes the answer
      unparseable (``confusable``) where it counts or conflicts, so no earlier token wins.
    - A **truncated** last token (an opening ``[[`` never closed at the end of the answer) is
      unparseable (``truncated``) whatever came before.
    - **None, both, a tie or the other format** is unparseable: no group; a group naming both
      letters; a tie (``[[C]]``, ``[[A=B]]``: not a choice in either format; arena-hard's
      ``[[A=B]]`` keeps its decision); ``[[A>B]]`` under the paper's format, ``[[A]]`` under
      arena-hard's (``format``).

    Unparseable counts as incorrect (:mod:`racer_lib.records.schema`).
    """
    return parse_verdict_details(text, thinking, thinking_open, verdict_format).verdict


#: JudgeBench's follow-up turn when a judgment holds no verdict (its Arena-Hard judge,
#: ``utils/judges.py``): the judge's output goes back as the assistant turn, then this.
_RETRY_MESSAGE = "continue your judgment and finish by outputting a final verdict label"


def needs_retry(
    text: str | None, thinking_open: bool = False, verdict_format: str = "paper"
) -> bool:
    """Whether to ask again (JudgeBench's one retry): the final answer holds no verdict group
    (``none``) or ends in a cut-off one (``truncated``). An answer that is ambiguous, a tie or
    names both letters is not retried: the judge did answer."""
    reason = parse_verdict_details(
        text, thinking_open=thinking_open, verdict_format=verdict_format
    ).reason
    return reason in ("none", "truncated")


def retry_messages(messages: list[dict[str, str]], output: str) -> list[dict[str, str]]:
    """The conversation for the single retry: ``messages``, the judge's ``output`` as the
    assistant turn, then :data:`_RETRY_MESSAGE` as a user turn (a new list)."""
    return [
        *messages,
        {"role": "assistant", "content": output},
        {"role": "user", "content": _RETRY_MESSAGE},
    ]
