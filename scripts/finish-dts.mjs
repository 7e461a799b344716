// Part of `npm run build`, after `napi build` has written index.d.ts: the declarations
// napi-rs does not generate, taken from the addon it just built.
// - OpName: the union of every op name in the engine's op table (opNames()), the type of
//   Tensor.op.
// - The runtime objects index.js exports beside each string union (GgmlType.F32 === 'f32'):
//   napi declares only the union, so `GgmlType.F32` would not type-check. Each is declared
//   as a const with literal members, so `'f32'` and `GgmlType.F32` both do.
import { readFileSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const path = new URL('../index.d.ts', import.meta.url)
const weft = require('../index.js')
let dts = readFileSync(path, 'utf8')
const MARK = '/* finished by scripts/finish-dts.mjs */'
if (dts.includes(MARK)) throw new Error('index.d.ts was already finished: run napi build first')

const quote = (s) => `'${s}'`
function insertBefore(anchor, text) {
  const at = dts.indexOf(anchor)
  if (at < 0) throw new Error(`index.d.ts: '${anchor}' not found`)
  dts = dts.slice(0, at) + text + dts.slice(at)
}

const ops = weft.opNames()
insertBefore(
  'export declare function opNames',
  `/** An op by ggml_op_name, from the engine's op table (opNames() lists them in ggml's order). */\n` +
    `export type OpName = ${ops.map(quote).join(' | ')}\n\n`,
)

for (const [name, value] of Object.entries(weft).sort(([a], [b]) => a.localeCompare(b))) {
  if (typeof value !== 'object' || value === null || !Object.values(value).every((v) => typeof v === 'string')) continue
  const union = new RegExp(`^export type ${name} = (.*)$`, 'm').exec(dts)
  if (!union) throw new Error(`index.js exports the object ${name}, index.d.ts has no type ${name}`)
  const declared = union[1].split(' | ').sort().join(' | ')
  const values = Object.values(value).map(quote)
  if (declared !== [...values].sort().join(' | ')) throw new Error(`${name}: runtime values ${values} differ from its type`)
  const members = Object.entries(value).map(([k, v]) => `  readonly ${k}: ${quote(v)}`)
  const [first, firstValue] = Object.entries(value)[0]
  const decl =
    `\n/** ${name}'s values by name, at run time too (\`${name}.${first} === '${firstValue}'\`). */\n` +
    `export declare const ${name}: {\n${members.join('\n')}\n}\n`
  dts = dts.slice(0, union.index + union[0].length) + '\n' + decl + dts.slice(union.index + union[0].length + 1)
}

writeFileSync(path, dts.trimEnd() + '\n\n' + MARK + '\n')
