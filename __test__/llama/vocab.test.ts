// The tokenizers against llama.cpp's own test vectors (models/ggml-vocab-*.gguf with their
// .inp/.out files at the reference commit, in ../shared/vocab beside the checkout): every text
// tokenizes (add_special = false, parse_special = false, as test-tokenizer-0 runs) to the ids
// llama.cpp produced, and detokenizes back to the text where the tokenizer is lossless.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { weft } from '../helpers.ts'
import { Vocab } from '../../models/llama/index.ts'

const root = fileURLToPath(new URL('../..', import.meta.url))
const dir = process.env.WEFT_VOCAB_DIR ?? join(root, '..', 'shared', 'vocab')

function cases(file: string): [string, number[]][] {
  const inp = readFileSync(join(dir, `${file}.inp`), 'utf8').split('\n__ggml_vocab_test__\n')
  const out = readFileSync(join(dir, `${file}.out`), 'utf8').split('\n')
  // The .inp file ends with a separator line: the last split piece is empty.
  if (inp[inp.length - 1] === '') inp.pop()
  return inp.map((text, i) => [text, out[i].trim() === '' ? [] : out[i].trim().split(/\s+/).map(Number)])
}

for (const file of ['ggml-vocab-llama-spm.gguf', 'ggml-vocab-gpt-2.gguf']) {
  test(`${file}: every test text tokenizes to llama.cpp's ids`, (t) => {
    if (!existsSync(join(dir, file))) return t.skip(`no vocab files at ${dir} (set WEFT_VOCAB_DIR)`)
    const vocab = new Vocab(weft.Gguf.open(join(dir, file)))
    const all = cases(file)
    assert.ok(all.length > 30, `${all.length} cases`)
    const failed: string[] = []
    for (const [text, want] of all) {
      const got = vocab.tokenize(text, { addSpecial: false, parseSpecial: false })
      if (JSON.stringify(got) !== JSON.stringify(want)) failed.push(`${JSON.stringify(text)}: got ${got} want ${want}`)
    }
    assert.deepEqual(failed, [], `${failed.length} of ${all.length} differ`)
  })
}

test('SPM: detokenize inverts tokenize (byte fallback included) and BOS is added as the file says', (t) => {
  const file = join(dir, 'ggml-vocab-llama-spm.gguf')
  if (!existsSync(file)) return t.skip(`no vocab files at ${dir}`)
  const vocab = new Vocab(weft.Gguf.open(file))
  for (const [text] of cases('ggml-vocab-llama-spm.gguf')) {
    const ids = vocab.tokenize(text, { addSpecial: false })
    // SentencePiece adds a leading space and detokenize removes it: a lossless round trip.
    assert.equal(vocab.detokenize(ids), text)
  }
  const ids = vocab.tokenize('Hello')
  assert.equal(ids[0], vocab.bos)
  // llama_detokenize keeps the prefix space when it removed a BOS in front of it.
  assert.equal(vocab.detokenize(ids, { removeSpecial: true }), ' Hello')
  assert.equal(vocab.detokenize(ids.slice(1)), 'Hello')
  // '🦙' has no token: its four UTF-8 bytes come out as <0xF0> <0x9F> <0xA6> <0x99>.
  const llama = vocab.tokenize('🦙', { addSpecial: false }).slice(1)
  assert.deepEqual(llama.map((i) => vocab.texts[i]), ['<0xF0>', '<0x9F>', '<0xA6>', '<0x99>'])
  // Control tokens are text unless parseSpecial; their pieces are empty unless special.
  assert.deepEqual(vocab.tokenize('<s>', { addSpecial: false, parseSpecial: true }), [vocab.bos])
  assert.notDeepEqual(vocab.tokenize('<s>', { addSpecial: false }), [vocab.bos])
  assert.equal(vocab.tokenToPiece(vocab.bos).length, 0)
  assert.equal(new TextDecoder().decode(vocab.tokenToPiece(vocab.bos, true)), '<s>')
  assert.ok(vocab.isEog(vocab.eos))
  assert.throws(() => vocab.tokenToPiece(vocab.nVocab), /not in 0\.\./)
})

test('BPE: detokenize inverts tokenize apart from the clean-up of spaces before punctuation', (t) => {
  const file = join(dir, 'ggml-vocab-gpt-2.gguf')
  if (!existsSync(file)) return t.skip(`no vocab files at ${dir}`)
  const vocab = new Vocab(weft.Gguf.open(file))
  assert.equal(vocab.detokenize(vocab.tokenize(' Hello, world! ', { addSpecial: false })), ' Hello, world! ')
  assert.equal(vocab.detokenize(vocab.tokenize('a ? b', { addSpecial: false })), 'a? b')
  assert.equal(vocab.detokenize(vocab.tokenize("it ' s", { addSpecial: false })), "it's")
  assert.equal(vocab.detokenize(vocab.tokenize('нещо 🦙', { addSpecial: false })), 'нещо 🦙')
})
