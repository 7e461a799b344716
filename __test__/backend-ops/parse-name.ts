// Case names back into cases: `OP(k=v,...)` as test-backend-ops prints it (format.ts) parsed
// into the parameters of the case struct that printed it, so that any name builds its case,
// not only the names of the eval list (conformance mode replays files by name alone).
//
// One registry below lists every case struct: the OP names it prints (unary ops print their
// unary name), its parameters in VARS_TO_STR order with the kind of each (int, float, bool,
// type, 4-array ...), and how to construct it from them. Case structs that print the same OP
// name (UPSCALE and its ext form, ADD of test_bin_bcast and of test_example) differ in their
// parameter keys, which pick the entry. A parsed case must print the very name it came from.

import type { GgmlType, PoolOp, SortOrder } from 'weft-ml';
import { TestFlashAttnExt } from './cases/attention.js';
import { TestAdd1, TestBinBcast, TestScale, type BinOp } from './cases/binary.js';
import { TestConvTranspose1d, TestIm2col, TestPool2d, TestUpscale, TestUpscaleExt } from './cases/conv.js';
import { TestAcc, TestCont, TestCpy, TestDup, TestSet } from './cases/copy.js';
import { TestExample } from './cases/example.js';
import { TestArange, TestTimestepEmbedding } from './cases/generate.js';
import { TestConcat, TestPad, TestRepeat } from './cases/layout.js';
import { TestFalcon, TestLlama } from './cases/llm.js';
import { TestMulMat, TestMulMatId, TestOutProd } from './cases/matmul.js';
import { TestGroupNorm, TestNorm, TestRmsNorm } from './cases/norm.js';
import { TestSum, TestSumRows } from './cases/reduce.js';
import { TestRope } from './cases/rope.js';
import { TestArgmax, TestArgsort, TestCountEqual, TestGetRows } from './cases/rows.js';
import { TestDiagMaskInf, TestSoftMax } from './cases/softmax.js';
import { TestRwkvWkv, TestSsmConv, TestSsmScan } from './cases/ssm.js';
import { TestCrossEntropyLoss, TestOptStepAdamw } from './cases/training.js';
import { TestClamp, TestCos, TestLeakyRelu, TestLog, TestSin, TestSqr, TestSqrt, TestUnary, UNARY_OPS } from './cases/unary.js';
import { isGgmlType } from './ggml-types.js';
import type { Ne4, TestCase } from './test-case.js';

/** A name that does not parse, or names no case of this suite. */
export class CaseNameError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CaseNameError';
  }
}

// ---- the grammar: OP(k=v,...), v a scalar token or a [..] list of values (nested allowed) ----

/** A parsed value: a scalar token as printed ('16', '0.100000', 'q4_0', 'avg') or a list. */
export type RawValue = string | readonly RawValue[];

export interface ParsedName {
  op: string;
  /** The parameters in the order the name lists them. */
  vars: [string, RawValue][];
}

/** Split `OP(k=v,...)` into the op and its `k=v` pairs (values not interpreted yet). */
export function parseName(name: string): ParsedName {
  const m = /^([A-Z0-9_]+)\((.*)\)$/s.exec(name);
  if (!m) throw new CaseNameError(`'${name}' is not OP(k=v,...)`);
  const [, op, body] = m as unknown as [string, string, string];
  const vars: [string, RawValue][] = [];
  let i = 0;
  const fail = (what: string): never => {
    throw new CaseNameError(`${name}: ${what} at column ${op.length + 1 + i}`);
  };
  const value = (): RawValue => {
    if (body[i] === '[') {
      i++;
      const items: RawValue[] = [];
      if (body[i] === ']') fail('empty list');
      for (;;) {
        items.push(value());
        if (body[i] === ',') i++;
        else if (body[i] === ']') break;
        else fail(`expected ',' or ']'`);
      }
      i++;
      return items;
    }
    const start = i;
    while (i < body.length && !',[]='.includes(body[i]!)) i++;
    if (i === start) fail('missing value');
    return body.slice(start, i);
  };
  while (i < body.length) {
    const eq = body.indexOf('=', i);
    if (eq < 0) fail(`expected k=v`);
    const key = body.slice(i, eq);
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) fail(`bad parameter name '${key}'`);
    if (vars.some(([k]) => k === key)) fail(`parameter '${key}' repeated`);
    i = eq + 1;
    vars.push([key, value()]);
    if (i < body.length) {
      if (body[i] !== ',') fail(`expected ','`);
      i++;
      if (i === body.length) fail('trailing comma');
    }
  }
  return { op, vars };
}

