// Process memory as Linux reports it (VmRSS now, VmHWM = peak), for the example's memory line.
import { readFileSync } from 'node:fs'

function statusKb(key: string): number | null {
  try {
    const line = readFileSync('/proc/self/status', 'utf8')
      .split('\n')
      .find((l) => l.startsWith(key))
    return line ? Number(line.split(/\s+/)[1]) * 1024 : null
  } catch {
    return null
  }
}

/** Peak resident memory in bytes (VmHWM); the current RSS where the platform has no peak. */
export function peakRss(): number {
  return statusKb('VmHWM:') ?? process.memoryUsage().rss
}

export function mib(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(2)} MiB`
}
