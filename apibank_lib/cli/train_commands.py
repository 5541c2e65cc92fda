"""The commands that make training data and models: ``train``, ``check-train``, ``synthesize``, ``convert-toolalpaca``."""

from __future__ import annotations

import argparse
import shlex
import sys
from typing import Any

from apibank_lib.cli.options import add_json
from apibank_lib.cli.output import print_json, text_table, warn
from apibank_lib.core.errors import ConfigError
from apibank_lib.models.registry import model_help

__all__ = ["cmd_check_train", "cmd_synthesize", "cmd_convert_toolalpaca", "cmd_train", "add_commands"]


def cmd_check_train(args: argparse.Namespace) -> int:
    from apibank_lib.data.check_train import check_corpus

    report = check_corpus(args.paths)
    retrieval = None
    if args.search:
        from apibank_lib.data.check_train import check_retrieval

        retrieval = check_retrieval(report)
    if args.json:
        out = report.counts()
        if retrieval is not None:
            out["searches"] = len(retrieval)
            out["searches_retrieving_their_api"] = int(retrieval["hit"].sum()) if len(retrieval) else 0
        out["rejections"] = [{"where": r.where, "id": r.dialogue_id, "reason": r.reason, "message": r.message} for r in report.rejected]
        out["api_rejections"] = [{"where": r.where, "api": r.dialogue_id, "message": r.message} for r in report.api_rejections]
        print_json(out)
    else:
        for r in report.api_rejections + report.rejected:
            print(r)
        c = report.counts()
        print(
            f"{c['accepted']} of {c['dialogues']} dialogues accepted ({100 * c['rejection_rate']:.1f}% rejected), "
            f"{c['apis']} APIs in {c['domains']} domains ({c['apis_called']} called by accepted dialogues); by ability: "
            + ", ".join(f"{a} {n}" for a, n in c["accepted_by_ability"].items())
        )
        if report.rejected:
            print(report.table().to_markdown(index=False))
        if retrieval is not None and len(retrieval):
            print(
                f"ToolSearcher (all-MiniLM-L6-v2 over the corpus's {len(report.schemas)} APIs) ranks the intended API first "
                f"for {int(retrieval['hit'].sum())} of {len(retrieval)} searches ({100 * retrieval['hit'].mean():.1f}%)"
            )
    return 1 if report.rejected or report.api_rejections else 0


def cmd_synthesize(args: argparse.Namespace) -> int:
    from apibank_lib.synthesis.pipeline import SynthesisConfig, run_pipeline
    from apibank_lib.synthesis.single import run_single_agent

    config = SynthesisConfig(
        backend=args.model,
        out=args.out,
        n_domains=args.domains,
        apis_per_domain=args.apis_per_domain,
        dialogues_per_domain=args.dialogues_per_domain,
        concurrency=args.concurrency,
        seed=args.seed,
        max_tokens=args.max_tokens,
        form=args.form,
        temperature=args.temperature,
        lists=not args.no_lists,
        retries=args.retries,
        domains_asked=args.domains_asked,
        apart_from=args.apart_from or (),
        clarify=not args.no_clarify,
        request_values=args.request_values,
        feedback=args.feedback,
    )
    if args.single_agent is not None:
        report = run_single_agent(config, examples=args.single_agent, token_budget=args.token_budget)
    else:
        report = run_pipeline(config)
    if args.json:
        out = report.counts()
        out["rejections"] = [{"stage": r.stage, "key": r.key, "reason": r.reason, "message": r.message} for r in report.rejections]
        print_json(out)
    else:
        print(report.table().to_markdown(index=False))
        print(f"{len(report.accepted)} dialogues accepted, in {len(report.corpus_files)} corpus files under {args.out}/corpus")
    return 0