// ---- value kinds: how a parameter prints, and the JS value a case constructor takes ----

interface KindTypes {
  /** std::to_string of an integer. */
  int: number;
  /** std::to_string of a float: "%f". */
  float: number;
  /** A bool: 0 / 1. */
  bool: boolean;
  /** ggml_type_name. */
  type: GgmlType;
  /** std::array<int64_t, 4>: [a,b,c,d]. */
  ne4: Ne4;
  /** std::array<int64_t, 2>. */
  pair: readonly [number, number];
  /** ggml_op_pool: 'avg' / 'max'. */
  pool: PoolOp;
  /** ggml_sort_order: printed as its enum value (0 asc, 1 desc). */
  order: SortOrder;
  /** test_dup's permute: printed only when it is not [0,0,0,0]. */
  'ne4?': Ne4 | undefined;
}
type Kind = keyof KindTypes;
type Schema = Readonly<Record<string, Kind>>;
type Args<S extends Schema> = { -readonly [K in keyof S]: KindTypes[S[K]] };

const INT = /^-?\d+$/;
const FLOAT = /^-?(\d+\.\d+|inf|nan)$/;

function ints(v: RawValue, n: number, what: string): number[] {
  if (typeof v === 'string' || v.length !== n || v.some((x) => typeof x !== 'string' || !INT.test(x))) {
    throw new CaseNameError(`${what} must be a list of ${n} integers`);
  }
  return (v as string[]).map(Number);
}

/** Turn a raw value into the kind a parameter has; throws saying what was expected. */
function convert(kind: Kind, v: RawValue, key: string): KindTypes[Kind] {
  const what = `${key}=${show(v)}`;
  const scalar = (re: RegExp, expected: string): string => {
    if (typeof v !== 'string' || !re.test(v)) throw new CaseNameError(`${what}: expected ${expected}`);
    return v;
  };
  switch (kind) {
    case 'int':
      return Number(scalar(INT, 'an integer'));
    case 'float': {
      const s = scalar(FLOAT, 'a float printed as %f (e.g. 0.100000)');
      return s === 'nan' || s === '-nan' ? NaN : s.endsWith('inf') ? (s[0] === '-' ? -Infinity : Infinity) : Number(s);
    }
    case 'bool':
      return scalar(/^[01]$/, 'a bool (0 or 1)') === '1';
    case 'type': {
      const s = scalar(/^[a-z0-9_A-Z]+$/, 'a ggml type name');
      if (!isGgmlType(s)) throw new CaseNameError(`${what}: unknown ggml type '${s}'`);
      return s;
    }
    case 'ne4':
    case 'ne4?':
      return ints(v, 4, what) as unknown as Ne4;
    case 'pair':
      return ints(v, 2, what) as unknown as readonly [number, number];
    case 'pool':
      return scalar(/^(avg|max)$/, 'a pool op (avg or max)') as PoolOp;
    case 'order':
      return scalar(/^[01]$/, 'a sort order (0 asc, 1 desc)') === '0' ? 'asc' : 'desc';
  }
}

function show(v: RawValue): string {
  return typeof v === 'string' ? v : `[${v.map(show).join(',')}]`;
}

// ---- the registry ----

export interface CaseEntry {
  /** The OP names (ggml_op_desc of the output) this case struct prints. */
  readonly ops: readonly string[];
  /** Its parameter keys in VARS_TO_STR order; keys whose kind ends in '?' may be absent. */
  readonly schema: Schema;
  /** Construct the case from the parsed op and parameters. */
  make(op: string, args: Record<string, unknown>): TestCase;
}

