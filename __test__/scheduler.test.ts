// Scheduler: one graph across WebGPU0 and the CPU. Every expected assignment and split is
// worked out by hand from ggml's passes (the comments give the reasoning), and every
// scheduled compute is compared element by element with the CPU backend alone.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { weft, randomFloats, assertClose, throwsWith } from './helpers.ts'
import { hasGpu, placedNet, reference, splitList, placement } from './sched-helpers.ts'

const { Context, Backend, Scheduler, GraphAllocator } = weft
const gpuTest = hasGpu ? test : test.skip

// Weights in a CPU buffer feed a WebGPU graph. Pass 1: w is in a CPU buffer -> CPU
// ('1.dst'); x, an unallocated input -> the last backend, CPU ('1.inp'); g in a WebGPU
// buffer -> WebGPU0. mm reads the weights w (source 0), which only the CPU can use, and
// WebGPU0 does not ask to offload a batch of 3 (ggml-vulkan's rule: 32 or more) -> CPU
// ('1.wgt0'); h reads the weights g (source 1) -> WebGPU0 ('1.wgt1'). Pass 2 spreads
// WebGPU0 down: sm, out -> WebGPU0 ('2.sup'); the view v follows sm (pass 4). Pass 5:
// [CPU mm] [WebGPU0 h sm out, input mm]: 2 splits.
gpuTest('weights in a CPU buffer feed a WebGPU graph', async () => {
  const [gpu, cpu] = [Backend.init('WebGPU0'), Backend.init('CPU')]
  const sched = new Scheduler({ backends: [gpu, cpu] })
  const n = placedNet(cpu, gpu, 3)
  sched.allocGraph(n.graph)
  assert.deepEqual(placement(sched, n.w), ['CPU', '1.dst'])
  assert.deepEqual(placement(sched, n.x), ['CPU', '1.inp'])
  assert.deepEqual(placement(sched, n.mm), ['CPU', '1.wgt0'])
  assert.deepEqual(placement(sched, n.h), ['WebGPU0', '1.wgt1'])
  assert.deepEqual(placement(sched, n.sm), ['WebGPU0', '2.sup'])
  assert.deepEqual(placement(sched, n.out), ['WebGPU0', '2.sup'])
  assert.equal(sched.getTensorBackend(n.v)?.name, 'WebGPU0')
  assert.equal(sched.nSplits, 2)
  assert.deepEqual(splitList(sched), [
    ['CPU', [], ['mm']],
    ['WebGPU0', ['mm'], ['h', 'sm', 'out']],
  ])
  // h reads the copy of mm in WebGPU0 memory.
  assert.deepEqual(sched.splits()[1].nodes[0].srcs.map((s) => s.name), ['WebGPU0#mm#0', 'g'])
  assert.equal(sched.describe(), '## SPLIT #0: CPU # 0 inputs: \n## SPLIT #1: WebGPU0 # 1 inputs: [mm (   0K)] \n')
  const x = randomFloats(24, 3)
  n.x.fromFloat32(x)
  await sched.compute(n.graph)
  const ref = await reference(3, x)
  assertClose(n.out.toFloat32(), ref.get('out')!, 1e-5, 'out')

  // A batch of 32: WebGPU0 offloads mm although its weights are in host memory ('1.off');
  // everything runs there, one split whose inputs are w and x (mm's sources, in order).
  const n32 = placedNet(cpu, gpu, 32)
  sched.allocGraph(n32.graph)
  assert.deepEqual(placement(sched, n32.mm), ['WebGPU0', '1.off'])
  assert.deepEqual(splitList(sched), [['WebGPU0', ['w', 'x'], ['mm', 'h', 'sm', 'out']]])
  const x32 = randomFloats(8 * 32, 4)
  n32.x.fromFloat32(x32)
  await sched.compute(n32.graph)
  assertClose(n32.out.toFloat32(), (await reference(32, x32)).get('out')!, 1e-5, 'out (32)')
})

