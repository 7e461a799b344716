#!/usr/bin/env bash
# gpu-check.sh: the WebGPU backend on a machine with a real GPU, unattended, in under 8
# minutes: build (npm ci / npm install when node_modules is missing, then npm run build),
# list the adapters, pick the first WebGPU device that is not a software rasterizer
# (lavapipe, llvmpipe, SwiftShader, WARP), run `backend-ops test` and `backend-ops perf -o
# MUL_MAT` on it, and print a summary. Without such a device it says so and exits 0 after
# listing what there is (WEFT_GPU_CHECK_ALLOW_CPU=1 runs the checks on the software adapter
# instead, for trying the script out).
#
#   bash scripts/gpu-check.sh [--skip-build]
#
# Time limits per step (seconds; environment overrides): GPU_CHECK_BUILD_S=300,
# GPU_CHECK_TEST_S=200, GPU_CHECK_PERF_S=100. Full logs are kept under $GPU_CHECK_LOGS
# (default: a fresh temporary folder). GPU_CHECK_TEST_ARGS adds arguments to the test run
# (e.g. "-o OUT_PROD" for a short try on a software adapter).
set -u
cd "$(dirname "$0")/.."
START=$(date +%s)
BUILD_S=${GPU_CHECK_BUILD_S:-300}
TEST_S=${GPU_CHECK_TEST_S:-200}
PERF_S=${GPU_CHECK_PERF_S:-100}
LOGS=${GPU_CHECK_LOGS:-$(mktemp -d -t weft-gpu-check.XXXXXX)}
mkdir -p "$LOGS"
# wgpu's Vulkan and GL drivers want a runtime dir; containers often lack one.
if [ -z "${XDG_RUNTIME_DIR:-}" ]; then
  export XDG_RUNTIME_DIR="/tmp/weft-xdg-$(id -u)"
  mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
fi
elapsed() { echo $(( $(date +%s) - START )); }
say() { echo "[gpu-check $(elapsed)s] $*"; }

say "logs in $LOGS"
say "host: $(uname -srm), $(nproc) cores, node $(node --version 2>/dev/null || echo missing)"
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | sed 's/^/  nvidia-smi: /'
fi
ICDS=$(ls /usr/share/vulkan/icd.d/ /etc/vulkan/icd.d/ 2>/dev/null | grep -i json | tr '\n' ' ')
say "Vulkan ICDs: ${ICDS:-none found}"

BUILD=skipped
if [ "${1:-}" != "--skip-build" ]; then
  if [ ! -e node_modules/.bin/napi ]; then
    say "installing npm dependencies"
    if ! timeout 180 npm ci >"$LOGS/npm-install.log" 2>&1; then
      timeout 180 npm install >>"$LOGS/npm-install.log" 2>&1 || { say "npm install failed:"; tail -20 "$LOGS/npm-install.log"; exit 1; }
    fi
  fi
  say "building the addon (npm run build, at most ${BUILD_S}s)"
  if timeout "$BUILD_S" npm run build >"$LOGS/build.log" 2>&1; then
    BUILD=ok
  else
    say "build failed or timed out:"; tail -30 "$LOGS/build.log"; exit 1
  fi
  say "build done"
fi

# The adapters, and the device to test: the first WebGPU device on hardware.
PICK=$(node -e '
const { Backend } = require("./index.js");
const soft = /llvmpipe|lavapipe|swiftshader|warp|software|cpu/i;
let pick = "";
for (const d of Backend.devices()) {
  const p = d.properties || {};
  const hw = d.type !== "cpu" && d.name.startsWith("WebGPU") && !soft.test(`${p.device_type} ${p.adapter} ${d.description}`);
  console.error(`  ${d.name.padEnd(8)} ${d.type.padEnd(4)} ${d.description}` +
    (p.driver ? ` | driver ${p.driver}` : "") + (p.timestamp_query ? ` | timestamps ${p.timestamp_query}` : "") +
    (p.shader_f16 ? ` | f16 ${p.shader_f16}` : "") + (hw ? "  <- hardware" : ""));
  if (hw && !pick) pick = d.name;
  if (!pick && process.env.WEFT_GPU_CHECK_ALLOW_CPU === "1" && d.name.startsWith("WebGPU")) pick = d.name;
}
console.log(pick);
' 2>"$LOGS/adapters.txt")
say "adapters:"; cat "$LOGS/adapters.txt"
if [ -z "$PICK" ]; then
  say "no hardware WebGPU adapter here (only software or none): nothing to check on a GPU"
  echo "SUMMARY: build=$BUILD device=none"
  exit 0
fi
say "testing on $PICK"

say "backend-ops test -b $PICK (at most ${TEST_S}s)"
# shellcheck disable=SC2086 # GPU_CHECK_TEST_ARGS is a list of words
timeout "$TEST_S" npm run backend-ops -- test -b "$PICK" --no-progress ${GPU_CHECK_TEST_ARGS:-} >"$LOGS/test.log" 2>&1
TEST_RC=$?
[ $TEST_RC -eq 124 ] && say "test timed out after ${TEST_S}s (partial results below)"
say "backend-ops perf -b $PICK -o MUL_MAT (at most ${PERF_S}s)"
timeout "$PERF_S" npm run backend-ops -- perf -b "$PICK" -o MUL_MAT --min-time 0.25 --no-progress >"$LOGS/perf.log" 2>&1
PERF_RC=$?
[ $PERF_RC -eq 124 ] && say "perf timed out after ${PERF_S}s (partial results below)"

echo
echo "== test: failures (first 40) and tallies"
grep -E "FAIL|ERROR|error" "$LOGS/test.log" | grep -v "^  Backend .*: FAIL" | head -40
grep -E "tests passed|backends passed|^\s+(ok|fail|not supported|skipped)" "$LOGS/test.log" | tail -12
tail -4 "$LOGS/test.log"
echo
echo "== perf -o MUL_MAT"
grep -E "MUL_MAT" "$LOGS/perf.log" | sed 's/\x1b\[[0-9;]*m//g'
tail -3 "$LOGS/perf.log" | sed 's/\x1b\[[0-9;]*m//g'
echo
PASSED=$(grep -Eo "[0-9]+/[0-9]+ tests passed" "$LOGS/test.log" | tail -1)
echo "SUMMARY: build=$BUILD device=$PICK test_rc=$TEST_RC (${PASSED:-no tally}) perf_rc=$PERF_RC perf_lines=$(grep -c 'runs -' "$LOGS/perf.log") elapsed=$(elapsed)s logs=$LOGS"