function entry<S extends Schema>(ops: string | readonly string[], schema: S, make: (a: Args<S>, op: string) => TestCase): CaseEntry {
  return { ops: typeof ops === 'string' ? [ops] : ops, schema, make: (op, a) => make(a as Args<S>, op) };
}

const typeNe = { type: 'type', ne: 'ne4' } as const;
const typeNeA = { type: 'type', ne_a: 'ne4' } as const;

/** Every case struct of the suite (cases/*.ts), by the OP names it prints. */
export const CASE_REGISTRY: readonly CaseEntry[] = [
  entry(UNARY_OPS, { ...typeNeA, v: 'int' }, (a, op) => new TestUnary(op as (typeof UNARY_OPS)[number], a.type, a.ne_a, a.v)),
  entry('GET_ROWS', { type: 'type', n: 'int', m: 'int', r: 'int', b: 'int', v: 'bool' }, (a) => new TestGetRows(a.type, a.n, a.m, a.r, a.b, a.v)),
  entry(
    'POOL_2D',
    { pool_type: 'pool', type_input: 'type', ne_input: 'ne4', k0: 'int', k1: 'int', s0: 'int', s1: 'int', p0: 'int', p1: 'int' },
    (a) => new TestPool2d(a.pool_type, a.type_input, a.ne_input, a.k0, a.k1, a.s0, a.s1, a.p0, a.p1),
  ),
  entry(
    'IM2COL',
    {
      type_input: 'type', type_kernel: 'type', dst_type: 'type', ne_input: 'ne4', ne_kernel: 'ne4',
      s0: 'int', s1: 'int', p0: 'int', p1: 'int', d0: 'int', d1: 'int', is_2D: 'bool',
    },
    (a) => new TestIm2col(a.type_input, a.type_kernel, a.dst_type, a.ne_input, a.ne_kernel, a.s0, a.s1, a.p0, a.p1, a.d0, a.d1, a.is_2D),
  ),
  entry(
    'CONV_TRANSPOSE_1D',
    { ne_input: 'ne4', ne_kernel: 'ne4', s0: 'int', p0: 'int', d0: 'int' },
    (a) => new TestConvTranspose1d(a.ne_input, a.ne_kernel, a.s0, a.p0, a.d0),
  ),
  entry('ARGMAX', typeNe, (a) => new TestArgmax(a.type, a.ne)),
  entry('COUNT_EQUAL', typeNe, (a) => new TestCountEqual(a.type, a.ne)),
  entry('REPEAT', { ...typeNe, nr: 'ne4' }, (a) => new TestRepeat(a.type, a.ne, a.nr)),
  entry('DUP', { ...typeNe, permute: 'ne4?' }, (a) => new TestDup(a.type, a.ne, a.permute)),
  entry('SET', { type_src: 'type', type_dst: 'type', ne: 'ne4', dim: 'int' }, (a) => new TestSet(a.type_src, a.type_dst, a.ne, a.dim)),
  entry('CPY', { type_src: 'type', type_dst: 'type', ne: 'ne4', permute: 'ne4' }, (a) => new TestCpy(a.type_src, a.type_dst, a.ne, a.permute)),
  entry('CONT', typeNe, (a) => new TestCont(a.type, a.ne)),
  entry(['ADD', 'MUL', 'DIV'], { ...typeNe, nr: 'ne4' }, (a, op) => new TestBinBcast(op as BinOp, a.type, a.ne, a.nr)),
  entry('ADD', typeNe, (a) => new TestExample(a.type, a.ne)),
  entry('ADD1', typeNe, (a) => new TestAdd1(a.type, a.ne)),
  entry('SCALE', { ...typeNe, scale: 'float' }, (a) => new TestScale(a.type, a.ne, a.scale)),
  entry('NORM', { ...typeNe, eps: 'float' }, (a) => new TestNorm(a.type, a.ne, a.eps)),
  entry('RMS_NORM', { ...typeNe, eps: 'float' }, (a) => new TestRmsNorm(a.type, a.ne, a.eps)),
  entry('SSM_CONV', { type: 'type', ne_a: 'ne4', ne_b: 'ne4' }, (a) => new TestSsmConv(a.type, a.ne_a, a.ne_b)),
  entry(
    'SSM_SCAN',
    { type: 'type', d_state: 'int', d_inner: 'int', n_seq_tokens: 'int', n_seqs: 'int' },
    (a) => new TestSsmScan(a.type, a.d_state, a.d_inner, a.n_seq_tokens, a.n_seqs),
  ),
  entry(
    'RWKV_WKV',
    { type: 'type', head_count: 'int', head_size: 'int', n_seq_tokens: 'int', n_seqs: 'int' },
    (a) => new TestRwkvWkv(a.type, a.head_count, a.head_size, a.n_seq_tokens, a.n_seqs),
  ),
  entry(
    'MUL_MAT',
    { type_a: 'type', type_b: 'type', m: 'int', n: 'int', k: 'int', bs: 'pair', nr: 'pair', per: 'ne4' },
    (a) => new TestMulMat(a.type_a, a.type_b, a.m, a.n, a.k, a.bs, a.nr, a.per),
  ),
  entry(
    'MUL_MAT_ID',
    { type_a: 'type', type_b: 'type', n_mats: 'int', n_used: 'int', b: 'bool', m: 'int', n: 'int', k: 'int' },
    (a) => new TestMulMatId(a.type_a, a.type_b, a.n_mats, a.n_used, a.b, a.m, a.n, a.k),
  ),
  entry(
    'OUT_PROD',
    { type_a: 'type', type_b: 'type', m: 'int', n: 'int', k: 'int', bs: 'pair', trans_b: 'bool' },
    (a) => new TestOutProd(a.type_a, a.type_b, a.m, a.n, a.k, a.bs, a.trans_b),
  ),
  entry('SQR', typeNe, (a) => new TestSqr(a.type, a.ne)),
  entry('SQRT', typeNe, (a) => new TestSqrt(a.type, a.ne)),
  entry('LOG', typeNe, (a) => new TestLog(a.type, a.ne)),
  entry('SIN', typeNe, (a) => new TestSin(a.type, a.ne)),
  entry('COS', typeNe, (a) => new TestCos(a.type, a.ne)),
  entry('CLAMP', { ...typeNe, min: 'float', max: 'float' }, (a) => new TestClamp(a.type, a.ne, a.min, a.max)),
  entry('DIAG_MASK_INF', { ...typeNe, n_past: 'int' }, (a) => new TestDiagMaskInf(a.type, a.ne, a.n_past)),
  entry(
    'SOFT_MAX',
    { ...typeNe, mask: 'bool', scale: 'float', max_bias: 'float' },
    (a) => new TestSoftMax(a.type, a.ne, a.mask, a.scale, a.max_bias),
  ),
  entry(
    'ROPE',
    { ...typeNeA, n_dims: 'int', mode: 'int', n_ctx: 'int', fs: 'float', ef: 'float', af: 'float', ff: 'bool', v: 'int' },
    (a) => new TestRope(a.type, a.ne_a, a.n_dims, a.mode, a.n_ctx, a.fs, a.ef, a.af, a.ff, a.v),
  ),
  entry('CONCAT', { ...typeNeA, ne_b_d: 'int', dim: 'int', v: 'int' }, (a) => new TestConcat(a.type, a.ne_a, a.ne_b_d, a.dim, a.v)),
  entry('ARGSORT', { ...typeNe, order: 'order' }, (a) => new TestArgsort(a.type, a.ne, a.order)),
  entry('SUM', typeNe, (a) => new TestSum(a.type, a.ne)),
  entry('SUM_ROWS', typeNe, (a) => new TestSumRows(a.type, a.ne)),
  entry('UPSCALE', { ...typeNe, scale_factor: 'int', transpose: 'bool' }, (a) => new TestUpscale(a.type, a.ne, a.scale_factor, a.transpose)),
  entry('UPSCALE', { ...typeNe, ne_tgt: 'ne4' }, (a) => new TestUpscaleExt(a.type, a.ne, a.ne_tgt)),
  entry('GROUP_NORM', { ...typeNe, num_groups: 'int' }, (a) => new TestGroupNorm(a.type, a.ne, a.num_groups)),
  entry('ACC', { type: 'type', ne_a: 'ne4', ne_b: 'ne4' }, (a) => new TestAcc(a.type, a.ne_a, a.ne_b)),
  entry('PAD', { ...typeNeA, pad_0: 'int', pad_1: 'int' }, (a) => new TestPad(a.type, a.ne_a, a.pad_0, a.pad_1)),
  entry('ARANGE', { type: 'type', start: 'float', stop: 'float', step: 'float' }, (a) => new TestArange(a.type, a.start, a.stop, a.step)),
  entry(
    'TIMESTEP_EMBEDDING',
    { ...typeNeA, dim: 'int', max_period: 'int' },
    (a) => new TestTimestepEmbedding(a.type, a.ne_a, a.dim, a.max_period),
  ),
  entry('LEAKY_RELU', { ...typeNeA, negative_slope: 'float' }, (a) => new TestLeakyRelu(a.type, a.ne_a, a.negative_slope)),
  entry(
    'FLASH_ATTN_EXT',
    { hs: 'int', nh: 'int', kv: 'int', nb: 'int', mask: 'bool', max_bias: 'float', logit_softcap: 'float', type_KV: 'type' },
    (a) => new TestFlashAttnExt(a.hs, a.nh, a.kv, a.nb, a.mask, a.max_bias, a.logit_softcap, a.type_KV),
  ),
  entry('CROSS_ENTROPY_LOSS', typeNe, (a) => new TestCrossEntropyLoss(a.type, a.ne)),
  entry(
    'OPT_STEP_ADAMW',
    { ...typeNe, alpha: 'float', beta1: 'float', beta2: 'float', eps: 'float', wd: 'float' },
    (a) => new TestOptStepAdamw(a.type, a.ne, a.alpha, a.beta1, a.beta2, a.eps, a.wd),
  ),
  entry('LLAMA', { n_tokens: 'int' }, (a) => new TestLlama(a.n_tokens)),
  entry('FALCON', { n_tokens: 'int' }, (a) => new TestFalcon(a.n_tokens)),
];