// setTensorBackend(sm, CPU) overrides the passes. Pass 1: mm CPU ('1.wgt0'), h WebGPU0
// ('1.wgt1'), sm the user's ('usr'). Pass 2, WebGPU down: h spreads to nothing (sm is
// assigned, the CPU: spreading stops); up: nothing unassigned above h; any backend
// down: after sm (CPU), out -> CPU ('2.sup'). Pass 5: [CPU mm] [WebGPU0 h, input mm]
// [CPU sm out, input h]: 3 splits.
gpuTest('setTensorBackend overrides the passes', async () => {
  const [gpu, cpu] = [Backend.init('WebGPU0'), Backend.init('CPU')]
  const sched = new Scheduler({ backends: [gpu, cpu] })
  const n = placedNet(cpu, gpu, 3)
  sched.setTensorBackend(n.sm, cpu)
  sched.allocGraph(n.graph)
  assert.deepEqual(placement(sched, n.sm), ['CPU', 'usr'])
  assert.deepEqual(placement(sched, n.out), ['CPU', '2.sup'])
  assert.deepEqual(splitList(sched), [
    ['CPU', [], ['mm']],
    ['WebGPU0', ['mm'], ['h']],
    ['CPU', ['h'], ['sm', 'out']],
  ])
  const x = randomFloats(24, 5)
  n.x.fromFloat32(x)
  await sched.compute(n.graph)
  assertClose(n.out.toFloat32(), (await reference(3, x)).get('out')!, 1e-5, 'out')
  // reset() forgets the pin: the passes decide again (2 splits).
  sched.reset()
  assert.equal(sched.getTensorBackend(n.sm), null)
  const n2 = placedNet(cpu, gpu, 3)
  sched.allocGraph(n2.graph)
  assert.equal(sched.nSplits, 2)
  throwsWith(() => sched.setTensorBackend(n.sm, Backend.init('CPU')), 'WEFT_INVALID_ARGUMENT', 'not one of this scheduler')
})

// An op WebGPU refuses for a lasting reason: a tensor over its 128 MiB storage binding
// (lavapipe's max_storage_buffer_binding_size). x: [1024] weights in WebGPU0, c: [1, R]
// weights in WebGPU0; a = 2x; big = a repeated R times (R = 32769: 1024 R 4 bytes is just
// over 128 MiB); r = sumRows(big) [1, R]; out = r * c.
// Pass 1: a reads the weights x -> WebGPU0 ('1.wgt0'); out reads c -> WebGPU0 ('1.wgt1').
// Pass 2 spreads WebGPU0 over big and r where WebGPU0 says it supports them. Pass 3 gives
// what is left to the CPU ('3.best': WebGPU0 does not run it; the CPU does). So the split
// follows from WebGPU0's two answers, each case worked out:
//   big yes, r yes: [WebGPU0 a big r out]                                 1 split
//   big no,  r no:  [WebGPU0 a] [CPU big r, in a] [WebGPU0 out, in r]     3 splits
//   big yes, r no:  [WebGPU0 a big] [CPU r, in big] [WebGPU0 out, in r]   3 splits
//   big no,  r yes: [WebGPU0 a] [CPU big, in a] [WebGPU0 r out, in big]   3 splits
gpuTest('an op over the WebGPU binding limit runs on the CPU in the middle of a WebGPU graph', async () => {
  const [gpu, cpu] = [Backend.init('WebGPU0'), Backend.init('CPU')]
  const [n0, R] = [1024, 32769]
  assert.ok(n0 * R * 4 > 128 * 2 ** 20)
  const wctx = new Context({ memSize: 1 << 20, noAlloc: true })
  const x = wctx.newTensor1d('f32', n0)
  const c = wctx.newTensor2d('f32', 1, R)
  const wbuf = gpu.allocCtxTensors(wctx)!
  wbuf.usage = 'weights'
  const ctx = new Context({ memSize: 1 << 20, noAlloc: true })
  const a = ctx.scale(x, 2)
  const big = ctx.repeat(a, ctx.newTensor2d('f32', n0, R))
  const r = ctx.sumRows(big)
  const out = ctx.mul(r, c)
  const names: [typeof x, string][] = [[x, 'x'], [c, 'c'], [a, 'a'], [big, 'big'], [r, 'r'], [out, 'out']]
  for (const [t, name] of names) t.name = name
  const g = ctx.newGraph()
  g.buildForwardExpand(out)
  const [bigOk, rOk] = [gpu.supportsOp(big), gpu.supportsOp(r)]
  const want: Record<string, [string, string[], string[]][]> = {
    'true,true': [['WebGPU0', [], ['a', 'big', 'r', 'out']]],
    'false,false': [['WebGPU0', [], ['a']], ['CPU', ['a'], ['big', 'r']], ['WebGPU0', ['r'], ['out']]],
    'true,false': [['WebGPU0', [], ['a', 'big']], ['CPU', ['big'], ['r']], ['WebGPU0', ['r'], ['out']]],
    'false,true': [['WebGPU0', [], ['a']], ['CPU', ['a'], ['big']], ['WebGPU0', ['big'], ['r', 'out']]],
  }
  const sched = new Scheduler({ backends: [gpu, cpu] })
  sched.reserve(g) // plans without placing anything: the split is known
  assert.deepEqual(splitList(sched), want[`${bigOk},${rOk}`], `WebGPU0 supports big: ${bigOk}, r: ${rOk}`)
  assert.deepEqual(placement(sched, a), ['WebGPU0', '1.wgt0'])
  if (!bigOk) assert.deepEqual(placement(sched, big), ['CPU', '3.best'])
  const xv = randomFloats(n0, 7)
  const cv = randomFloats(R, 8)
  x.fromFloat32(xv)
  c.fromFloat32(cv)
  await sched.compute(g)
  const got = out.toFloat32()
  // By hand: every row of big is 2x, so r[j] = 2 sum(x) and out[j] = 2 sum(x) c[j].
  const s2 = 2 * xv.reduce((s, v) => s + v, 0)
  assertClose(got, Array.from(cv, (v) => s2 * v), 1e-4, 'out by hand')
  // And against the CPU alone, element by element.
  const rctx = new Context({ memSize: 1 << 20, noAlloc: true })
  const [rx, rc] = [rctx.newTensor1d('f32', n0), rctx.newTensor2d('f32', 1, R)]
  cpu.allocCtxTensors(rctx)
  rx.fromFloat32(xv)
  rc.fromFloat32(cv)
  const gctx = new Context({ memSize: 1 << 20, noAlloc: true })
  const rout = gctx.mul(gctx.sumRows(gctx.repeat(gctx.scale(rx, 2), gctx.newTensor2d('f32', n0, R))), rc)
  const rg = gctx.newGraph()
  rg.buildForwardExpand(rout)
  new GraphAllocator(cpu).allocGraph(rg)
  await cpu.compute(rg)
  assertClose(got, rout.toFloat32(), 1e-5, 'out vs CPU')
  sched.dispose()
})

