/**
 * LineReader: splits what an IRC client sends into lines (RFC 1459 §2.3: CR-LF, LF accepted), bounded: a line longer
 * than MAX_CLIENT_LINE_BYTES (IRCv3 message-tags: 8191 bytes of tags, plus the 512 of RFC 1459) is dropped whole and
 * reported, so a client that never sends a line break holds at most that much memory. Mutable; one per connection,
 * driven by its socket's data callbacks only.
 */

export const MAX_CLIENT_LINE_BYTES = 8191 + 512

export type ReadItem = { readonly _tag: "Line"; readonly line: string } | { readonly _tag: "TooLong" }

export class LineReader {
  private pending: Buffer = Buffer.alloc(0)
  private discarding = false

  /** The complete lines in `chunk` (with what was pending), in order; empty lines are skipped. */
  push(chunk: Buffer): Array<ReadItem> {
    const out: Array<ReadItem> = []
    let data = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk])
    for (;;) {
      const lf = data.indexOf(0x0a)
      if (lf === -1) break
      const raw = data.subarray(0, lf)
      data = data.subarray(lf + 1)
      if (this.discarding) {
        this.discarding = false
        continue
      }
      const end = raw.length > 0 && raw[raw.length - 1] === 0x0d ? raw.length - 1 : raw.length
      if (end > MAX_CLIENT_LINE_BYTES) {
        out.push({ _tag: "TooLong" })
        continue
      }
      const line = raw.subarray(0, end).toString("utf8")
      if (line.trim() !== "") out.push({ _tag: "Line", line })
    }
    if (data.length > MAX_CLIENT_LINE_BYTES + 1) {
      if (!this.discarding) out.push({ _tag: "TooLong" })
      this.discarding = true
      data = Buffer.alloc(0)
    }
    this.pending = Buffer.from(data)
    return out
  }
}
