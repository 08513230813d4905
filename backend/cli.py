"""``decisions-gateway backend --model PATH_OR_DEFAULT --port 30000 [--host] [--dtype] [--device]``."""

from __future__ import annotations

import argparse
import sys


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="decisions-gateway backend",
                                     description="Serve a chat model as a decision model (/v1/decisions, "
                                                 "/v1/systemone, /v1/score).")
    parser.add_argument("--model", default="default",
                        help="a Hugging Face folder, a .gguf file, or 'default'/'smollm2' for the bundled SmolLM2-135M")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=30000)
    parser.add_argument("--device", default="auto", help="auto (CUDA when present), cpu, cuda, cuda:1, ...")
    parser.add_argument("--dtype", default="auto", help="auto (fp32 on CPU, bf16 on CUDA), float32, bfloat16, float16")
    parser.add_argument("--max-queued-rows", type=int, default=1024,
                        help="question rows queued or in flight before new requests get 503")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    import uvicorn

    from backend.loading import ModelLoadError
    from backend.server import create_app
    from backend.service import DecisionService

    try:
        service = DecisionService.load(args.model, device=args.device, dtype=args.dtype,
                                       max_queued_rows=args.max_queued_rows)
    except ModelLoadError as err:
        print(f"decisions-gateway backend: {err}", file=sys.stderr)
        return 2
    print(f"serving {service.loaded.name} on {service.loaded.device} ({service.loaded.dtype}), "
          f"prompt format {service.decider.version}, at http://{args.host}:{args.port}", file=sys.stderr)
    uvicorn.run(create_app(service), host=args.host, port=args.port, log_level="warning")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
