// Type-level tests of index.d.ts, checked by `npx tsc --noEmit` (never run): the closed sets
// are unions, the enum objects are values, and wrong literals do not type-check.
import {
  Backend,
  BufferUsage,
  GgmlType,
  UnaryOp,
  type BackendBuffer,
  type ComputeOptions,
  type DeviceInfo,
  type OpName,
  type RopeOptions,
  type Tensor,
} from '../index.js'

declare const t: Tensor
declare const buf: BackendBuffer
declare const dev: DeviceInfo

export const deviceType: 'cpu' | 'gpu' | 'accel' = dev.type
export const op: OpName = t.op
export const opDesc: OpName | UnaryOp = t.opDesc
export const usage: BufferUsage = buf.usage
buf.usage = 'weights'
buf.usage = BufferUsage.Compute
// @ts-expect-error not a buffer usage
buf.usage = 'scratch'
// @ts-expect-error not a device type
export const badDevice: DeviceInfo['type'] = 'tpu'
// @ts-expect-error not an op
export const badOp: OpName = 'MATMUL'

export const ropeNeox: RopeOptions = { mode: 2 }
// @ts-expect-error ggml's rope modes are 0 and 2
export const badRope: RopeOptions = { mode: 1 }

// a value and a type under one name: both spellings type-check
export const f32: GgmlType = GgmlType.F32
export const q4: GgmlType = 'q4_K'
export const gelu: UnaryOp = UnaryOp.Gelu
// @ts-expect-error not a ggml type
export const badType: GgmlType = 'f8'

export const options: ComputeOptions = {
  signal: new AbortController().signal,
  onProgress: (done: number, total: number) => void (done / total),
}
export async function run(b: Backend, g: Parameters<Backend['compute']>[0]): Promise<void> {
  await b.compute(g, options)
  // @ts-expect-error onProgress takes numbers
  await b.compute(g, { onProgress: (done: string) => done })
}
export const i32: Int32Array = t.toInt32()
export const i64: BigInt64Array = t.toBigInt64()
