// Every error a caller can cause has a WEFT_ code and says what was expected (issue 14,
// finding 14; issue 15's argument checks): wrong types, missing options, unknown enum
// strings, non-integer and out-of-range numbers, `new` on classes weft alone creates, and
// methods called on the wrong object.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { weft, throwsWith } from './helpers.ts'

const { Context, Backend, GgufWriter, Tensor, Graph, BackendBuffer, Gguf } = weft

// Calls that bypass the types on purpose.
const loose = (x: unknown) => x as any

test('unknown enum strings list the valid values', () => {
  const ctx = new Context({ noAlloc: true })
  throwsWith(() => ctx.newTensor1d(loose('f33'), 4), 'WEFT_INVALID_ARGUMENT', "'f33' is not a GgmlType", "'f32'", "'q4_K'")
  throwsWith(() => ctx.newTensor1d(loose(undefined), 4), 'WEFT_INVALID_ARGUMENT', 'expected a GgmlType', 'got undefined')
  throwsWith(() => ctx.newTensor1d(loose(3), 4), 'WEFT_INVALID_ARGUMENT', 'expected a GgmlType', 'got a number')
  const a = ctx.newTensor1d('f32', 4)
  throwsWith(() => ctx.unary(a, loose('gelu')), 'WEFT_INVALID_ARGUMENT', "'gelu' is not a UnaryOp", "'GELU'")
  throwsWith(() => ctx.argsort(a, loose('up')), 'WEFT_INVALID_ARGUMENT', "'asc'", "'desc'")
  throwsWith(() => ctx.pool1d(a, loose('min'), 1, 1, 0), 'WEFT_INVALID_ARGUMENT', "'max'", "'avg'")
  throwsWith(() => ctx.mulMatSetPrec(a, loose('f64')), 'WEFT_INVALID_ARGUMENT', "'default'")
  throwsWith(() => new GgufWriter().set('k', 1, loose('float')), 'WEFT_INVALID_ARGUMENT', "'float' is not a GgufValueType", "'f32'")
  throwsWith(() => weft.quantize(loose('q4'), new Float32Array(32), 1, 32), 'WEFT_INVALID_ARGUMENT', "'q4_0'")
})

test('dimensions and sizes must be integers: 2.5 and NaN are refused, not truncated', () => {
  const ctx = new Context({ noAlloc: true })
  throwsWith(() => ctx.newTensor1d('f32', 2.5), 'WEFT_INVALID_ARGUMENT', 'newTensor1d: ne0=2.5 must be an integer')
  throwsWith(() => ctx.newTensor2d('f32', 4, NaN), 'WEFT_INVALID_ARGUMENT', 'newTensor2d: ne1=NaN must be an integer')
  throwsWith(() => ctx.newTensor('f32', [4, 1.5]), 'WEFT_INVALID_ARGUMENT', 'newTensor: ne[1]=1.5')
  throwsWith(() => ctx.newTensor1d('f32', Infinity), 'WEFT_INVALID_ARGUMENT', 'ne0=Infinity')
  throwsWith(() => ctx.newTensor1d('f32', 2 ** 60), 'WEFT_INVALID_ARGUMENT', '2^53')
  throwsWith(() => ctx.newTensor1d('f32', -1), 'WEFT_INVALID_ARGUMENT', 'ne[0]=-1 must not be negative')
  const a = ctx.newTensor2d('f32', 4, 4)
  throwsWith(() => ctx.view1d(a, 2, 0.5), 'WEFT_INVALID_ARGUMENT', 'view1d: offset=0.5')
  throwsWith(() => ctx.view2d(a, 2, 2, -16, 0), 'WEFT_INVALID_ARGUMENT', 'view2d: nb1=-16 must not be negative')
  // i32 parameters: no wrapping modulo 2^32.
  throwsWith(() => ctx.pad(a, 2 ** 32 + 1, 0, 0, 0), 'WEFT_INVALID_ARGUMENT', "pad: p0=4294967297 is outside i32's range")
  throwsWith(() => ctx.permute(a, 0.5, 1, 2, 3), 'WEFT_INVALID_ARGUMENT', 'permute: axis0=0.5')
  throwsWith(() => ctx.topK(a, 1.5), 'WEFT_INVALID_ARGUMENT', 'topK: k=1.5')
  throwsWith(() => ctx.newGraphCustom(10.5), 'WEFT_INVALID_ARGUMENT', 'newGraphCustom: size=10.5')
  throwsWith(() => Context.graphOverhead(2 ** 62), 'WEFT_INVALID_ARGUMENT', 'graphOverhead: size')
  throwsWith(() => Context.graphOverhead(2 ** 40), 'WEFT_INVALID_ARGUMENT', 'must be in 1..=2^28')
  throwsWith(() => new Context({ memSize: 1.5 }), 'WEFT_INVALID_ARGUMENT', 'memSize=1.5')
  throwsWith(() => new Context({ memSize: -1 }), 'WEFT_INVALID_ARGUMENT', 'memSize=-1 must not be negative')
  const t = new Context().newTensor1d('f32', 4)
  throwsWith(() => t.memset(256), 'WEFT_INVALID_ARGUMENT', "memset: value=256 is outside u8's range")
  throwsWith(() => t.memset(-1), 'WEFT_INVALID_ARGUMENT', 'memset: value=-1')
  throwsWith(() => t.get(0.5), 'WEFT_INVALID_ARGUMENT', 'get: offset=0.5')
  throwsWith(() => t.src(-1), 'WEFT_INVALID_ARGUMENT', "src: i=-1 is outside u32's range")
  throwsWith(() => Backend.init('CPU').setNThreads(2.5), 'WEFT_INVALID_ARGUMENT', 'setNThreads: n=2.5')
  throwsWith(() => weft.quantize('q4_0', new Float32Array(32), 1.5, 32), 'WEFT_INVALID_ARGUMENT', 'quantize: nrows=1.5')
  // Options objects' integer fields likewise, named with their method.
  const img = ctx.newTensor4d('f32', 8, 8, 1, 1)
  const k = ctx.newTensor4d('f32', 3, 3, 1, 1)
  throwsWith(() => ctx.conv2d(k, img, { s0: 1.5, s1: 1, p0: 0, p1: 0, d0: 1, d1: 1 }), 'WEFT_INVALID_ARGUMENT', 'conv2d: options.s0=1.5')
  throwsWith(() => ctx.ropeExt(a, a, null, { nDims: NaN }), 'WEFT_INVALID_ARGUMENT', 'ropeExt: options.nDims=NaN')
})

