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
# Verdicts: a corpus of realistic outputs (the paper's case studies, Qwen3 thinking blocks,
# DeepSeek-R1 style open thinking, weak judges echoing the format)

CASE_KNOWLEDGE = (
    "Both Assistant A and Assistant B provided thorough and accurate responses to the user's "
    "question. ...\n\nAssistant B's response is more aligned with the user's request for a "
    "single correct answer.\n\nTherefore, based on the evaluation, I would say that Assistant "
    "B's response is slightly better than Assistant A's response.\n\n[[B]]"
)
QWEN_THINKING = (
    "<think>\nOkay, so I need to evaluate which AI assistant, A or B, provided a better answer. "
    "At first I lean to [[B]] since it is longer... but B undercounts the contribution of 49. "
    "So [[A]] it is.\n</think>\n\nAssistant A applies Legendre's formula correctly: 7 + 1 = 8. "
    "Assistant B misses 49 = 7^2.\n\nFinal verdict: **[[A]]**"
)

CORPUS = [
    # (output, verdict, reason)
    (CASE_KNOWLEDGE, "B", "verdict"),
    ("Therefore, based on the evaluation, the final verdict is:\n\n[[A]]", "A", "verdict"),
    ("Final verdict:\n\\[\n\\texttt{[[B]]}\n\\]", "B", "verdict"),
    (QWEN_THINKING, "A", "verdict"),
    # the final answer has no verdict: the thinking's verdict is not used
    ("<think>\nA is right. [[A]]\n</think>\n\nBoth answers have merits.", "unparseable", "none"),
    # R1-style: <think> opened by the prompt, only the closing tag generated
    (
        "B looks better, [[B]]... wait, no.\n</think>\n\nAssistant A is correct. [[A]]",
        "A",
        "verdict",
    ),
    # cut off while thinking: everything is thinking
    ("<think>\nLet me check: [[A]] seems right, but", "unparseable", "none"),
    # repeated verdicts: the last one wins
    (
        "[[A]]\n\nOn reflection, Assistant B handles the edge case. My final verdict is [[B]].",
        "B",
        "verdict",
    ),
    ("[[B]] ... [[B]] ... [[B]]", "B", "verdict"),
    # markdown and spacing
    ("**[[A]]**", "A", "verdict"),
    ("`[[B]]`", "B", "verdict"),
    ("[[ A ]]", "A", "verdict"),
    ("[[**B**]]", "B", "verdict"),
    ('Verdict: "[[A]]".', "A", "verdict"),
    ("\\boxed{[[B]]}", "B", "verdict"),
    # not verdicts: lower case, single brackets, bare letters, code
    ("[[a]]", "unparseable", "none"),
    ("[A]", "unparseable", "none"),
    ("Assistant A is better.", "unparseable", "none"),
    ("The output is [[1, 2], [3]] so [[A]]", "A", "verdict"),
    ("Expected [[1, 2]]", "unparseable", "none"),
    # both: the format echoed, or one token naming both letters
    ('"[[A]]" if assistant A is better, "[[B]]" if assistant B is better.', "unparseable", "both"),
    ("[[A]] or [[B]]", "unparseable", "both"),
    ("[[A]]/[[B]]", "unparseable", "both"),
    ("[[A/B]]", "unparseable", "both"),
    ("[[A or B]]", "unparseable", "both"),
    ("I am torn: [[A]] and [[B]]", "unparseable", "both"),
    # an echo first, then a real verdict: the last group decides
    (
        'I must answer "[[A]]" if assistant A is better, "[[B]]" if assistant B is better. '
        "Assistant B is wrong about iron oxide.\n\n[[A]]",
        "A",
        "verdict",
    ),
    # a verdict, then a final echo: the last group is ambiguous
    ("[[A]]\n\nFormat: [[A]] or [[B]]", "unparseable", "both"),
    # ties are not in the paper's format
    ("[[C]]", "unparseable", "tie"),
    ("[[A]] ... it is a tie: [[A=B]]", "unparseable", "tie"),
    ("", "unparseable", "none"),
    (None, "unparseable", "none"),
    # real SmolLM2-135M-Instruct outputs on JudgeBench (temperature 0.6, cut at 160 tokens),
    # hand-checked: they echo the template and never give a verdict
    (
        "[User Question]Find the greatest common divisor of 2185, 718, and -274.\n\n[The Start "
        "of Assistant B's Answer]Let's approach this step-by-step:\n\n[1] First, we need to find "
        "the greatest common divisor of 2185 and 718:\n\n[2] Then, we need to find the greatest "
        "common divisor of 2185 and 718.",
        "unparseable",
        "none",
    ),
    (
        "[The End of Assistant A's Answer]\n\nThe answer is 2.\n\ndef minRightShifts(nums: "
        "List[int]) -> int:\n    nums = list(map(int, nums))\n    nums.sort()\n    max_right = "
        "len(nums[0])\n",
        "unparseable",
        "none",
    ),
]


@pytest.mark.parametrize("output, verdict, reason", CORPUS)
def test_parse_verdict_corpus(output, verdict, reason):
    assert prompts.parse_verdict(output) == verdict
    details = prompts.parse_verdict_details(output)
    assert (details.verdict, details.reason) == (verdict, reason)
    assert verdict in ("A", "B", "unparseable")


def test_separate_thinking_never_decides():
    thinking = "Clearly [[B]]."
    assert prompts.parse_verdict("No verdict here.", thinking=thinking) == "unparseable"
    assert prompts.parse_verdict("So [[A]].", thinking=thinking) == "A"
    # a prompt that opened the thinking: the text up to </think> is thinking
    assert prompts.parse_verdict("[[B]] maybe", thinking_open=True) == "unparseable"
    assert prompts.parse_verdict("[[B]] maybe </think> [[A]]", thinking_open=True) == "A"


def test_split_thinking():
    assert prompts.split_thinking("<think>x</think>\n\nanswer") == ("<think>x</think>", "answer")
    assert prompts.split_thinking("x </think> y") == ("x </think>", "y")
    assert prompts.split_thinking("x", thinking_open=True) == ("<think>x", "")
    assert prompts.split_thinking("pre <think>cut") == ("<think>cut", "pre")
    assert prompts.split_thinking("plain") == ("", "plain")


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
