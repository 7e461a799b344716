// Loaded into every test process (package.json's test:js, `--import`): a panic weft caught
// is a bug even when the test that hit it passed (its error may have been expected), so the
// process fails at exit if weft.caughtPanics() counted any.
import { weft } from './helpers.ts'

process.on('exit', () => {
  const n = weft.caughtPanics()
  if (n > 0) {
    console.error(`weft caught ${n} panic(s) in this test process: each is a bug (see WEFT_INTERNAL errors above)`)
    process.exitCode = 1
  }
})
