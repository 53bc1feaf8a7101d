#!/usr/bin/env bash
# The GPU runs that open issues still owe, one step per device call (each fits the 600 s a call may take).
# Run on the device machine from the repo root, with .whl carried (tools/gpu_verify.sh runs everything at once
# on a machine with no time limit). Logs and numbers go to $OUT/<step>/. docs/gpu-verification.md says which
# issue each step answers and what the last run found.
#
#   bash tools/gpu_owed.sh smoke      # first: one check on cuda inside the judge's own namespaces, then -m gpu
#   bash tools/gpu_owed.sh attacks    # tests/test_attacks.py and the isolation files with the GPU present
#   bash tools/gpu_owed.sh timing     # tests/test_gpu_profile.py alone (nothing else on the GPU)
#   bash tools/gpu_owed.sh numerics   # bench/numerics_bench.py: determinism and the four sanitizer tools
#   bash tools/gpu_owed.sh tune       # optimize --agent tune on matmul_bf16, 300 s; bench/model_agent_bench.py
#   bash tools/gpu_owed.sh kernelbench KB      # each problem's own Model, levels 2 and 1, skipping rows judged before
#                                              # (bench/data/kernelbench_own_judged.jsonl): issue 34's 250 of 250
#   bash tools/gpu_owed.sh rerun      # the GPU test of a check run again alone after its judge ran short
#   bash tools/gpu_owed.sh memory KB [NAMES]  # where a large problem's check holds device memory: one check alone,
#                                             # traced (also: one level-1 problem judged alone, by name)
#   bash tools/gpu_owed.sh compare    # bench/compare_bench.py: where a 1.6G-element output's comparison goes
#   bash tools/gpu_owed.sh reward     # bench/reward_bench.py: 64 concurrent rollouts through the reward API, timed
#   bash tools/gpu_owed.sh rebuild    # bench/rebuild_bench.py: a CUDA load_inline candidate checked twice, the second
#                                     # loading the first's kept build; beside it the same without namespaces (rebuilt)
#   bash tools/gpu_owed.sh wait       # bench/device_wait_bench.py: CPU a dozen processes burn waiting on one GPU,
#                                     # spinning and asleep; a timed call's figures in both (worker/host/device_wait.py)
#   bash tools/gpu_owed.sh batch KB MANIFEST [SIDES]  # bench/batch_bench.py: judged per hour on generations not
#            # judged before (bench/data/generations_judged.jsonl); SIDES batch (the default), loop, or batch,loop
#            # (a window each, in one call: BUDGET_S=SECONDS, 480 by default, must then fit twice in a call); a
#            # side needs several candidates' time (about 90 s each on a GPU) to pass its start-up; TRACE=1: every
#            # judge's phases to trace.txt (read it with tools/trace_phases.py); GPUS=all: a host's every GPU
#            # (batch_bench --gpus), JOBS=N checks at once (12). A call brings back 8 files at most: one side with
#            # TRACE=1 writes 8 (batch,loop with TRACE=1 writes 9: the trace is lost), so write nothing else under
#            # $OUT. bench/batch_bounds.py reads what comes back.
set -uo pipefail
steps="smoke attacks timing numerics tune kernelbench rerun memory compare reward rebuild batch wait"
step=${1:?"usage: gpu_owed.sh STEP [args], STEP one of: $steps (the header of this script says what each runs)"}
[[ " $steps " == *" $step "* ]] || { echo "unknown step: $step (one of: $steps)" >&2; exit 2; }
OUT=${OUT:-gpu-out}/$step; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
{ date -u; git rev-parse HEAD 2>/dev/null || echo "commit unknown (no .git here)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'; } > "$OUT/env.txt"
pytest_v() { local limit=$1; shift; timeout "$limit" python3 -m pytest -v -p no:cacheprovider "$@"; }

case $step in
smoke)
  # a judge with private /dev/shm, IPC and network, a host with /dev read-only: does CUDA still work there?
  python3 -m kernel_mcp check problems/vector_add problems/vector_add/baseline.py --device cuda --json \
    > "$OUT/check.json" 2> "$OUT/check.err"; python3 -c 'import json,sys; r=json.load(open(sys.argv[1]));
print(r["verdict"], [f["code"] for f in r["findings"]])' "$OUT/check.json" | tee "$OUT/summary.txt"
  pytest_v 420 -m gpu -n 12 --ignore tests/test_gpu_profile.py --ignore tests/test_gpu_sanitize.py \
    > "$OUT/pytest_gpu.txt" 2>&1; tail -25 "$OUT/pytest_gpu.txt" ;;
attacks)
  pytest_v 330 -n 12 tests/test_attacks.py tests/test_cheats.py tests/test_fork_server.py \
    tests/test_caller_death.py tests/test_fault_storm.py tests/test_batch.py tests/test_shared_truth.py \
    > "$OUT/pytest.txt" 2>&1; tail -25 "$OUT/pytest.txt"
  pytest_v 200 -n 4 tests/test_gpu_sanitize.py > "$OUT/pytest_sanitize.txt" 2>&1; tail -8 "$OUT/pytest_sanitize.txt" ;;
timing)  # then, on cuda (the device fixture), profile's unlisted size and the saved-LSE softmax
  pytest_v 400 -n 0 tests/test_gpu_profile.py > "$OUT/pytest.txt" 2>&1; tail -20 "$OUT/pytest.txt"
  pytest_v 150 -n 2 tests/test_random_shapes.py tests/test_honest_orders.py -k "near_the_benchmarks or saved_lse" \
    > "$OUT/pytest_cuda.txt" 2>&1; tail -6 "$OUT/pytest_cuda.txt" ;;
