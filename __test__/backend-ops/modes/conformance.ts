// Conformance mode (weft's addition): replay reference files, each a GGUF file holding a
// case's name, its inputs exactly as ggml initialized them and the output ggml's CPU backend
// computed from them (format: shared/ggml-reference/README.md), and compare a backend's
// output with ggml's. The case is built from its name alone (parse-name.ts), so any folder of
// such files works, cases outside the eval list included.
//
// Per file: build the named case; the k-th tensor with op NONE that is not a view gets
// input.k (name, type and shape checked); compute; compare `out` with `output`: NaN fails, an
// infinity (or +-FLT_MAX) must be matched by one of the same sign at the same index and is
// left out of the NMSE, which must be <= case.max_nmse_err; integer outputs must be equal.
// A file that is not GGUF, lacks a key or does not fit its case fails with the reason.

import { existsSync, readdirSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { Backend, Context, Gguf, type GgmlType, type GgufTensorInfo, type Tensor } from 'weft-ml';
import { fixed, pad } from '../format.js';
import { caseFromName } from '../parse-name.js';
import { packageRoot } from '../paths.js';
import { isinfOrMax, signbit, tensorToFloat } from '../tensor-data.js';
import { buildCase, failText, okText, runCase, type CaseLabel, type CaseResult, type Status } from './result.js';
import { describeUnsupported, firstUnsupported, testContext } from './test.js';


/**
 * A folder of reference files. A folder with no .gguf file of its own but an `eval/` folder
 * (the ggml-reference folder itself) stands for its `eval/`.
 */
export function resolveReferenceDir(dir: string): string {
  const sub = resolve(dir, 'eval');
  if (existsSync(dir) && existsSync(sub) && statSync(sub).isDirectory() && !readdirSync(dir).some((f) => f.endsWith('.gguf'))) return sub;
  return resolve(dir);
}

/** The default folder: $WEFT_GGML_REFERENCE, else ../shared/ggml-reference/eval from the repo root. */
export function conformanceDir(): string {
  return resolveReferenceDir(process.env.WEFT_GGML_REFERENCE ?? resolve(packageRoot(), '../shared/ggml-reference/eval'));
}

/** One file of a conformance folder: its case name (the file name when unreadable) and op. */
export interface ReferenceFile extends CaseLabel {
  readonly file: string;
  readonly path: string;
}

/** The op of `OP(...)`, or '' when `name` is not of that form. */
function opOf(name: string): string {
  return /^([A-Z0-9_]+)\(/.exec(name)?.[1] ?? '';
}

/**
 * Every file of `dir` (sorted by name; hidden files and READMEs left out), labelled with the
 * case.name it holds. Files that cannot be read are kept, labelled by their file name, so
 * that replaying them reports why.
 */
export function listReferenceFiles(dir: string): ReferenceFile[] {
  const files = readdirSync(dir)
    .filter((f) => !f.startsWith('.') && !/^readme/i.test(f) && statSync(resolve(dir, f)).isFile())
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return files.map((file) => {
    const path = resolve(dir, file);
    let name = file;
    try {
      const g = Gguf.open(path);
      try {
        const n = g.get('case.name');
        if (typeof n === 'string') name = n;
      } finally {
        g.dispose();
      }
    } catch {
      // reported when the file is replayed
    }
    return { file, path, name, op: opOf(name) };
  });
}

/** -o / -p: files whose case's op is `op` and whose name contains `params`. */
export function selectFiles(files: readonly ReferenceFile[], op: string | null, params: string | null): ReferenceFile[] {
  return files.filter((f) => (op === null || f.op === op) && (params === null || f.name.includes(params)));
}

/** The README's comparison of float outputs; returns the failure message, or '' when they match. */
export function compareWithReference(got: Float32Array, want: Float32Array, maxErr: number): string {
  if (got.length !== want.length) return `${got.length} values, ggml has ${want.length}`;
  let num = 0;
  let den = 0;
  for (let i = 0; i < got.length; i++) {
    const x = got[i]!;
    const r = want[i]!;
    if (Number.isNaN(x) || Number.isNaN(r)) return `NaN at index ${i} (weft=${fixed(x)} ggml=${fixed(r)})`;
    if (isinfOrMax(x) || isinfOrMax(r)) {
      if (isinfOrMax(x) && isinfOrMax(r) && signbit(x) === signbit(r)) continue;
      return `inf mismatch at index ${i} (weft=${fixed(x)} ggml=${fixed(r)})`;
    }
    const d = x - r;
    num += d * d;
    den += x * x;
  }
  const err = den === 0 ? (num === 0 ? 0 : Infinity) : num / den;
  return err > maxErr ? `NMSE = ${fixed(err, 9)} > ${fixed(maxErr, 9)}` : '';
}

const INT_ARRAYS: Partial<Record<GgmlType, (b: ArrayBuffer) => ArrayLike<number | bigint>>> = {
  i8: (b) => new Int8Array(b),
  i16: (b) => new Int16Array(b),
  i32: (b) => new Int32Array(b),
  i64: (b) => new BigInt64Array(b),
};

/** Integer outputs: every value equal; returns the failure message, or ''. */
export function compareExact(type: GgmlType, got: Uint8Array, want: Uint8Array): string {
  const view = INT_ARRAYS[type]!;
  const a = view(got.slice().buffer);
  const b = view(want.slice().buffer);
  if (a.length !== b.length) return `${a.length} values, ggml has ${b.length}`;
  let first = -1;
  let n = 0;
  for (let i = 0; i < a.length; i++) {
    if (a[i] !== b[i]) {
      if (first < 0) first = i;
      n++;
    }
  }
  if (n === 0) return '';
  return `${n} of ${a.length} values differ, first at index ${first} (weft=${a[first]} ggml=${b[first]})`;
}

/** A metadata value the format requires, or an error naming the key. */
function required(g: Gguf, key: string, check: (v: unknown) => boolean, what: string): unknown {
  const v = g.get(key);
  if (v === null) throw new Error(`missing key ${key}`);
  if (!check(v)) throw new Error(`${key} is ${g.getType(key)}, expected ${what}`);
  return v;
}

const isStringArray = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === 'string');
const showNe = (ne: readonly number[]): string => `[${ne.join(',')}]`;

/** A GGUF tensor's values as f32, through a CPU tensor of its type (dequantizing if needed). */
function ggufToFloat(g: Gguf, info: GgufTensorInfo, cpu: Backend): Float32Array {
  const ctx = new Context({ memSize: Context.tensorOverhead() * 2, noAlloc: true });
  const t = ctx.newTensor(info.type, info.ne);
  const buf = cpu.allocCtxTensors(ctx)!;
  try {
    t.set(g.tensorData(info.name));
    return tensorToFloat(t);
  } finally {
    buf.dispose();
    ctx.dispose();
  }
}

/** The file's inputs against the case's leaves (op NONE, not a view); every mismatch described. */
function matchInputs(leaves: readonly Tensor[], infos: readonly GgufTensorInfo[], names: readonly string[]): string[] {
  const inputs = infos.filter((i) => i.name.startsWith('input.'));
  const problems: string[] = [];
  if (inputs.length !== leaves.length) {
    const list = (xs: readonly string[]): string => `(${xs.map((x) => `'${x}'`).join(', ')})`;
    problems.push(
      `the case has ${leaves.length} inputs ${list(leaves.map((t) => t.name))}, the file has ${inputs.length} ${list(inputs.map((i) => i.name))}`,
    );
  }
  if (names.length !== inputs.length) problems.push(`case.input_names has ${names.length} names for ${inputs.length} inputs`);
  leaves.forEach((t, k) => {
    const info = infos.find((i) => i.name === `input.${k}`);
    if (!info) {
      if (inputs.length === leaves.length) problems.push(`no tensor input.${k}`);
      return;
    }
    const diffs: string[] = [];
    if (names[k] !== undefined && names[k] !== t.name) diffs.push(`named '${names[k]}', the case's is '${t.name}'`);
    if (info.type !== t.type) diffs.push(`type ${info.type}, the case's is ${t.type}`);
    if (showNe(info.ne) !== showNe(t.ne)) diffs.push(`shape ${showNe(info.ne)}, the case's is ${showNe(t.ne)}`);
    if (diffs.length) problems.push(`input.${k} (the case's '${t.name}'): ${diffs.join(', ')}`);
  });
  return problems;
}

/** Replay one reference file on `backend`; `cpu` reads the stored output. Never throws. */
export async function evalConformance(f: ReferenceFile, backend: Backend, cpu: Backend): Promise<CaseResult> {
  return runCase(f, async (run) => {
    let g: Gguf;
    try {
      g = run.hold(Gguf.open(f.path));
    } catch (e) {
      throw new Error(`not a GGUF file (${(e as Error).message})`);
    }
    const name = required(g, 'case.name', (v) => typeof v === 'string', 'a string') as string;
    const maxErr = Number(required(g, 'case.max_nmse_err', (v) => typeof v === 'number' || typeof v === 'bigint', 'a number'));
    const inputNames = required(g, 'case.input_names', isStringArray, 'an array of strings') as string[];
    const infos = g.tensorInfos();
    const outInfo = infos.find((i) => i.name === 'output');
    if (!outInfo) throw new Error('no tensor output');

    const tc = caseFromName(name);
    const ctx = run.hold(testContext());
    const out = buildCase(tc, ctx, 'conformance');
    const op = g.get('case.op');
    if (op !== null && op !== tc.op) throw new Error(`case.op is ${String(op)}, the case's op is ${tc.op}`);

    const leaves = ctx.tensors().filter((t) => t.op === 'NONE' && !t.isView());
    const problems = matchInputs(leaves, infos, inputNames);
    if (outInfo.type !== out.type || showNe(outInfo.ne) !== showNe(out.ne)) {
      problems.push(`output is ${outInfo.type} ${showNe(outInfo.ne)}, the case's out is ${out.type} ${showNe(out.ne)}`);
    }
    const gf = ctx.newGraph();
    gf.buildForwardExpand(out);
    const graphOps = g.get('case.graph_ops');
    // ggml-reference lists the graph's nodes without the parameters (op NONE) ggml puts there
    const ops = gf.nodes().filter((t) => t.op !== 'NONE').map((t) => t.opDesc);
    if (isStringArray(graphOps) && graphOps.join() !== ops.join()) {
      problems.push(`graph ops ${graphOps.join(',')}, the case's are ${ops.join(',')}`);
    }
    if (problems.length) throw new Error(`the file does not fit the case: ${problems.join('; ')}`);

    const unsupported = firstUnsupported(backend, ctx);
    if (unsupported) {
      const why = describeUnsupported(backend, unsupported);
      return run.result('not supported', `not supported [${backend.name}] (${why})`, why);
    }

    if (!run.hold(backend.allocCtxTensors(ctx))) throw new Error(`failed to allocate tensors [${backend.name}]`);
    leaves.forEach((t, k) => t.set(g.tensorData(`input.${k}`)));
    await backend.compute(gf);

    let msg: string;
    if (INT_ARRAYS[out.type]) {
      if (!out.isContiguous()) throw new Error(`the case's ${out.type} output is not contiguous`);
      msg = compareExact(out.type, out.get(0, out.nbytes), g.tensorData('output'));
    } else {
      msg = compareWithReference(tensorToFloat(out), ggufToFloat(g, outInfo, cpu), maxErr);
    }
    if (msg) return run.result('fail', `[${tc.opDesc(out)}] ${msg} ${failText()}`, msg);
    return run.result('ok', okText(), '');
  });
}

/** Per op: passed, failed, not supported (not implemented and skipped counted there too). */
export interface OpCounts {
  passed: number;
  failed: number;
  notSupported: number;
}

export function countByOp(results: readonly CaseResult[]): Map<string, OpCounts> {
  const m = new Map<string, OpCounts>();
  const bump = (op: string, s: Status): void => {
    const c = m.get(op) ?? { passed: 0, failed: 0, notSupported: 0 };
    if (s === 'ok') c.passed++;
    else if (s === 'fail') c.failed++;
    else c.notSupported++;
    m.set(op, c);
  };
  for (const r of results) bump(r.op || '(unknown)', r.status);
  return m;
}

/** The closing line: "N passed, N failed, N skipped" (skipped: not supported). */
export function totalsLine(results: readonly CaseResult[]): string {
  let passed = 0;
  let failed = 0;
  for (const r of results) {
    if (r.status === 'ok') passed++;
    else if (r.status === 'fail') failed++;
  }
  return `${passed} passed, ${failed} failed, ${results.length - passed - failed} skipped`;
}

/** The per-op table, one line per op in first-seen order, then the totals. */
export function opTable(results: readonly CaseResult[]): string[] {
  const rows = [...countByOp(results)];
  const w = Math.max(5, ...rows.map(([op]) => op.length));
  const line = (op: string, a: number | string, b: number | string, c: number | string): string =>
    `  ${pad(op, w, true)}  ${pad(String(a), 6)}  ${pad(String(b), 6)}  ${pad(String(c), 13)}`;
  const sum = (k: keyof OpCounts): number => rows.reduce((s, [, c]) => s + c[k], 0);
  return [
    line('op', 'passed', 'failed', 'not supported'),
    ...rows.map(([op, c]) => line(op, c.passed, c.failed, c.notSupported)),
    line('total', sum('passed'), sum('failed'), sum('notSupported')),
  ];
}
