#!/usr/bin/env bash
# One short GPU check of `python -m bench` (about 3-5 minutes on an H200), every file written under OUTDIR:
#   detect.json; results/<gpu-id>/*.json (resnet50 + gpt2, 4 precisions x 3 batch sizes; resnet50 bf16 max batch);
#   harness_vs_timer.{txt,json}; *.jsonl progress; device_check.log (what ran, how long, exit codes);
#   checks.json: the schema-/2 facts only a GPU gives, checked in the files (bench/check_results.py): the cuDNN
#   version, CUDA-event raw step times with a noise flag that matches them, and a safe batch below the max batch
#   confirmed by a repeat run on the device.
# --smoke runs the same stages on the CPU with tiny models, so the script itself is tested without a GPU.
#
#   bash bench/device_check.sh OUTDIR [--smoke]
set -u -o pipefail

OUT=${1:?usage: bash bench/device_check.sh OUTDIR [--smoke]}
SMOKE=0
[ "${2:-}" = "--smoke" ] && SMOKE=1
cd "$(dirname "$0")/.." || exit 2
if [ -n "${PYTHON:-}" ]; then PY=$PYTHON
elif [ -x .venv/bin/python ]; then PY=.venv/bin/python
else PY=python3
fi
mkdir -p "$OUT/results" || exit 2
LOG="$OUT/device_check.log"
: > "$LOG"
FAILED=0

stage() {  # stage NAME TIMEOUT_S CMD... : run, log duration and exit code, keep going on failure
  local name=$1 limit=$2
  shift 2
  local t0=$SECONDS
  echo "== $name: $*" | tee -a "$LOG"
  timeout "$limit" "$@"
  local rc=$?
  echo "== $name: exit $rc after $((SECONDS - t0)) s" | tee -a "$LOG"
  [ "$rc" -ne 0 ] && FAILED=$((FAILED + 1))
  return 0
}

if [ "$SMOKE" = 1 ]; then
  # CPU fp16 autocast is very slow, so the smoke run checks the script's wiring with two precisions.
  CNN=small_cnn; CNN_B=1,2; LM=mlp; LM_B=2,4,8; LM_OPT=(); DEV=cpu; PRECISIONS=fp32,bf16
  STEPS=(--steps 2 --warmup 1 --phase-steps 1)
  TIMER=(--model mlp --batch 8 --steps 10 --warmup 2 --repeats 1 --warmup-s 0.1 --min-run-time 0.05)
else
  CNN=resnet50; CNN_B=64,128,256; LM=gpt2; LM_B=8,16,32; LM_OPT=(--model-option seq_len=1024); DEV=cuda
  PRECISIONS=fp32,tf32,fp16,bf16
  STEPS=(--steps 10 --warmup 5 --phase-steps 3)
  TIMER=(--model resnet50 --batch 128 --precision bf16 --steps 20 --warmup 5 --repeats 4 --warmup-s 3
         --min-run-time 1)
fi
RUN=("$PY" -m bench run --out "$OUT/results" --progress-json --precision "$PRECISIONS")

stage detect 120 bash -c "$PY -m bench detect --json > '$OUT/detect.json'"
stage "run $CNN" 240 bash -c "$(printf '%q ' "${RUN[@]}" --model "$CNN" --batch "$CNN_B" "${STEPS[@]}") \
  > '$OUT/run-$CNN.jsonl'"
stage "run $LM" 240 bash -c "$(printf '%q ' "${RUN[@]}" --model "$LM" "${LM_OPT[@]}" --batch "$LM_B" \
  "${STEPS[@]}") > '$OUT/run-$LM.jsonl'"
stage "max batch $CNN bf16" 180 bash -c "$(printf '%q ' "$PY" -m bench run --out "$OUT/results" \
  --progress-json --model "$CNN" --precision bf16 --batch "$CNN_B" --steps 2 --warmup 1 --phase-steps 0 \
  --max-batch) > '$OUT/maxbatch-$CNN.jsonl'"
stage "harness vs Timer" 180 bash -c "$(printf '%q ' "$PY" perf/harness_vs_timer.py --device "$DEV" \
  "${TIMER[@]}" --json "$OUT/harness_vs_timer.json") | tee '$OUT/harness_vs_timer.txt'"

stage "check /2 fields" 60 "$PY" -m bench.check_results "$OUT/results" --device "$DEV" --json "$OUT/checks.json"

echo "== files:" | tee -a "$LOG"
find "$OUT" -type f | sort | tee -a "$LOG"
echo "== $FAILED stage(s) failed" | tee -a "$LOG"
[ "$FAILED" -eq 0 ]
