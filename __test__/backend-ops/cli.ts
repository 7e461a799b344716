// weft-backend-ops: test-backend-ops for weft.
//
//   npm run backend-ops -- [test|grad|perf|support|conformance] [-o OP] [-b BACKEND] [-p SUBSTRING] [--dir DIR]
//
// test (default): every non-CPU backend against the CPU, node by node (NMSE, sentinels)
// grad: backward-pass gradients against finite differences, on every backend incl. CPU
// perf: us/run and GFLOP/s or GB/s of the perf list
// support: which backend supports which case; writes docs/ops.md (unfiltered runs)
// conformance (alias ref): ggml's own outputs (reference files, by default shared/ggml-reference/eval)
//   replayed on every backend incl. CPU, each case built from the name in its file

import { resolve } from 'node:path';
import { checkoutRoot } from './paths.js';
import { DEFAULT_SEED } from './rng.js';
import { quietGpuDrivers, run, type RunOptions } from './runner.js';
import type { Mode } from './test-case.js';

const USAGE = `Usage: weft-backend-ops [mode] [-o op] [-b backend] [-p params]
    valid modes:
      - test (default, compare with CPU backend for correctness)
      - grad (compare gradients from backpropagation with method of finite differences)
      - perf (performance evaluation)
      - support (which backend supports which case; writes docs/ops.md)
      - conformance (alias: ref; replay reference files of ggml's outputs on every backend incl. CPU:
             --dir DIR, default ../shared/ggml-reference/eval of the checkout or WEFT_GGML_REFERENCE)
    op names for -o are as given by ggml_op_desc() (e.g. ADD, MUL_MAT, etc)
    -p SUBSTRING     only cases whose parameters contain SUBSTRING (e.g. -p type_a=q4_0)
    --min-time S     perf: run each case at least S seconds (default 1)
    --seed N         PRNG seed for the inputs (default ${DEFAULT_SEED}, or WEFT_BACKEND_OPS_SEED)
    --llm            also run the LLAMA / FALCON model-block cases ggml keeps disabled
    --ops-md FILE    support: where to write the matrix (default docs/ops.md of a checkout; 'none': don't)
    --dir DIR        conformance: the folder of reference files (GGUF, shared/ggml-reference/README.md)
    --no-progress    no progress counter on stderr`;

/** docs/ops.md of the weft checkout this file is in; null in an installed package. */
function defaultOpsMd(): string | null {
  const root = checkoutRoot();
  return root === null ? null : resolve(root, 'docs/ops.md');
}

function parse(argv: string[]): (RunOptions & { quiet: boolean }) | null {
  const envSeed = process.env.WEFT_BACKEND_OPS_SEED;
  const o = {
    mode: 'test' as Mode,
    op: null as string | null,
    backend: null as string | null,
    params: null as string | null,
    minSeconds: 1,
    seed: envSeed ? Number(envSeed) : DEFAULT_SEED,
    llm: false,
    opsMd: defaultOpsMd(),
    dir: null as string | null,
    out: (line: string) => void process.stdout.write(line + '\n'),
    quiet: false,
  };
  let opsMdGiven = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const value = (): string | null => (i + 1 < argv.length ? argv[++i]! : null);
    if (a === 'test' || a === 'grad' || a === 'perf' || a === 'support' || a === 'conformance') o.mode = a;
    else if (a === 'ref') o.mode = 'conformance';
    else if (a === '-o' || a === '-b' || a === '-p' || a === '--min-time' || a === '--seed' || a === '--ops-md' || a === '--dir') {
      const v = value();
      if (v === null) return null;
      if (a === '-o') o.op = v;
      else if (a === '-b') o.backend = v;
      else if (a === '-p') o.params = v;
      else if (a === '--min-time') o.minSeconds = Number(v);
      else if (a === '--seed') o.seed = Number(v);
      else if (a === '--dir') o.dir = resolve(v);
      else {
        o.opsMd = v === 'none' ? null : resolve(v);
        opsMdGiven = true;
      }
    } else if (a === '--llm') o.llm = true;
    else if (a === '--no-progress') o.quiet = true;
    else return null;
  }
  if (!Number.isFinite(o.minSeconds) || !Number.isInteger(o.seed)) return null;
  // the matrix in docs/ is the whole eval list on every device: a filtered run only prints
  if (!opsMdGiven && (o.op !== null || o.params !== null || o.backend !== null || o.llm)) o.opsMd = null;
  return o;
}

/** A counter on stderr: rewritten in place on a terminal, a line every 10% otherwise. */
function progress(): NonNullable<RunOptions['progress']> {
  const tty = !!process.stderr.isTTY;
  let lastPct = -1;
  const started = performance.now();
  return (done, total, label) => {
    const secs = ((performance.now() - started) / 1000).toFixed(1);
    if (tty) {
      process.stderr.write(done < total ? `\r\x1b[K[${done + 1}/${total}] ${label.slice(0, 100)}` : '\r\x1b[K');
      return;
    }
    const pct = total ? Math.floor((done * 10) / total) : 10;
    if (pct !== lastPct) {
      lastPct = pct;
      process.stderr.write(`progress: ${done}/${total} cases (${secs} s)\n`);
    }
  };
}

async function main(): Promise<number> {
  const o = parse(process.argv.slice(2));
  if (!o) {
    process.stdout.write(USAGE + '\n');
    return 1;
  }
  if (!o.quiet) {
    const p = progress();
    const tty = !!process.stderr.isTTY;
    o.progress = p;
    // keep the counter off the lines stdout prints (one terminal shows both)
    const print = o.out;
    o.out = tty ? (line) => (process.stderr.write('\r\x1b[K'), print(line)) : print;
  }
  quietGpuDrivers();
  const started = performance.now();
  const ok = await run(o);
  process.stderr.write(`backend-ops ${o.mode}: ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
  return ok ? 0 : 1;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    process.stderr.write(`${(e as Error).stack ?? String(e)}\n`);
    process.exitCode = 1;
  },
);
