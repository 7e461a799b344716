// test-backend-ops under `npm test`: test mode on every non-CPU backend (each case against the
// CPU, node by node), grad mode on every backend, and conformance mode (ggml's own outputs,
// shared/ggml-reference/eval) on every backend; one node:test test per case (conformance: per
// file) and backend, grouped by op. Unsupported and not-implemented cases show as skipped
// with their reason; a failing case fails its own test with ggml's message. The whole eval
// list runs; the CLI (npm run backend-ops) runs the same cases.
//
// Grad mode checks each parameter's gradient by finite differences at up to 256 evenly spaced
// elements on the CPU and 64 elsewhere, where ggml checks every element (up to the case's
// grad_nmax): each element costs 2 or 4 forward computes, a device round trip each (~0.6 ms
// on lavapipe against ~0.05 ms on the CPU), and every element took grad mode on WebGPU0 past
// 15 minutes of CI's 30. The analytic gradient is still computed whole. WEFT_GRAD_FD_SAMPLES
// sets the limit for every backend ('all': ggml's check); `npm run backend-ops -- grad` checks
// all.

import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { Backend, type DeviceInfo } from '../../index.js';
import { hasAutodiff } from './capabilities.js';
import { setColor } from './format.js';
import { evalGrad } from './modes/grad.js';
import { conformanceDir, evalConformance, listReferenceFiles, selectFiles } from './modes/conformance.js';
import type { CaseLabel, CaseResult } from './modes/result.js';
import { evalTest } from './modes/test.js';
import { DEFAULT_SEED } from './rng.js';
import { caseRng, casesFor, initBackend, isCpu, quietGpuDrivers, selectCases } from './runner.js';

setColor(false);
quietGpuDrivers();

const seed = process.env.WEFT_BACKEND_OPS_SEED ? Number(process.env.WEFT_BACKEND_OPS_SEED) : DEFAULT_SEED;
const opFilter = process.env.WEFT_BACKEND_OPS_OP ?? null;
const cases = selectCases(casesFor('test', false), opFilter, null);
const devices = Backend.devices();
const cpuDevice = devices.find(isCpu)!;

const counts = { passed: 0, failed: 0, skipped: 0 };
let expectedRuns = 0;
/** The reference files conformance mode replays (none when the folder is absent). */
const refDir = conformanceDir();
const refFiles = existsSync(refDir) ? selectFiles(listReferenceFiles(refDir), opFilter, null) : [];
const fdEnv = process.env.WEFT_GRAD_FD_SAMPLES;
/** Elements per parameter that grad mode checks by finite differences on `dev`. */
function fdSamples(dev: DeviceInfo): number {
  if (fdEnv) return fdEnv === 'all' ? Infinity : Number(fdEnv);
  return isCpu(dev) ? 256 : 64;
}
const seconds: Record<string, number> = {};
const sizes: Record<string, number> = {};

/** Cases (or files) grouped by op, in list order. */
function byOp<T extends CaseLabel>(list: T[]): Map<string, T[]> {
  const m = new Map<string, T[]>();
  for (const tc of list) {
    const g = m.get(tc.op);
    if (g) g.push(tc);
    else m.set(tc.op, [tc]);
  }
  return m;
}

/** A case's result as a node:test outcome: skip with the reason, or fail with ggml's message. */
function report(t: { skip(msg?: string): void }, r: CaseResult, label: string): void {
  seconds[label] = (seconds[label] ?? 0) + r.seconds;
  if (r.status === 'ok') {
    counts.passed++;
    return;
  }
  if (r.status === 'fail') {
    counts.failed++;
    assert.fail(`${r.name}: ${r.text}`);
  }
  counts.skipped++;
  t.skip(r.status === 'skipped' ? r.reason : `${r.status}: ${r.reason}`);
}

/** One describe per (mode, backend), one per op inside it, one test per case. */
function suite<T extends CaseLabel>(
  label: string,
  list: T[],
  start: () => Backend[],
  run: (tc: T, backends: Backend[]) => Promise<CaseResult>,
): void {
  expectedRuns += list.length;
  sizes[label] = list.length;
  describe(label, () => {
    let backends: Backend[] = [];
    before(() => {
      backends = start();
    });
    after(() => {
      for (const b of backends) b.dispose();
    });
    for (const [op, group] of byOp(list)) {
      describe(op, () => {
        for (const tc of group) {
          test(tc.name, async (t) => report(t, await run(tc, backends), label));
        }
      });
    }
  });
}

function gpuDevices(): DeviceInfo[] {
  return devices.filter((d) => !isCpu(d));
}

describe('backend-ops', () => {
  test('found the CPU backend (the reference of test mode)', () => {
    assert.ok(cpuDevice, 'no CPU device');
    assert.ok(cases.length > 0, 'no cases selected');
  });

  for (const dev of gpuDevices()) {
    suite(
      `test ${dev.name} vs CPU`,
      cases,
      () => [initBackend(dev), initBackend(cpuDevice)],
      (tc, [b, cpu]) => evalTest(tc, b!, cpu!, caseRng(seed, tc)),
    );
  }

  for (const dev of devices) {
    suite(
      `grad ${dev.name}`,
      cases,
      () => [initBackend(dev)],
      (tc, [b]) => evalGrad(tc, b!, caseRng(seed, tc), null, fdSamples(dev)),
    );
  }

  for (const dev of devices) {
    suite(
      `conformance ${dev.name} vs ggml's outputs`,
      refFiles,
      () => [initBackend(dev), initBackend(cpuDevice)],
      (f, [b, cpu]) => evalConformance(f, b!, cpu!),
    );
  }

  test('summary', (t) => {
    if (gpuDevices().length === 0) t.diagnostic('no non-CPU device: test mode had nothing to compare');
    if (!hasAutodiff()) t.diagnostic('grad mode: "not supported: autodiff not available" (the binding has no ctx.buildBackwardExpand yet)');
    if (refFiles.length === 0) t.diagnostic(`no reference files at ${refDir}: conformance mode skipped (set WEFT_GGML_REFERENCE)`);
    for (const [k, s] of Object.entries(seconds)) t.diagnostic(`${k}: ${sizes[k]} cases in ${s.toFixed(1)} s`);
    t.diagnostic(`${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped`);
    // every case ran once per backend and mode (failures fail their own tests above)
    assert.equal(counts.passed + counts.failed + counts.skipped, expectedRuns);
  });
});