test('wrong argument types say what was expected', () => {
  const ctx = new Context({ noAlloc: true })
  const a = ctx.newTensor1d('f32', 4)
  throwsWith(() => ctx.add(loose(1), a), 'WEFT_INVALID_ARGUMENT', 'expected a Tensor')
  throwsWith(() => ctx.add(loose({}), a), 'WEFT_INVALID_ARGUMENT', 'expected a Tensor')
  throwsWith(() => loose(ctx.add)(a), 'WEFT_INVALID_ARGUMENT')
  throwsWith(() => ctx.add(loose(ctx), a), 'WEFT_INVALID_ARGUMENT', 'expected a Tensor')
  throwsWith(() => ctx.newTensor1d('f32', loose('4')), 'WEFT_INVALID_ARGUMENT', 'expected a number, got a string')
  throwsWith(() => ctx.newTensor1d('f32', loose(4n)), 'WEFT_INVALID_ARGUMENT', 'expected a number, got a bigint')
  throwsWith(() => ctx.newTensor('f32', loose('abc')), 'WEFT_INVALID_ARGUMENT', 'expected an array')
  throwsWith(() => a.set(loose([1, 2])), 'WEFT_INVALID_ARGUMENT', 'expected a typed array')
  throwsWith(() => a.fromFloat32(loose([1, 2, 3, 4])), 'WEFT_INVALID_ARGUMENT', 'expected a typed array')
  throwsWith(() => Backend.init(loose(5)), 'WEFT_INVALID_ARGUMENT', 'expected a string, got a number')
  throwsWith(() => ctx.scale(a, loose('2')), 'WEFT_INVALID_ARGUMENT', 'expected a number, got a string')
  throwsWith(() => new Context(loose({ memSize: 'x' })), 'WEFT_INVALID_ARGUMENT', 'ContextOptions.memSize: expected a number')
  throwsWith(() => new Context(loose({ noAlloc: 1 })), 'WEFT_INVALID_ARGUMENT', 'noAlloc: expected a boolean')
  // Setters check their value too.
  throwsWith(() => (a.name = loose(5)), 'WEFT_INVALID_ARGUMENT', 'name: expected a string, got number')
  throwsWith(() => (ctx.noAlloc = loose('yes')), 'WEFT_INVALID_ARGUMENT', 'noAlloc: expected a boolean, got string')
})