def cmd_convert_toolalpaca(args: argparse.Namespace) -> int:
    from apibank_lib.data.formats.toolalpaca import convert, read_toolalpaca, write_converted

    result = convert(read_toolalpaca(args.src))
    written = write_converted(result, args.out_dir)
    if args.json:
        print_json(result.counts())
        return 0
    c = result.counts()
    made = f"{c['samples']} samples" if result.kind == "eval" else f"{c['dialogues']} dialogues"
    refs = c["references"]
    print(f"{args.src} ({result.kind}): {made}, {c['functions']} functions; wrote {', '.join(p.name for p in written)} to {args.out_dir}")
    print(
        f"step references: {refs['total']} in {refs['steps']} steps, {refs['unresolved']} unresolved, "
        f"{refs['with_value']} with a value"
    )
    print(text_table([list(r) for r in result.rows()], ["unit", "measure", "count"]))
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    from apibank_lib.training.recipe import TrainConfig
    from apibank_lib.training.workflow import train_model

    paths = list(args.corpus or []) + [p for group in args.source or [] for p in group]
    if not paths:
        raise ConfigError("apibank train needs corpus paths, or --source groups")
    if args.source and args.corpus:
        raise ConfigError("give either corpus paths or --source groups, not both")
    data = {"format": args.format, "paths": paths, "examples": args.examples, "mix": args.mix, "seed": args.seed}
    if args.source:
        data["sources"] = [list(group) for group in args.source]  # absent otherwise, as in older training.json files
    if args.prompt_modes:
        data["modes"] = args.prompt_modes  # absent otherwise, so older training.json files read the same
    from apibank_lib.training.export import parse_api_order

    parse_api_order(args.api_order)  # a bad value fails here, before any model is loaded
    if args.api_order != "appearance":
        data["api_order"] = args.api_order  # absent for the default, so older training.json files read the same
    config = TrainConfig(
        out=args.out, model=args.model, method=args.method, rank=args.rank, alpha=args.alpha, lr=args.lr, epochs=args.epochs,
        accumulate=args.accumulate, warmup=args.warmup, max_len=args.max_len, seed=args.seed, threads=args.threads, max_steps=args.max_steps,
        init_adapter=args.init_adapter, engine=args.engine, save_every=args.save_every, data=data,
        command="apibank " + shlex.join(sys.argv[1:]),
    )
    result = train_model(config, progress=not args.json, note=warn)
    if args.json:
        print_json(result.to_dict())
    else:
        print(f"trained {result.steps} steps on {result.examples_seen} examples in {result.seconds:.0f} s; final loss {result.final_loss}; saved to {result.out}")
    return 0


