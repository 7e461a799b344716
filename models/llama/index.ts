// weft-ml/llama: llama-family inference from a GGUF file on weft's ops.
export { Vocab, ATTR, type TokenizeOptions, type VocabType } from './vocab.ts'
export { readHParams, ModelFormatError, type HParams, type Arch, type RopeSettings } from './hparams.ts'
