#!/usr/bin/env bash
# The prepared GPU check (bench/gpu_check.py): lists the GPUs through wattlog's NVIDIA backend,
# times each NVML query wattlog uses (median and p99 us), reads the cadence of the field
# timestamps, samples a matmul load at 25 ms, tells whether the energy counter integrates true
# power or only the 25 ms observed of every 100 ms, and times a matmul step with the agent at
# 25 ms vs without. About 3 minutes; hard limits: the script's own 420 s budget (a step that
# would overrun it is skipped and listed), and `timeout` kills it at 480 s.
#
# Sets up nothing: it needs a python3 with a CUDA build of torch and nvidia-ml-py (the GPU
# machine's image has both), plus psutil (telemetry's sensor package imports it).
#   PYTHON=python3 bench/gpu_check.sh [extra bench.gpu_check options]
#   PYTHON=.venv/bin/python bench/gpu_check.sh --simulate true    # dry run, no GPU
# Figures: $OUT/gpu_check.json (or ./gpu_check.json), every step written as it finishes;
# the table goes to stdout (and to $OUT/gpu_check.txt when OUT is set).
#
# AMD Instinct (ROCm, the `amd` extra): bench/gpu_check.sh --amd [--seconds 20] runs bench.amd_check
# instead: each GPU's HIP index, profile, start-up counter check, and counter vs integrated power.
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
if [ "${1:-}" = "--amd" ]; then
    shift
    out=${OUT:-.}
    timeout -k 10 300 "$py" -m bench.amd_check --out "$out/amd_check.json" "$@"
    exit $?
fi
case " $* " in
*" --simulate "*) ;;  # no GPU needed: the simulated one (a dry run of this wrapper)
*)
    if ! "$py" -c 'import torch, pynvml, psutil; assert torch.cuda.is_available(), "torch sees no CUDA GPU"'; then
        echo "gpu_check: $py lacks a CUDA torch, nvidia-ml-py or psutil (set PYTHON=...); not run" >&2
        exit 2
    fi
    ;;
esac
out=${OUT:-.}
log=/dev/null
[ -n "${OUT:-}" ] && log=$OUT/gpu_check.txt
export PYTHONUNBUFFERED=1
timeout -k 10 480 "$py" -m bench.gpu_check --out "$out/gpu_check.json" --budget-s 420 "$@" 2>&1 | tee "$log"