const BY_OP = new Map<string, CaseEntry[]>();
for (const e of CASE_REGISTRY) for (const op of e.ops) BY_OP.set(op, [...(BY_OP.get(op) ?? []), e]);

/** Whether the parsed keys are the schema's, in order, optional ones possibly left out. */
function keysMatch(schema: Schema, keys: readonly string[]): boolean {
  let i = 0;
  for (const [k, kind] of Object.entries(schema)) {
    if (keys[i] === k) i++;
    else if (!kind.endsWith('?')) return false;
  }
  return i === keys.length;
}

const signature = (schema: Schema): string =>
  Object.entries(schema)
    .map(([k, kind]) => (kind.endsWith('?') ? `[${k}]` : k))
    .join(',');

/** The OP names the registry knows. */
export function knownOps(): string[] {
  return [...BY_OP.keys()];
}

/**
 * Build the case a name describes: parse it, pick the case struct by OP and parameter keys,
 * convert every value to its kind and construct the case. The case must print `name` again.
 */
export function caseFromName(name: string): TestCase {
  const { op, vars } = parseName(name);
  const entries = BY_OP.get(op);
  if (!entries) throw new CaseNameError(`${name}: no case struct prints OP ${op}`);
  const keys = vars.map(([k]) => k);
  const e = entries.find((x) => keysMatch(x.schema, keys));
  if (!e) {
    const want = entries.map((x) => `(${signature(x.schema)})`).join(' or ');
    throw new CaseNameError(`${name}: ${op} takes ${want}, the name has (${keys.join(',')})`);
  }
  const args: Record<string, unknown> = {};
  let tc: TestCase;
  try {
    for (const [k, v] of vars) args[k] = convert(e.schema[k]!, v, k);
    tc = e.make(op, args);
  } catch (err) {
    throw new CaseNameError(`${name}: ${(err as Error).message}`);
  }
  if (tc.name !== name) throw new CaseNameError(`${name}: not as ggml prints it; the case prints ${tc.name}`);
  return tc;
}
