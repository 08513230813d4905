"""Benchmark of the bundled decision backend: shared-prefix batched scoring against the naive way.

    python -m bench.backend [--device cpu|cuda] [--dtype auto|float32|bfloat16] [--model default]
    python bench/backend.py --device cuda          # the same, as a script

For 1, 8 and 32 questions over a 100-token and a 1,000-token input it measures milliseconds per
request and questions per second of (a) ours: prompts rendered and label-checked, the shared prefix
run once, every question's remaining tokens in one right-padded batch, logits only at each last
position; (b) the naive way: each question one full forward with logits at every position. It reports
the achieved GFLOP/s of ours (useful FLOPs, padding not counted) against a matmul peak measured on
the same device in the same run (before and after the grid, the better of the two), prints a table,
and rewrites the "Bundled backend" section of docs/benchmarks.md (``--no-write`` to skip). Medians
of ``--repeats`` runs after one warm-up. ``--peak-size N`` measures the peak on N x N matrices instead (a
quick check of the bench itself: a small peak is no peak).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable, not this folder
    _here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _here]
    sys.path.insert(0, str(_here.parent))

import torch  # noqa: E402

from backend.decide import Decider  # noqa: E402
from backend.engine import ScoringEngine  # noqa: E402
from backend.loading import LoadedModel, load_model  # noqa: E402
from backend.prompts import QuestionSpec  # noqa: E402
from backend.scoring import Scorer, common_prefix_length  # noqa: E402

DOC = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
SECTION = "## Bundled backend"
SENTENCES = (
    "I was charged twice for my subscription this month and the second payment has not been refunded. ",
    "The support chat closed before anyone answered, and the app shows an error 500 when I open my invoices. ",
    "We are a team of forty people and we are thinking about moving to the Enterprise plan next quarter. ",
    "Please tell me whether the upgrade keeps our saved reports, because losing them would be a problem. ",
)
TOPICS = ("a refund", "a software bug", "a price question", "an angry customer", "a login problem",
          "an upgrade", "a cancellation", "an invoice", "a data export", "a security concern", "a feature request",
          "a delivery delay")


def synthetic_input(tokenizer, tokens: int) -> str:
    text = ""
    i = 0
    while len(tokenizer.encode(text, add_special_tokens=False)) < tokens:
        text += SENTENCES[i % len(SENTENCES)]
        i += 1
    ids = tokenizer.encode(text, add_special_tokens=False)[:tokens]
    return tokenizer.decode(ids)


def questions(count: int) -> list[QuestionSpec]:
    out = []
    for i in range(count):
        topic = TOPICS[i % len(TOPICS)]
        if i % 3 == 0:
            out.append(QuestionSpec(f"q{i}", "yes_no", f"The message is about {topic} (check {i})."))
        elif i % 3 == 1:
            out.append(QuestionSpec(f"q{i}", "choice", f"Which team handles {topic}? (case {i})", options=(
                ("billing", "charges and refunds"), ("technical", "bugs and outages"), ("sales", None),
                ("other", None))))
        else:
            out.append(QuestionSpec(f"q{i}", "score", f"How urgent is {topic}? (case {i})",
                                    levels=("no rush", "this week", "today", "immediately")))
    return out


def dense_weights(decoder) -> int:
    """The weights each token meets in the decoder, the embedding aside: every linear layer's in x out,
    whether its matrix is a parameter or held quantized (backend/quantized.py), and the other parameters
    (norms, biases)."""
    linears = [m for m in decoder.modules() if hasattr(m, "in_features") and hasattr(m, "out_features")]
    matrices = {id(m.weight) for m in linears if isinstance(getattr(m, "weight", None), torch.nn.Parameter)}
    rest = sum(p.numel() for n, p in decoder.named_parameters() if "embed" not in n and id(p) not in matrices)
    return sum(m.in_features * m.out_features for m in linears) + rest


def layer_flops(model, new_tokens: int, context_before: int) -> float:
    """Forward FLOPs of the decoder for ``new_tokens`` tokens after ``context_before`` cached ones."""
    cfg = model.config
    dense = dense_weights(model.get_decoder())
    hidden = cfg.num_attention_heads * getattr(cfg, "head_dim", cfg.hidden_size // cfg.num_attention_heads)
    # QK^T and AV: each new token t attends to context_before + t + 1 positions, 2 matmuls x 2 FLOPs.
    attended = new_tokens * context_before + new_tokens * (new_tokens + 1) / 2
    return 2.0 * dense * new_tokens + 4.0 * cfg.num_hidden_layers * hidden * attended


def head_flops(model, rows: int) -> float:
    return 2.0 * model.config.hidden_size * model.config.vocab_size * rows


def useful_flops_ours(model, prompts: list[tuple[int, ...]]) -> float:
    p = common_prefix_length(prompts)
    total = layer_flops(model, p, 0) if p else 0.0
    for ids in prompts:
        total += layer_flops(model, len(ids) - p, p)
    return total + head_flops(model, len(prompts))


def flops_naive(model, prompts: list[tuple[int, ...]]) -> float:
    return sum(layer_flops(model, len(ids), 0) + head_flops(model, len(ids)) for ids in prompts)


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def matmul_peak(device: str, dtype, size: int | None = None) -> float:
    """GFLOP/s of a large square matmul in the served dtype (best of a few); ``size`` the side of the
    matrices (default 8192 on a GPU, 2048 on the CPU)."""
    gpu = device.startswith("cuda")
    n, inner = (8192, 10) if gpu else (2048, 1)
    n = size or n
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    best = float("inf")
    for _ in range(6):
        sync(device)
        t = time.perf_counter()
        for _ in range(inner):
            torch.mm(a, b)
        sync(device)
        best = min(best, (time.perf_counter() - t) / inner)
    return 2.0 * n ** 3 / best / 1e9


def timed(fn, device: str, repeats: int, warm_up: bool = True) -> float:
    if warm_up:
        fn()
    times = []
    for _ in range(repeats):
        sync(device)
        t = time.perf_counter()
        fn()
        sync(device)
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000.0


def run(args, loaded: LoadedModel | None = None) -> tuple[list[dict], dict]:
    """The grid of ``args``; ``loaded``: a model this process already holds, used instead of loading
    ``args.model`` again (its device and dtype are the run's)."""
    loaded = loaded or load_model(args.model, device=args.device, dtype=args.dtype)
    scorer = Scorer(loaded.model, loaded.device)
    decider = Decider(loaded, ScoringEngine(scorer))
    model = loaded.model
    peak_before = matmul_peak(loaded.device, loaded.dtype, args.peak_size)  # again at the end; the better counts
    rows = []
    for input_tokens in args.inputs:
        text = synthetic_input(loaded.tokenizer, input_tokens)
        for count in args.questions:
            specs = questions(count)

            def ours(text: str = text, specs: list[QuestionSpec] = specs) -> None:
                plans = decider.plan(text, specs)
                scorer.score([p.rows[0] for p in plans])

            def naive(text: str = text, specs: list[QuestionSpec] = specs) -> None:
                plans = decider.plan(text, specs)
                for p in plans:
                    scorer.reference_logprobs(p.rows[0].prompt_ids)

            prompts = [p.rows[0].prompt_ids for p in decider.plan(text, specs)]
            ours_ms = timed(ours, loaded.device, args.repeats)
            naive_ms = timed(naive, loaded.device, args.naive_repeats, warm_up=False)  # ours warmed the same kernels
            rows.append({
                "input_tokens": input_tokens, "questions": count,
                "prompt_tokens": sum(len(p) for p in prompts), "shared_prefix": common_prefix_length(prompts),
                "ours_ms": ours_ms, "naive_ms": naive_ms, "speedup": naive_ms / ours_ms,
                "ours_qps": count / ours_ms * 1000.0, "naive_qps": count / naive_ms * 1000.0,
                "ours_gflops": useful_flops_ours(model, prompts) / ours_ms / 1e6,
                "naive_gflops": flops_naive(model, prompts) / naive_ms / 1e6,
            })
            print(progress_line(rows[-1]), flush=True)
    # A busy moment at the start understates the peak, so the share of it is known only now: progress lines
    # carry none, and the one table (printed and written) uses this single figure.
    peak_after = matmul_peak(loaded.device, loaded.dtype, args.peak_size)
    peak = max(peak_before, peak_after)
    env = {"device": loaded.device, "dtype": str(loaded.dtype).removeprefix("torch."), "model": loaded.name,
           "torch": torch.__version__, "threads": torch.get_num_threads(), "cpu_count": os.cpu_count(),
           "machine": device_name(loaded.device), "peak_gflops": peak, "peak_before_gflops": peak_before,
           "peak_after_gflops": peak_after, "repeats": args.repeats,
           "naive_repeats": args.naive_repeats, "peak_size": args.peak_size}
    return rows, env


def device_name(device: str) -> str:
    if device.startswith("cuda"):
        return torch.cuda.get_device_name(torch.device(device))
    return f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores"


HEADER = ("| input tokens | questions | prompt tokens | shared prefix | ours ms/request | naive ms/request | speedup "
          "| ours questions/s | naive questions/s | ours GFLOP/s (% of peak) | naive GFLOP/s |")


def progress_line(r: dict) -> str:
    """One measured grid point while the run goes on (no share of the peak: that is measured at the end)."""
    return (f"measured: {r['input_tokens']} input tokens, {r['questions']} questions: ours {r['ours_ms']:.0f} ms, "
            f"naive {r['naive_ms']:.0f} ms ({r['speedup']:.1f}x), ours {r['ours_gflops']:.0f} GFLOP/s")


def format_row(r: dict, peak: float) -> str:
    return (f"| {r['input_tokens']} | {r['questions']} | {r['prompt_tokens']} | {r['shared_prefix']} "
            f"| {r['ours_ms']:.0f} | {r['naive_ms']:.0f} | {r['speedup']:.1f}x | {r['ours_qps']:.1f} "
            f"| {r['naive_qps']:.1f} | {r['ours_gflops']:.0f} ({100 * r['ours_gflops'] / peak:.0f} %) "
            f"| {r['naive_gflops']:.0f} |")


INTRO = (
    "*Ours*: prompts rendered and label-checked, the shared prefix (template head + input) run once, every "
    "question's remaining tokens in one right-padded batch reading its KV cache as shared views, LM head only at each "
    "last position. *Naive*: each question one full forward with logits at every position. GFLOP/s count "
    "useful FLOPs (decoder matmuls + attention + LM head rows actually needed by each method; padding not "
    "counted). One subsection per device kind; each run replaces its own. Timings on a shared machine vary "
    "from run to run; the ratio is the stable figure.")


def device_kind(env: dict) -> str:
    return f"{env['device'].split(':')[0]}, {env['dtype']}"


def subsection(rows: list[dict], env: dict) -> str:
    target = next((r for r in rows if r["questions"] == 8 and r["input_tokens"] == 1000), None)
    verdict = (f"8 questions over a 1,000-token input: **{target['speedup']:.1f}x** the naive way "
               f"(target: at least 4x, {'met' if target['speedup'] >= 4 else 'NOT met'}).") if target else ""
    lines = [
        f"### {device_kind(env)}", "",
        f"`python -m bench.backend --device {env['device']}` — {env['model']} on {env['machine']}, {env['dtype']}, "
        f"torch {env['torch']}, {env['threads']} threads, {time.strftime('%Y-%m-%d')}. Medians of {env['repeats']} "
        f"runs after a warm-up (naive: {env['naive_repeats']}, no separate warm-up). Matmul peak"
        + (f" ({env['peak_size']}² matrices)" if env.get("peak_size") else "") + " measured in the "
        f"same run, before and after the grid ({env['peak_before_gflops']:.0f} and {env['peak_after_gflops']:.0f}), "
        f"the better of the two: **{env['peak_gflops']:.0f} GFLOP/s**; every share of the peak below is of that "
        "one figure.", "",
        HEADER, "|" + "---|" * 11,
        *[format_row(r, env["peak_gflops"]) for r in rows], "",
        verdict, "",
    ]
    return "\n".join(lines)


def replace_block(text: str, heading: str, block: str, level: str) -> str:
    """Replace the block that starts with ``heading`` up to the next heading of the same or a higher level."""
    start = text.find(heading + "\n")
    if start < 0:
        return text.rstrip("\n") + "\n\n" + block
    stops = [i for i in (text.find("\n## ", start + 1), text.find("\n" + level + " ", start + 1)) if i >= 0]
    end = min(stops) if stops else -1
    return text[:start] + block.rstrip("\n") + "\n" + ("" if end < 0 else text[end:])


def write_section(sub: str, kind: str) -> None:
    DOC.parent.mkdir(parents=True, exist_ok=True)
    doc = DOC.read_text() if DOC.exists() else "# Benchmarks\n"
    start = doc.find(SECTION + "\n")
    if start < 0:
        doc = doc.rstrip("\n") + "\n\n" + SECTION + "\n\n" + INTRO + "\n\n" + sub
    else:
        end = doc.find("\n## ", start + 1)
        body = doc[start:] if end < 0 else doc[start:end + 1]
        body = replace_block(body, f"### {kind}", sub, "###")
        doc = doc[:start] + body.rstrip("\n") + "\n" + ("" if end < 0 else doc[end:])
    DOC.write_text(doc.rstrip("\n") + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="default")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--dtype", default="auto")
    parser.add_argument("--inputs", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--questions", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--naive-repeats", type=int, default=1)
    parser.add_argument("--peak-size", type=int, default=None,
                        help="side of the matmul peak's square matrices (default 8192 on a GPU, 2048 on the CPU)")
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/benchmarks.md alone")
    args = parser.parse_args(argv)
    rows, env = run(args)
    text = subsection(rows, env)
    print("\n" + text)
    if not args.no_write:
        write_section(text, device_kind(env))
        print(f"wrote the '{SECTION[3:]}' section of {DOC}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