gpuTest('a node no backend supports is an Error naming it and the backends, before anything runs', async () => {
  const [gpu, cpu] = [Backend.init('WebGPU0'), Backend.init('CPU')]
  const ctx = new Context({ memSize: 1 << 20, noAlloc: true })
  const a = ctx.newTensor2d('f32', 32, 2)
  a.setInput()
  const s = ctx.scale(a, 2)
  // A copy into q4_0_4x4 (an interleaved layout only matmuls read): neither backend runs it.
  const q = ctx.cpy(s, ctx.newTensor2d('q4_0_4x4', 32, 2))
  q.name = 'to_q4x4'
  const g = ctx.newGraph()
  g.buildForwardExpand(q)
  assert.equal(gpu.supportsOp(q) || cpu.supportsOp(q), false, 'the test needs an op no backend supports')
  const sched = new Scheduler({ backends: [gpu, cpu] })
  await assert.rejects(sched.compute(g), (e: any) => {
    assert.equal(e.code, 'WEFT_NOT_SUPPORTED')
    assert.match(e.message, /no backend supports node 'to_q4x4' \(CPY/)
    assert.match(e.message, /backends: WebGPU0, CPU/)
    return true
  })
  assert.equal(a.isAllocated, false) // nothing was placed, nothing ran
  throwsWith(() => sched.allocGraph(g), 'WEFT_NOT_SUPPORTED', 'to_q4x4')
})

gpuTest('reserve, then graphs of the same shape allocate nothing new', async () => {
  const [gpu, cpu] = [Backend.init('WebGPU0'), Backend.init('CPU')]
  const sched = new Scheduler({ backends: [gpu, cpu] })
  sched.reserve(placedNet(cpu, gpu, 3).graph)
  const sizes = [sched.bufferSize(gpu), sched.bufferSize(cpu)]
  assert.ok(sizes[0] > 0 && sizes[1] > 0, `${sizes}`)
  for (let step = 0; step < 3; step++) {
    const n = placedNet(cpu, gpu, 3)
    sched.allocGraph(n.graph)
    const x = randomFloats(24, 10 + step)
    n.x.fromFloat32(x)
    await sched.compute(n.graph)
    assert.deepEqual([sched.bufferSize(gpu), sched.bufferSize(cpu)], sizes, `step ${step}`)
    assertClose(n.out.toFloat32(), (await reference(3, x)).get('out')!, 1e-5, `step ${step}`)
  }
})

gpuTest('nCopies 2 gives the numbers nCopies 1 gives, over consecutive computes', async () => {
  const [gpu, cpu] = [Backend.init('WebGPU0'), Backend.init('CPU')]
  const one = new Scheduler({ backends: [gpu, cpu] })
  const two = new Scheduler({ backends: [gpu, cpu], nCopies: 2 })
  const four = new Scheduler({ backends: [gpu, cpu], parallel: true })
  assert.deepEqual([one.nCopies, two.nCopies, four.nCopies], [1, 2, 4])
  const nets = [one, two, four].map(() => placedNet(cpu, gpu, 3))
  for (let step = 0; step < 5; step++) {
    const x = randomFloats(24, 20 + step)
    const outs: Float32Array[] = []
    for (const [i, s] of [one, two, four].entries()) {
      s.allocGraph(nets[i].graph) // the input moves to the next copy slot: set it after
      nets[i].x.fromFloat32(x)
      await s.compute(nets[i].graph)
      outs.push(nets[i].out.toFloat32())
    }
    assert.deepEqual(Array.from(outs[1]), Array.from(outs[0]), `step ${step}: 2 copies`)
    assert.deepEqual(Array.from(outs[2]), Array.from(outs[0]), `step ${step}: 4 copies`)
    assertClose(outs[0], (await reference(3, x)).get('out')!, 1e-5, `step ${step}`)
  }
})

test('options and arguments are checked', () => {
  const cpu = Backend.init('CPU')
  throwsWith(() => new Scheduler({ backends: [] }), 'WEFT_INVALID_ARGUMENT', '0 backends')
  throwsWith(() => new Scheduler(null as any), 'WEFT_INVALID_ARGUMENT', 'options object')
  throwsWith(() => new Scheduler({ backends: [cpu], graphSize: 1e300 }), 'WEFT_INVALID_ARGUMENT', 'at most 2^28')
  throwsWith(() => new Scheduler({ backends: [cpu] }).setEvalCallback(1 as any), 'WEFT_INVALID_ARGUMENT', 'function or null')
  throwsWith(() => new Scheduler({} as any), 'WEFT_INVALID_ARGUMENT', 'options.backends')
  throwsWith(() => new Scheduler({ backends: [cpu, {}] } as any), 'WEFT_INVALID_ARGUMENT', 'array of Backend')
  throwsWith(() => new Scheduler({ backends: [cpu, cpu] }), 'WEFT_INVALID_ARGUMENT', 'listed twice')
  throwsWith(() => new Scheduler({ backends: [cpu], graphSize: -1 }), 'WEFT_INVALID_ARGUMENT', 'graphSize')
  throwsWith(() => new Scheduler({ backends: [cpu], graphSize: 'x' } as any), 'WEFT_INVALID_ARGUMENT', 'graphSize')
  throwsWith(() => new Scheduler({ backends: [cpu], nCopies: 5 }), 'WEFT_INVALID_ARGUMENT', 'nCopies=5')
  throwsWith(() => new Scheduler({ backends: [cpu], parallel: 1 } as any), 'WEFT_INVALID_ARGUMENT', 'parallel')
  if (hasGpu) {
    const gpu = Backend.init('WebGPU0')
    throwsWith(() => new Scheduler({ backends: [cpu, gpu] }), 'WEFT_INVALID_ARGUMENT', 'last backend must be the CPU')
  }
  const s = new Scheduler({ backends: [cpu], graphSize: 8 })
  assert.equal(s.nBackends, 1)
  assert.equal(s.getBackend(0).name, 'CPU')
  throwsWith(() => s.getBackend(1), 'WEFT_INVALID_ARGUMENT', 'index 1')
  throwsWith(() => s.bufferSize(Backend.init('CPU')), 'WEFT_INVALID_ARGUMENT', 'not one of this scheduler')
  // graphSize 8: room for 11 nodes plus leafs (ggml's hash size).
  const ctx = new Context({ memSize: 1 << 20, noAlloc: true })
  let t = ctx.newTensor1d('f32', 4)
  for (let i = 0; i < 11; i++) t = ctx.scale(t, 1)
  const g = ctx.newGraph()
  g.buildForwardExpand(t)
  throwsWith(() => s.allocGraph(g), 'WEFT_INVALID_ARGUMENT', 'graphSize=8')
  s.dispose()
  throwsWith(() => s.nSplits, 'WEFT_INVALID_ARGUMENT', 'disposed')
  s.dispose() // twice is fine
})

test('a CPU-only scheduler runs any graph in one split', async () => {
  const cpu = Backend.init('CPU')
  const sched = new Scheduler({ backends: [cpu] })
  const n = placedNet(cpu, cpu, 3)
  const x = randomFloats(24, 30)
  sched.allocGraph(n.graph)
  n.x.fromFloat32(x)
  await sched.compute(n.graph)
  assert.deepEqual(splitList(sched), [['CPU', [], ['mm', 'h', 'sm', 'out']]])
  assert.deepEqual(Array.from(n.out.toFloat32()), Array.from((await reference(3, x)).get('out')!))
  // Computing the allocated graph again reuses the plan: the input stays where it was set.
  const x2 = randomFloats(24, 31)
  n.x.fromFloat32(x2)
  await sched.compute(n.graph)
  assert.deepEqual(Array.from(n.out.toFloat32()), Array.from((await reference(3, x2)).get('out')!))
})
