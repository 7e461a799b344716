// A node:test reporter that prints one closing line for the whole run:
// "N passed, N failed, N skipped" (leaf tests only; suites are not counted).
export default async function* summary(source) {
  let passed = 0
  let failed = 0
  let skipped = 0
  for await (const event of source) {
    const data = event.data
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue
    if (data?.details?.type === 'suite') continue
    if (event.type === 'test:fail') failed++
    else if (data.skip || data.todo) skipped++
    else passed++
  }
  yield `${passed} passed, ${failed} failed, ${skipped} skipped\n`
}
