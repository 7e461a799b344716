// Test mode (test_case::eval): compute the case on a backend and on the CPU node by node and
// compare every node's result with NMSE, checking the sentinels for out-of-bounds writes.

import { Context, type Backend, type NodeComparison, type Tensor } from 'weft-ml';
import { fixed } from '../format.js';
import type { Rng } from '../rng.js';
import { isinfOrMax, nmse, signbit } from '../tensor-data.js';
import type { TestCase } from '../test-case.js';
import { buildCase, failText, okText, runCase, type CaseResult } from './result.js';

/** The first tensor of the context `backend` cannot compute, or null when it supports all. */
export function firstUnsupported(backend: Backend, ctx: Context): Tensor | null {
  for (const t of ctx.tensors()) if (!backend.supportsOp(t)) return t;
  return null;
}

/** How an unsupported tensor is named in reasons: its op and types. */
export function describeUnsupported(backend: Backend, t: Tensor): string {
  const types = [t.type, ...t.srcs.filter((s): s is Tensor => !!s).map((s) => s.type)].join(',');
  return `${backend.name} does not support ${t.opDesc} (${types})`;
}

/**
 * The comparison ggml's callback makes for one node: sentinels byte-identical, no NaN, infinities
 * (or +-FLT_MAX) matched by an infinity of the same sign, NMSE within the case's bound.
 * Returns the messages ggml prints for the node (empty when it is fine).
 */
export function compareNode(r: NodeComparison, maxErr: number, bn1: string, bn2: string): string[] {
  const f1 = r.a;
  const f2 = r.b;
  if (r.op === 'NONE') {
    // sentinels must be unchanged
    const u1 = new Uint32Array(f1.buffer, f1.byteOffset, f1.length);
    const u2 = new Uint32Array(f2.buffer, f2.byteOffset, f2.length);
    if (u1.length !== u2.length || u1.some((x, i) => x !== u2[i])) return [`sentinel mismatch: ${r.name} `];
  }
  if (f1.length !== f2.length) return [`[${r.opDesc}] size mismatch: ${bn1}=${f1.length} ${bn2}=${f2.length} `];
  for (let i = 0; i < f1.length; i++) {
    const a = f1[i]!;
    const b = f2[i]!;
    // check for nans
    if (Number.isNaN(a) || Number.isNaN(b)) {
      return [`[${r.opDesc}] NaN at index ${i} (${bn1}=${fixed(a)} ${bn2}=${fixed(b)}) `];
    }
    // check for infs: both must be inf of the same sign, or both must be finite
    if (isinfOrMax(a) || isinfOrMax(b)) {
      if (isinfOrMax(a) && isinfOrMax(b)) {
        if (signbit(a) !== signbit(b)) return [`[${r.opDesc}] inf sign mismatch: ${bn1}=${fixed(a)} ${bn2}=${fixed(b)} `];
      } else {
        return [`[${r.opDesc}] inf mismatch: ${bn1}=${fixed(a)} ${bn2}=${fixed(b)} `];
      }
    }
  }
  const err = nmse(f1, f2);
  if (err > maxErr) return [`[${r.opDesc}] NMSE = ${fixed(err, 9)} > ${fixed(maxErr, 9)} `];
  return [];
}

/** Context size test mode uses: 128 tensors and one default graph (as ggml). */
export function testContext(): Context {
  return new Context({ memSize: Context.tensorOverhead() * 128 + Context.graphOverhead(), noAlloc: true });
}

/** test_case::eval: `backend1` is checked against `backend2` (the CPU). */
export async function evalTest(tc: TestCase, backend1: Backend, backend2: Backend, rng: Rng): Promise<CaseResult> {
  return runCase(tc, async (run) => {
    const ctx = run.hold(testContext());
    const gf = ctx.newGraph();
    const out = buildCase(tc, ctx, 'test');

    // check if the backends support the ops
    let text = '';
    const reasons: string[] = [];
    for (const backend of [backend1, backend2]) {
      const t = firstUnsupported(backend, ctx);
      if (t) {
        text += `not supported [${backend.name}] `;
        reasons.push(describeUnsupported(backend, t));
      }
    }
    if (reasons.length > 0) return run.result('not supported', text, reasons.join('; '));

    tc.addSentinel(ctx); // post-graph sentinel

    const buf = run.hold(backend1.allocCtxTensors(ctx));
    if (!buf) return run.result('fail', `failed to allocate tensors [${backend1.name}] ${failText()}`, 'allocation failed');

    gf.buildForwardExpand(out);
    // add sentinels as graph nodes so that they are checked in the callback
    for (const s of tc.sentinels) gf.addNode(s);

    tc.initializeTensors(ctx, rng);

    const maxErr = tc.maxNmseErr();
    const messages: string[] = [];
    let cmpOk = true;
    try {
      const nodes = await backend1.compareGraph(backend2, gf);
      for (const n of nodes) messages.push(...compareNode(n, maxErr, backend1.name, backend2.name));
    } catch (e) {
      cmpOk = false;
      messages.push(`compare failed (${(e as Error).message}) `);
    }
    if (messages.length === 0 && cmpOk) return run.result('ok', okText(), '');
    return run.result('fail', messages.join('') + failText(), messages.join('').trim());
  });
}
