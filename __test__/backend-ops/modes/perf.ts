// Perf mode (test_case::eval_perf): the op repeated in one graph, n_runs chosen from its
// flops (else its bytes), timed for at least `minSeconds` (ggml: 1 s), printed as us/run and
// GFLOP/s or GB/s.

import { Context, type Backend, type DeviceInfo, type Tensor } from 'weft-ml';
import { color, fixed, pad } from '../format.js';
import type { Rng } from '../rng.js';
import { isViewOp, type TestCase } from '../test-case.js';
import { buildCase, runCase, type CaseResult } from './result.js';

const GRAPH_NODES = 8192;
const GFLOP = 1e9;
const GB = 2 ** 30;

export interface PerfOptions {
  /** Keep running until this many seconds have passed (ggml: 1). */
  minSeconds: number;
}

function formatFlops(flops: number): string {
  if (flops >= 1e12) return `${pad(fixed(flops / 1e12, 2), 6)} TFLOP`;
  if (flops >= 1e9) return `${pad(fixed(flops / 1e9, 2), 6)} GFLOP`;
  if (flops >= 1e6) return `${pad(fixed(flops / 1e6, 2), 6)} MFLOP`;
  return `${pad(fixed(flops / 1e3, 2), 6)} KFLOP`;
}

/** ggml's tensor_op_size: a node's bytes and its sources'. */
function tensorOpSize(t: Tensor): number {
  let size = t.nbytes;
  for (const s of t.srcs) if (s) size += s.nbytes;
  return size;
}

/** Spaces that align the numbers after "  NAME: " (ggml: to a multiple of 8, at least 5). */
export function perfAlign(nameLen: number): string {
  const len = nameLen + 4; // "  " + name + ": "
  const align = 8;
  let last = Math.ceil(len / align) * align;
  if (last - len < 5) last += align;
  return ' '.repeat(last - len);
}

/**
 * Whether perf mode gives `backend` ggml's CPU run budget (8 GFLOP or 8 GB per case) rather
 * than its GPU one (100 GFLOP, 32 GB). ggml asks the device type; a WebGPU adapter that is
 * itself software on the CPU (lavapipe, WARP: wgpu's DeviceType::Cpu) computes at CPU speed,
 * so it gets the CPU's budget too. With the GPU's, every n=1 MUL_MAT case of the perf list
 * ran 852 times at about 0.2 s each on lavapipe, and the list took hours.
 */
export function cpuRunBudget(device: DeviceInfo): boolean {
  return device.type === 'cpu' || device.properties.device_type === 'CPU (software)';
}

/** How many times the op goes into the graph (ggml's n_runs rule). */
export function perfRuns(tc: TestCase, out: Tensor, isCpu: boolean, room: number): number {
  const flops = tc.opFlops(out);
  if (flops > 0) {
    const target = (isCpu ? 8 : 100) * GFLOP;
    return Math.min(room, Math.floor(target / flops)) + 1;
  }
  const target = (isCpu ? 8 : 32) * GB;
  return Math.min(room, Math.floor(target / tc.opSize(out))) + 1;
}

/** test_case::eval_perf. */
export async function evalPerf(tc: TestCase, backend: Backend, rng: Rng, opts: PerfOptions): Promise<CaseResult> {
  return runCase(tc, async (run) => {
    const ctx = run.hold(
      new Context({ memSize: Context.tensorOverhead() * 128 + Context.graphOverhead(GRAPH_NODES, false), noAlloc: true }),
    );
    const out = buildCase(tc, ctx, 'perf');
    // check if backends support op
    if (!backend.supportsOp(out)) return run.result('not supported', 'not supported', `${backend.name} does not support ${out.opDesc}`);

    const align = perfAlign(tc.name.length);
    const buf = run.hold(backend.allocCtxTensors(ctx));
    if (!buf) return run.result('fail', `${align}failed to allocate tensors`, 'allocation failed');

    tc.initializeTensors(ctx, rng);

    const gf = ctx.newGraphCustom(GRAPH_NODES, false);
    gf.buildForwardExpand(out);

    // warmup run
    await backend.compute(gf);

    const isCpu = cpuRunBudget(backend.device);
    const nRuns = perfRuns(tc, out, isCpu, gf.size - gf.nNodes);
    // duplicate the op
    for (let i = 1; i < nRuns; i++) gf.addNode(out);

    // calculate memory
    let mem = nRuns * tc.opSize(out);
    for (const n of gf.nodes()) {
      if (isViewOp(n.op) || n.equals(out)) continue;
      mem += tensorOpSize(n);
    }

    // The device's own measure of each compute where it has one (WebGPU: GPU timestamps),
    // else the host's clock around it; the loop runs for minSeconds of host time either way.
    let totalUs = 0;
    let hostUs = 0;
    let totalRuns = 0;
    do {
      const t0 = performance.now();
      await backend.compute(gf);
      const us = (performance.now() - t0) * 1000;
      const device = backend.lastComputeSeconds;
      totalUs += device == null ? us : device * 1e6;
      hostUs += us;
      totalRuns += nRuns;
    } while (hostUs < opts.minSeconds * 1e6);

    let text = `${align}    ${pad(String(totalRuns), 8)} runs - ${pad(fixed(totalUs / totalRuns, 2), 8)} us/run - `;
    const flops = tc.opFlops(out);
    if (flops > 0) {
      const perSec = (flops * totalRuns) / (totalUs / 1e6);
      text += `${formatFlops(flops)}/run - ${color('blue', `${formatFlops(perSec)}S`)}`;
    } else {
      const gbs = mem / (totalUs / 1e6) / GB;
      text += `${pad(String(Math.floor(tc.opSize(out) / 1024)), 8)} kB/run - ${color('blue', `${pad(fixed(gbs, 2), 7)} GB/s`)}`;
    }
    return run.result('ok', text, '');
  });
}