test('missing or incomplete options objects are errors naming what is missing', () => {
  const ctx = new Context({ noAlloc: true })
  const a = ctx.newTensor1d('f32', 4)
  throwsWith(() => ctx.optStepAdamw(a, a, loose(undefined)), 'WEFT_INVALID_ARGUMENT', 'optStepAdamw: options is required')
  throwsWith(() => ctx.optStepAdamw(a, a, loose(null)), 'WEFT_INVALID_ARGUMENT', 'optStepAdamw: options is required')
  throwsWith(() => ctx.optStepAdamw(a, a, loose({ alpha: 1 })), 'WEFT_INVALID_ARGUMENT', "lacks required field 'beta1'")
  throwsWith(
    () => ctx.optStepAdamw(a, a, loose({ alpha: 'x', beta1: 1, beta2: 1, eps: 1, wd: 1 })),
    'WEFT_INVALID_ARGUMENT',
    'AdamwOptions.alpha: expected a number, got a string',
  )
  const img = ctx.newTensor4d('f32', 8, 8, 1, 1)
  throwsWith(() => ctx.conv2d(img, img, loose(undefined)), 'WEFT_INVALID_ARGUMENT', 'conv2d: options is required')
  throwsWith(() => ctx.im2col(img, img, loose(undefined)), 'WEFT_INVALID_ARGUMENT', 'im2col: options is required')
  throwsWith(() => ctx.pool2d(img, 'max', loose(undefined)), 'WEFT_INVALID_ARGUMENT', 'pool2d: options is required')
  const g = ctx.newGraph()
  throwsWith(() => ctx.buildOptAdamw(g, g, loose(undefined)), 'WEFT_INVALID_ARGUMENT', 'buildOptAdamw: options is required')
})

test('classes only weft creates cannot be constructed', () => {
  throwsWith(() => new (loose(Tensor))(), 'WEFT_INVALID_ARGUMENT', 'new Tensor() is not supported', 'Context methods')
  throwsWith(() => new (loose(Graph))(), 'WEFT_INVALID_ARGUMENT', 'ctx.newGraph()')
  throwsWith(() => new (loose(Backend))(), 'WEFT_INVALID_ARGUMENT', 'Backend.init(name)')
  throwsWith(() => new (loose(BackendBuffer))(), 'WEFT_INVALID_ARGUMENT', 'allocBuffer')
  throwsWith(() => new (loose(Gguf))(), 'WEFT_INVALID_ARGUMENT', 'Gguf.open(path)')
  // Objects weft returns are still instances.
  const t = new Context({ noAlloc: true }).newTensor1d('f32', 1)
  assert.ok(t instanceof Tensor)
  assert.ok(Backend.init('CPU') instanceof Backend)
})

test('methods and accessors called on the wrong object say so', () => {
  const t = new Context({ noAlloc: true }).newTensor1d('f32', 4)
  const detached = t.isContiguous
  throwsWith(() => detached(), 'WEFT_INVALID_ARGUMENT', 'Tensor.isContiguous: called on undefined, not a Tensor')
  throwsWith(() => Tensor.prototype.toFloat32.call({}), 'WEFT_INVALID_ARGUMENT', 'called on another object, not a Tensor')
  throwsWith(() => Tensor.prototype.toFloat32.call(Object.create(Tensor.prototype)), 'WEFT_INVALID_ARGUMENT', 'not a Tensor')
  const ne = Object.getOwnPropertyDescriptor(Tensor.prototype, 'ne')!.get!
  throwsWith(() => ne.call({}), 'WEFT_INVALID_ARGUMENT', 'Tensor.ne: called on another object')
  const ctx = new Context({ noAlloc: true })
  throwsWith(() => Context.prototype.add.call(t, t, t), 'WEFT_INVALID_ARGUMENT', 'Context.add', 'not a Context')
  // Methods still work, keep their names, and errors with a code pass through unchanged.
  assert.equal(t.isContiguous(), true)
  assert.equal(Tensor.prototype.isContiguous.name, 'isContiguous')
  throwsWith(() => ctx.mulMat(ctx.newTensor1d('f32', 4), ctx.newTensor1d('f32', 5)), 'WEFT_INVALID_ARGUMENT', 'mulMat')
})

test('disposed objects are errors naming the class', () => {
  const ctx = new Context({ noAlloc: true })
  const t = ctx.newTensor1d('f32', 4)
  t.dispose()
  throwsWith(() => t.ne, 'WEFT_INVALID_ARGUMENT', 'Tensor has been disposed')
  throwsWith(() => ctx.sqr(t), 'WEFT_INVALID_ARGUMENT', 'Tensor has been disposed')
  ctx.dispose()
  throwsWith(() => ctx.newTensor1d('f32', 1), 'WEFT_INVALID_ARGUMENT', 'Context has been disposed')
})