numerics)
  timeout 560 python3 bench/numerics_bench.py "$OUT/numerics.jsonl" --device cuda > "$OUT/log.txt" 2>&1
  tail -30 "$OUT/log.txt" ;;
tune)  # then the scripted model through the instruments (issue 37), on the same problem
  timeout 370 python3 -m kernel_mcp optimize problems/matmul_bf16 --agent tune --budget 300s --timing 4 \
    --device cuda > "$OUT/log.txt" 2>&1; tail -30 "$OUT/log.txt"; cp -r runs "$OUT/" 2>/dev/null
  timeout 190 python3 bench/model_agent_bench.py /tmp/kmcp-model-agent --problem problems/matmul_bf16 \
    --device cuda --timing 4 --budget 6 > "$OUT/model_agent.txt" 2>&1; tail -20 "$OUT/model_agent.txt" ;;
batch)
  kb=${2:?a KernelBench root (carried: name it in carry)}; manifest=${3:?a manifest of generations}
  side=${4:-batch}; bench=/tmp/kmcp-batch-bench  # its kernel stores are large: only the figures come back
  rm -rf "$bench"  # an earlier call's on a warm machine: its builds and memory records would carry over
  budget=${BUDGET_S:-480}  # a shorter window where a call also runs other steps
  sides=${side//,/ }; n=$(wc -w <<< "$sides")  # "batch,loop": both sides in one call, a window each
  # TRACE=1: every judge's phases (worker/trace.py) to trace.txt, to see where a check holds the device
  [[ ${TRACE:-0} == 1 ]] && export KERNEL_MCP_TRACE=$(realpath "$OUT")/trace.txt
  timeout $((n * budget + 80)) python3 bench/batch_bench.py "$bench" "$kb" "$manifest" --device cuda \
    --jobs "${JOBS:-12}" ${GPUS:+--gpus "$GPUS"} --limit 200 --budget-s "$budget" --sides "$side" \
    --skip bench/data/generations_judged.jsonl > "$OUT/log.txt" 2>&1
  tail -30 "$OUT/log.txt"; cp "$bench/summary.json" "$OUT/"
  for s in $sides; do cp "$bench/$s/results.jsonl" "$OUT/results-$s.jsonl" 2>/dev/null
    cp "$bench/$s/arrivals.json" "$OUT/arrivals-$s.json" 2>/dev/null; done
  cp "$bench/cache-batch/memory.json" "$OUT/" 2>/dev/null  # the needs the batch measured (needs.record_need)
  cp "$bench/batch/headers.json" "$OUT/" 2>/dev/null ;;
wait)  # issue 38: judges and hosts wait for the GPU asleep, and spin only inside a timed call
  pytest_v 100 -n 0 tests/test_device_wait.py > "$OUT/pytest.txt" 2>&1; tail -3 "$OUT/pytest.txt"
  timeout 200 python3 bench/device_wait_bench.py --procs 12 --seconds 10 > "$OUT/device_wait.json" \
    2> "$OUT/log.txt"; cat "$OUT/device_wait.json"; tail -5 "$OUT/log.txt" ;;
kernelbench)
  kb=${2:?a KernelBench root (carried: name it in carry)}; bench=/tmp/kmcp-kb-bench
  timeout 560 python3 bench/kernelbench_bench.py "$bench" --root "$kb" --levels 2 1 --jobs 8 --budget-s 480 \
    --skip bench/data/kernelbench_own_judged.jsonl > "$OUT/log.txt" 2>&1
  tail -15 "$OUT/log.txt"; cp "$bench"/kernelbench_own*.jsonl "$OUT/" ;;
compare)
  timeout 300 python3 bench/compare_bench.py --repeats 1 --out "$OUT/compare.json" > "$OUT/log.txt" 2>&1
  head -16 "$OUT/log.txt" ;;
reward)  # issue 38: rewards an hour, no secret in any reward, no process left behind
  timeout 500 python3 bench/reward_bench.py --rollouts 64 --concurrency 64 --device cuda --timed \
    > "$OUT/reward.json" 2> "$OUT/log.txt"; cat "$OUT/reward.json"; tail -5 "$OUT/log.txt" ;;
rebuild)  # issue 38: a kept load_inline build loaded, not built again (worker/isolation/kernel_cache.py)
  timeout 250 python3 bench/rebuild_bench.py --device cuda --rounds 3 > "$OUT/shared_path.jsonl" 2>&1
  KERNEL_MCP_PID_NAMESPACE=0 timeout 250 python3 bench/rebuild_bench.py --device cuda --rounds 3 \
    > "$OUT/no_namespace.jsonl" 2>&1; tail -1 "$OUT/shared_path.jsonl" "$OUT/no_namespace.jsonl" ;;
rerun)  # a check whose judge finds no room beside others runs again alone (each check waits 5 s per input made)
  pytest_v 400 -n 0 tests/test_gpu.py -k no_room > "$OUT/pytest.txt" 2>&1; tail -6 "$OUT/pytest.txt" ;;
memory)  # the judge's allocated and reserved memory at each phase (worker/trace.py) against the check's estimated need
  kb=${2:?a KernelBench root (carried: name it in carry)}
  for name in ${3:-4_Matrix_vector_multiplication_ 20_LeakyReLU}; do
    KERNEL_MCP_TRACE="$OUT/$name.trace" timeout 280 python3 bench/kernelbench_bench.py "/tmp/kmcp-mem-$name" \
      --root "$kb" --levels 1 --only "$name" --jobs 1 --budget-s 10 > "$OUT/$name.log" 2>&1
    cp /tmp/kmcp-mem-"$name"/kernelbench_own*.jsonl "$OUT/$name.jsonl" 2>/dev/null; tail -3 "$OUT/$name.log"
  done ;;
*) echo "unknown step: $step" >&2; exit 2 ;;
esac
