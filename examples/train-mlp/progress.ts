// A one-line progress bar on stderr, redrawn in place; silent when stderr is not a
// terminal, so logs and pipes get only the results printed on stdout.

export class Progress {
  private readonly live = process.stderr.isTTY === true
  private last = 0

  constructor(private readonly total: number, private readonly width = 30) {}

  /** Redraw for `done` of `total` units (at most every 50 ms, and always at the end). */
  update(done: number, label: string): void {
    if (!this.live) return
    const now = Date.now()
    if (done < this.total && now - this.last < 50) return
    this.last = now
    const filled = Math.round((this.width * done) / this.total)
    const bar = '#'.repeat(filled) + '-'.repeat(this.width - filled)
    process.stderr.write(`\r[${bar}] ${((100 * done) / this.total).toFixed(0).padStart(3)}% ${label}\x1b[K`)
  }

  /** Erase the bar (before printing a result line, and at the end). */
  clear(): void {
    if (this.live) process.stderr.write('\r\x1b[K')
  }
}
