"""The self-routing prompt (the paper's template) and the parsing of its yes/no answer."""

from pathlib import Path

import pytest
import yaml

from racer_lib.judging import prompts


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


@pytest.mark.parametrize(
    "answer, decision",
    [
        ("yes", "yes"),
        ("No", "no"),
        ("YES.", "yes"),
        ("  no\n", "no"),
        ("**Yes**", "yes"),
        ("Yes, the math needs care.", "yes"),
        ("<think>Should I say no? yes</think>\nno", "no"),
        ("I think reasoning is not needed. No.", "no"),
        ("yes or no", "unparseable"),
        ("Nope", "unparseable"),
        ("", "unparseable"),
        (None, "unparseable"),
        ("Yesterday I would have said so", "unparseable"),
    ],
)
def test_parse_self_route(answer, decision):
    assert prompts.parse_self_route(answer) == decision
    assert decision in prompts.SELF_ROUTE_VALUES


# ----------------------------------------------------------------------------------------
# Judging prompts (the paper's table tab:prompts)

PAPER_SYSTEM_END = (
    'output your final verdict by strictly following this format: "[[A]]" if '
    'assistant A is better, "[[B]]" if assistant B is better.'
)


def test_system_prompts_are_the_papers_text():
    instruct, reasoning = prompts.SYSTEM_PROMPTS["instruct"], prompts.SYSTEM_PROMPTS["reasoning"]
    assert instruct.startswith(
        "Please act as an impartial judge and evaluate the quality of "
        "the responses provided by two AI assistants"
    )
    # the paper's duplicated word, kept verbatim
    assert (
        "comparing the two responses and provide a short explanation explanation. Avoid" in instruct
    )
    assert "comparing the two responses and provide an explanation. Avoid any position" in reasoning
    assert instruct.endswith(PAPER_SYSTEM_END) and reasoning.endswith(PAPER_SYSTEM_END)
    # they differ only in the highlighted words
    assert instruct.replace("a short explanation explanation", "X") == reasoning.replace(
        "an explanation.", "X."
    )
    assert "\n" not in instruct and "user's instructions" in instruct


def test_user_template_is_the_papers_with_blank_lines_between_blocks():
    text = prompts.judge_user_prompt("Q?", "ans {a}", "ans B")
    assert text == (
        "[User Question]Q?\n\n"
        "[The Start of Assistant A's Answer]ans {a}[The End of Assistant A's Answer]"
        "\n\n[The Start of Assistant B's Answer]ans B[The End of Assistant B's "
        "Answer]"
    )


def test_judge_messages_and_the_cot_instruction():
    msgs = prompts.judge_messages("instruct", "Q", "a", "b")
    assert [m["role"] for m in msgs] == ["system", "user"]
    assert msgs[0]["content"] == prompts.SYSTEM_PROMPTS["instruct"]
    assert msgs[1]["content"] == prompts.judge_user_prompt("Q", "a", "b")
    cot = prompts.judge_messages("reasoning", "Q", "a", "b", cot=True)
    assert cot[0]["content"] == prompts.SYSTEM_PROMPTS["reasoning"]
    assert (
        cot[1]["content"]
        == prompts.judge_user_prompt("Q", "a", "b") + "\n\n" + prompts.COT_INSTRUCTION
    )
    assert prompts.COT_INSTRUCTION.startswith("Think step by step")
    with pytest.raises(ValueError, match="unknown mode"):
        prompts.judge_messages("fast", "Q", "a", "b")


# ----------------------------------------------------------------------------------------
# Verdicts and self-routing answers: a corpus of judge outputs with their expected outcomes
# (tests/fixtures/verdict_corpus.yaml: the paper's case studies, Qwen3 thinking blocks, R1-style
# open thinking, weak judges echoing the format, real claude-3-haiku arena-hard judgments from
# JudgeBench, and every case of issue 14)

