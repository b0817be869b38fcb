"""Run under an environment with the sglang wheel: SGLang's own qwen3 reasoning parser and
qwen3_coder detector on raw generations, as its chat server applies them (not imported by
the test suite; `tests/agent/test_sglang_conformance.py` runs it as a script).

Reads [{"text", "tools", "force_reasoning"}] as JSON on stdin and prints, for each,
{"reasoning", "content", "calls": [[name, arguments]]}. With the argument `shape`, reads
replies' parts instead and prints the whole chat completion SGLang's own response models
serialise for them. The package's __init__ modules are
bypassed (they import torch and the whole server); the parser modules themselves run as
shipped.
"""

import importlib
import importlib.util
import json
import sys
import types
from pathlib import Path

_PACKAGES = (
    "sglang", "sglang.srt", "sglang.srt.function_call", "sglang.srt.entrypoints",
    "sglang.srt.entrypoints.openai", "sglang.srt.parser",
)  # fmt: skip


def _load() -> tuple[types.ModuleType, types.ModuleType, types.ModuleType]:
    spec = importlib.util.find_spec("sglang")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("sglang is not installed for this Python")
    root = Path(next(iter(spec.submodule_search_locations)))
    for name in _PACKAGES:
        module = types.ModuleType(name)
        module.__path__ = [str(root.joinpath(*name.split(".")[1:]))]
        sys.modules[name] = module
    detector = importlib.import_module("sglang.srt.function_call.qwen3_coder_detector")
    reasoning = importlib.import_module("sglang.srt.parser.reasoning_parser")
    protocol = importlib.import_module("sglang.srt.entrypoints.openai.protocol")
    return detector, reasoning, protocol


def _shapes(protocol: types.ModuleType) -> list[object]:
    usage_module = importlib.import_module("sglang.srt.entrypoints.openai.usage_processor")
    out = []
    for part in json.load(sys.stdin):
        p = protocol
        calls = [
            p.ToolCall(
                id=call["id"], index=call["index"],
                function=p.FunctionResponse(name=call["name"], arguments=call["arguments"]),
            )
            for call in part["calls"]
        ] or None  # fmt: skip
        cached = (
            p.PromptTokensDetails(cached_tokens=part["cached_tokens"])
            if part["cached_tokens"] is not None
            else None
        )
        usage = usage_module.UsageProcessor.calculate_token_usage(
            prompt_tokens=part["prompt_tokens"], completion_tokens=part["completion_tokens"],
            reasoning_tokens=part["reasoning_tokens"], cached_tokens=cached,
        )  # fmt: skip
        reasoning = part["reasoning"]
        response = p.ChatCompletionResponse(
            id=part["id"], created=part["created"], model=part["model"], usage=usage,
            choices=[p.ChatCompletionResponseChoice(
                index=0, finish_reason=part["finish_reason"], matched_stop=None,
                message=p.ChatMessage(
                    role="assistant", content=part["content"] or "", tool_calls=calls,
                    reasoning_content=reasoning if reasoning else None,
                ),
            )],
        )  # fmt: skip
        out.append(response.model_dump(mode="json"))
    return out


def main() -> None:
    detector_module, reasoning_module, protocol = _load()
    if sys.argv[1:] == ["shape"]:
        json.dump(_shapes(protocol), sys.stdout)
        return
    cases = json.load(sys.stdin)
    out = []
    for case in cases:
        parser = reasoning_module.ReasoningParser(
            "qwen3", stream_reasoning=False, force_reasoning=case["force_reasoning"]
        )
        reasoning, text = parser.parse_non_stream(case["text"])
        text = text or ""
        detector = detector_module.Qwen3CoderDetector()
        tools = [protocol.Tool(**tool) for tool in case["tools"]]
        calls = []
        if detector.has_tool_call(text):
            result = detector.detect_and_parse(text, tools)
            text = result.normal_text
            calls = [[call.name, json.loads(call.parameters)] for call in result.calls]
        out.append({"reasoning": reasoning, "content": text, "calls": calls})
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
