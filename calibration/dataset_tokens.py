"""Token statistics of an Alpaca-format dataset under a SentencePiece tokenizer (documentation, not run in CI).

Usage:
    python calibration/dataset_tokens.py ALPACA_JSON TOKENIZER_MODEL

ALPACA_JSON is a JSON list of {"instruction", "input", "output"} records (tatsu-lab/stanford_alpaca's
alpaca_data.json); TOKENIZER_MODEL is a SentencePiece model (the Llama 2 tokenizer.model, vocab 32,000).
Each example is rendered exactly as tatsu-lab/stanford_alpaca's train.py renders it: the PROMPT_DICT
template ("prompt_input" when "input" is non-empty, else "prompt_no_input") followed by the output, and
counted as BOS + tokens(prompt + output) + EOS. (train.py appends the literal "</s>" EOS string to the
text; a Hugging Face Llama tokenizer turns that string into the single EOS id, so it is counted here as
one token.) Prints count, mean, median, p90, p99 and max tokens per example, the share of examples above
512 / 1024 / 2048 tokens, and the longest example.

Needs only the standard library plus `sentencepiece` (imported when run).
"""

from __future__ import annotations

import json
import math
import statistics
import sys

# tatsu-lab/stanford_alpaca train.py, PROMPT_DICT (lines 31-42 at 761dc5bfbdeeffa89b8bff5d038781a4055f796a).
PROMPT_INPUT = (
    "Below is an instruction that describes a task, paired with an input that provides further context. "
    "Write a response that appropriately completes the request.\n\n"
    "### Instruction:\n{instruction}\n\n### Input:\n{input}\n\n### Response:"
)
PROMPT_NO_INPUT = (
    "Below is an instruction that describes a task. "
    "Write a response that appropriately completes the request.\n\n"
    "### Instruction:\n{instruction}\n\n### Response:"
)
THRESHOLDS = (512, 1024, 2048)


def render(example: dict) -> str:
    """Prompt + output, as train.py builds source + target (without the EOS string)."""
    if example.get("input", "") != "":
        prompt = PROMPT_INPUT.format_map(example)
    else:
        prompt = PROMPT_NO_INPUT.format_map(example)
    return prompt + example["output"]


def percentile(sorted_values: list[int], q: float) -> float:
    """Linear-interpolated percentile (numpy's default method) of an ascending list."""
    if not sorted_values:
        raise ValueError("no values")
    pos = (len(sorted_values) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: python calibration/dataset_tokens.py ALPACA_JSON TOKENIZER_MODEL", file=sys.stderr)
        return 2
    json_path, model_path = argv[1], argv[2]
    import sentencepiece  # lazy: only this documentation script needs it

    sp = sentencepiece.SentencePieceProcessor(model_file=model_path)
    with open(json_path, encoding="utf-8") as fh:
        data = json.load(fh)
    texts = [render(ex) for ex in data]
    ids = sp.encode(texts)
    lengths = [len(x) + 2 for x in ids]  # + BOS + EOS
    s = sorted(lengths)
    n = len(lengths)
    print(f"tokenizer: {model_path} (vocab {sp.vocab_size()}, bos {sp.bos_id()}, eos {sp.eos_id()})")
    print(f"examples: {n}")
    print(f"total tokens: {sum(lengths)}")
    print(f"mean: {statistics.fmean(lengths):.2f}")
    print(f"median: {statistics.median(lengths)}")
    print(f"p90: {percentile(s, 90):.1f}")
    print(f"p99: {percentile(s, 99):.1f}")
    print(f"max: {s[-1]}")
    for t in THRESHOLDS:
        above = sum(1 for v in lengths if v > t)
        print(f"above {t}: {above} ({100.0 * above / n:.3f}%)")
    i = max(range(n), key=lengths.__getitem__)
    prompt_only = len(sp.encode(render({**data[i], "output": ""}))) + 1  # + BOS
    print(f"longest example: index {i}, {lengths[i]} tokens (prompt incl. BOS {prompt_only}), "
          f"instruction {data[i]['instruction'][:80]!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