CORPUS_PATH = Path(__file__).parent / "fixtures" / "verdict_corpus.yaml"
CORPUS = yaml.safe_load(CORPUS_PATH.read_text(encoding="utf-8"))


def test_the_corpus_covers_both_formats_self_routing_and_every_reason():
    assert len(CORPUS) >= 100
    by_format = {f: [c for c in CORPUS if c["format"] == f] for f in ("paper", "arena-hard")}
    routes = [c for c in CORPUS if c["format"] == "self-route"]
    assert len(by_format["paper"]) + len(by_format["arena-hard"]) + len(routes) == len(CORPUS)
    assert len(by_format["arena-hard"]) >= 20 and len(routes) >= 20
    reasons = {c["reason"] for c in by_format["paper"]}
    assert reasons == {
        "verdict",
        "none",
        "both",
        "tie",
        "conflict",
        "confusable",
        "truncated",
        "format",
    }
    assert {c["decision"] for c in by_format["arena-hard"]} == {"", *prompts.ARENA_HARD_DECISIONS}
    assert {c["reason"] for c in routes} == {"answer", "none", "both", "conflict"}
    assert len([c for c in CORPUS if "issue 14" in c["case"]]) >= 10
    assert len({(c["format"], c["case"]) for c in CORPUS}) == len(CORPUS)
    assert all(isinstance(c["case"], str) and isinstance(c["verdict"], str) for c in CORPUS)


@pytest.mark.parametrize("case", CORPUS, ids=[f"{c['format']}: {c['case']}" for c in CORPUS])
def test_corpus(case):
    text, fmt = case["text"], case["format"]
    if fmt == "self-route":
        details = prompts.parse_self_route_details(text)
        assert (details.answer, details.reason) == (case["verdict"], case["reason"])
        assert prompts.parse_self_route(text) == case["verdict"] in prompts.SELF_ROUTE_VALUES
        return
    kw = {"thinking_open": case.get("thinking_open", False), "verdict_format": fmt}
    details = prompts.parse_verdict_details(text, **kw)
    assert (details.verdict, details.reason) == (case["verdict"], case["reason"])
    assert details.decision == case.get("decision", "")
    assert prompts.parse_verdict(text, **kw) == case["verdict"] in ("A", "B", "unparseable")
    # retried exactly when nothing was answered or the answer was cut off
    assert prompts.needs_retry(text, **kw) == (case["reason"] in ("none", "truncated"))


def test_arena_hard_decisions_give_the_verdict_and_keep_the_strength():
    for decision in prompts.ARENA_HARD_DECISIONS:
        got = prompts.parse_verdict_details(
            f"My final verdict is: [[{decision}]]", verdict_format="arena-hard"
        )
        # >> and > give the same verdict (as in JudgeBench); the decision keeps the strength
        want = {"A>>B": "A", "A>B": "A", "A=B": "unparseable", "B>A": "B", "B>>A": "B"}
        assert (got.verdict, got.decision) == (want[decision], decision)
        assert got.reason == ("tie" if decision == "A=B" else "verdict")
        # the same label under the paper's prompt is the other format's (a tie stays a tie)
        paper = prompts.parse_verdict_details(f"[[{decision}]]")
        assert (paper.reason, paper.decision) == ("tie" if decision == "A=B" else "format", "")


def test_verdict_formats_and_the_format_a_prompt_asks_for():
    assert prompts.VERDICT_FORMATS == ("paper", "arena-hard")
    for mode in ("instruct", "reasoning"):
        assert prompts.verdict_format_of(prompts.SYSTEM_PROMPTS[mode]) == "paper"
    arena = "output only one of the following choices ... [[A>>B]]\n2. ... [[A>B]]"
    assert prompts.verdict_format_of(arena) == "arena-hard"
    for fn in (prompts.parse_verdict, prompts.parse_verdict_details, prompts.needs_retry):
        with pytest.raises(ValueError, match="unknown verdict format"):
            fn("[[A]]", verdict_format="arena_hard")


