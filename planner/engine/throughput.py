"""What a planned step time implies, in the units a training log prints: samples (or tokens) per second per GPU, and
model FLOPs utilisation. Derived from the step time, so their source is the step time's source."""

from __future__ import annotations

from planner.engine.estimates import Throughput

# Families whose samples are token sequences: their logs count tokens (Hugging Face's train_tokens_per_second,
# torchtune's tokens_per_second_per_gpu); vision, MLP and custom models are counted in samples.
SEQUENCE_FAMILIES = ("encoder", "decoder", "rnn")


def option_throughput(samples_per_s: float, n_gpus: int, *, model_flops_per_sample: float | None,
                      tokens_per_sample: float | None, peak_tflops: float | None) -> Throughput:
    """`samples_per_s` over all `n_gpus` (global batch / step time); `model_flops_per_sample` forward + backward,
    activation recompute left out (MFU counts the model's FLOPs, not the hardware's: PaLM App. B)."""
    per_gpu = samples_per_s / n_gpus
    tokens = per_gpu * tokens_per_sample if tokens_per_sample else None
    tflops = per_gpu * model_flops_per_sample / 1e12 if model_flops_per_sample else None
    mfu = tflops / peak_tflops if tflops is not None and peak_tflops else None
    return Throughput(samples_per_s_per_gpu=per_gpu, tokens_per_s_per_gpu=tokens, model_tflops_per_s_per_gpu=tflops,
                      peak_tflops=peak_tflops, mfu=mfu)