def add_commands(sub: Any) -> None:
    """Add this group's commands to the ``apibank`` parser's subparsers."""

    p = sub.add_parser("train", help="fine-tune a model (LoRA by default) on training corpus files")
    p.add_argument("corpus", nargs="*", help="corpus YAML files or folders (judged by the tester first), or ToolAlpaca files")
    p.add_argument(
        "--source", nargs="+", action="append", metavar="PATH",
        help="a group of corpus paths; with several --source groups, each gives an equal share of --examples "
        "(e.g. AI-written against model-made, half and half)",
    )
    p.add_argument(
        "--format", choices=("corpus", "toolalpaca", "hf"), default="corpus",
        help="toolalpaca: ToolAlpaca training files; hf: datasets in the messages layout (apibank export --format hf; "
        "a save_to_disk folder or a Parquet file), trained with --prompt-modes chat",
    )
    p.add_argument("--out", required=True, help="output folder: adapter, checkpoint (resumes), loss.csv, training.json")
    p.add_argument("--model", default="gemma-3-270m")
    p.add_argument("--method", choices=("lora", "full"), default="lora")
    p.add_argument("--examples", type=int, default=None, help="how many examples to draw (default: all)")
    p.add_argument("--mix", default=None, help="group shares of the draw, e.g. L1/api=0.6,L1/response=0.4 (default: mostly level-1 calls)")
    p.add_argument(
        "--prompt-modes", default=None, metavar="MODES",
        help="render examples through the model's chat template, e.g. chat=0.7,paper=0.3 (the evaluation's chat "
        "turns and the paper's text layout); default: completion examples, for base models",
    )
    p.add_argument("--rank", type=int, default=16)
    p.add_argument("--alpha", type=int, default=32)
    p.add_argument("--lr", type=float, default=2e-4)
    p.add_argument("--epochs", type=float, default=1.0)
    p.add_argument("--accumulate", type=int, default=8)
    p.add_argument("--warmup", type=int, default=10, help="warm-up optimiser steps (learning rate rising linearly)")
    p.add_argument("--max-len", type=int, default=1024)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--max-steps", type=int, default=None)
    p.add_argument("--init-adapter", default=None, help="continue training this LoRA adapter folder (a second stage)")
    p.add_argument(
        "--api-order", default="appearance",
        help="the order each prompt describes its APIs in: appearance (first call first), shuffled (a seeded shuffle "
        "per sample, so that the model cannot learn to call the first API described), or one per prompt mode "
        "(chat=appearance,paper=shuffled)",
    )
    p.add_argument("--engine", choices=("trl", "loop"), default="trl", help="trl: TRL's SFTTrainer (Accelerate); loop: the single-device reference loop")
    p.add_argument("--save-every", type=int, default=20, help="optimiser steps between checkpoints")
    add_json(p)
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("check-train", help="the synthesis tester on training corpus files: accepted, rejected and why")
    p.add_argument("paths", nargs="+", help="corpus YAML files or folders of them")
    p.add_argument("--search", action="store_true", help="also run the real ToolSearcher on every search of the corpus")
    add_json(p)
    p.set_defaults(func=cmd_check_train)

    p = sub.add_parser("synthesize", help="the five-agent pipeline: a model writes domains, APIs, requests and dialogues; the tester judges them")
    p.add_argument("--model", required=True, help=model_help())
    p.add_argument("--out", required=True, help="output folder: per-stage journals (resumable) and corpus/<domain>.yaml")
    p.add_argument("--domains", type=int, default=10, help="how many domains to use")
    p.add_argument(
        "--domains-asked", type=int, default=None,
        help="domains asked for in the first answer; more are asked one area of life at a time up to --domains (a later run with more --domains reuses the answers)",
    )
    p.add_argument("--apis-per-domain", type=int, default=6)
    p.add_argument("--dialogues-per-domain", type=int, default=15)
    p.add_argument("--concurrency", type=int, default=1, help="parallel requests (backends that allow it)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-tokens", type=int, default=1536)
    p.add_argument(
        "--form", choices=["json", "yaml"], default=None,
        help="how the agents answer: json (constrained by each stage's schema) or yaml; default json where the backend "
        "constrains output (llama.cpp, OpenAI-compatible servers)",
    )
    p.add_argument(
        "--single-agent", type=int, default=None, metavar="N",
        help="the baseline instead: one agent writes N whole examples (domain, APIs, dialogue), judged by the same tester",
    )
    p.add_argument("--token-budget", type=int, default=None, help="with --single-agent: stop once this many tokens are spent")
    p.add_argument("--temperature", type=float, default=0.7, help="sampling temperature of every answer (0: greedy)")
    p.add_argument("--retries", type=int, default=0, help="ask again this many times when the parser refuses an answer (sampling only)")
    p.add_argument(
        "--no-lists", action="store_true",
        help="do not show the agents what to keep away from (evaluated areas, taken domains, earlier requests): small "
        "models copy them; the pipeline filters instead",
    )
    p.add_argument(
        "--request-values", action="store_true",
        help="the request agent gives a value for each required input first, then a request that says them all; "
        "the dialogue's calls take exactly those values",
    )
    p.add_argument(
        "--feedback", action="store_true",
        help="a retry's prompt says why the try before was refused (chat mode; with --retries)",
    )
    p.add_argument(
        "--no-clarify", action="store_true",
        help="in the JSON form, dialogues call at once (no question and answer before the calls): small models write "
        "the calls as text into that question",
    )
    p.add_argument(
        "--apart-from", nargs="+", default=None, metavar="CORPUS",
        help="corpus files or folders to stay apart from as from the evaluation (their APIs, requests and domains), "
        "e.g. data/train/corpus",
    )
    add_json(p)
    p.set_defaults(func=cmd_synthesize)

    p = sub.add_parser("convert-toolalpaca", help="convert a ToolAlpaca training or evaluation file into our format")
    p.add_argument("src", help="a ToolAlpaca JSON file (a list of API entries)")
    p.add_argument("out_dir", help="folder for dialogues.jsonl, apis.json, samples.jsonl (evaluation) and report.json")
    p.add_argument("--json", action="store_true", help="print the counts as JSON")
    p.set_defaults(func=cmd_convert_toolalpaca)