def test_one_rule_for_verdicts_and_self_routing():
    # the same shapes, read the same way by both parsers
    pairs = [
        ("[[A]] then [[B]]", "yes. then no.", "conflict"),
        ("[[B]] then final verdict: [[A]]", "yes. then final answer: no", "anchored"),
        ("[[A]] or [[B]]", "yes or no", "mention"),
        ("[[B]] and again [[B]]", "no. and again no.", "repeat"),
    ]
    for verdict_text, route_text, shape in pairs:
        v, r = (
            prompts.parse_verdict_details(verdict_text),
            prompts.parse_self_route_details(route_text),
        )
        if shape == "conflict":
            assert v.reason == r.reason == "conflict"
        elif shape == "anchored":
            assert (v.verdict, r.answer) == ("A", "no")
        elif shape == "mention":
            assert v.reason == r.reason == "both"
        else:
            assert (v.verdict, r.answer) == ("B", "no")


def test_separate_thinking_never_decides():
    thinking = "Clearly [[B]]."
    assert prompts.parse_verdict("No verdict here.", thinking=thinking) == "unparseable"
    assert prompts.parse_verdict("So [[A]].", thinking=thinking) == "A"
    # a prompt that opened the thinking: the text up to </think> is thinking
    assert prompts.parse_verdict("[[B]] maybe", thinking_open=True) == "unparseable"
    assert prompts.parse_verdict("[[B]] maybe </think> [[A]]", thinking_open=True) == "A"


def test_split_thinking():
    assert prompts.split_thinking("<think>x</think>\n\nanswer") == ("<think>x</think>", "answer")
    # R1 style: a lone </think> ending its line closes the thinking the prompt opened
    assert prompts.split_thinking("x\n</think>\ny") == ("x\n</think>", "y")
    assert prompts.split_thinking("x", thinking_open=True) == ("<think>x", "")
    assert prompts.split_thinking("x </think> y", thinking_open=True) == ("<think>x </think>", "y")
    # cut off while thinking: an unclosed <think> starting its line
    assert prompts.split_thinking("pre\n<think>cut") == ("<think>cut", "pre")
    assert prompts.split_thinking("plain") == ("", "plain")
    # a tag inside a sentence is text of the answer (issue 14: it used to discard what came
    # before it), and so is a </think> left after a real block
    assert prompts.split_thinking("[[A]], B has a stray </think> tag") == (
        "",
        "[[A]], B has a stray </think> tag",
    )
    assert prompts.split_thinking("B prints <think> here") == ("", "B prints <think> here")
    assert prompts.split_thinking("<think>t</think> [[A]] and `</think>`\nok") == (
        "<think>t</think>",
        "[[A]] and `</think>`\nok",
    )


def test_retry_turn_is_judgebench_s():
    msgs = prompts.judge_messages("instruct", "Q", "a", "b")
    again = prompts.retry_messages(msgs, "Both are fine.")
    assert again[:2] == msgs and len(msgs) == 2
    assert again[2] == {"role": "assistant", "content": "Both are fine."}
    assert again[3] == {
        "role": "user",
        "content": "continue your judgment and finish by outputting a final verdict label",
    }
    assert prompts.needs_retry("Both are fine.")
    assert not prompts.needs_retry("[[A]] or [[B]]")  # answered, ambiguously: no retry
    assert not prompts.needs_retry("[[B]]")
    assert prompts.needs_retry("<think>[[A]]</think> hmm")
    assert prompts.needs_retry("[[A]] at first. Final verdict: [[B")  # cut off: asked again
    assert not prompts.needs_retry("[[A]] is better than [[B]]")  # ambiguous, but answered
    assert prompts.needs_retry("Both are good.", verdict_format="arena-hard")
    assert not prompts.needs_retry("[[A=B]]", verdict_format="arena-hard")  # a tie is an answer
