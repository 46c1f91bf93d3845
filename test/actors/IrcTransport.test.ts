// LeanNetTransport (src/actors/IrcTransport.ts): irc-framework's socket class with the same lines out, whatever way the
// reads cut them, but keeping no slice of a read buffer between reads — nothing when the read ended on a line break,
// and a copy in memory of its own when a partial line waits for the next read; and the keepalive's PONG noted, not
// passed on.
import { describe, expect, it } from "vitest"
import { LeanNetTransport } from "../../src/actors/IrcTransport.js"

const transport = () => {
  const t = new LeanNetTransport({ encoding: "utf8" })
  // connect() would set these; the lines are decoded with the encoding.
  t.incoming_buffer = Buffer.from("")
  ;(t as unknown as { setEncoding: (e: string) => boolean }).setEncoding("utf8")
  const lines: Array<string> = []
  ;(t as unknown as { on: (e: string, f: (l: string) => void) => void }).on("line", (line) => lines.push(line))
  return { t, lines }
}

describe("LeanNetTransport", () => {
  it("emits every line however the reads cut them, and keeps no read buffer once a read ends on a line break", () => {
    const { t, lines } = transport()
    t.onSocketData(Buffer.from(":s 001 me :Welcome\r\nPING :a"))
    expect(lines).toEqual([":s 001 me :Welcome\r\n"])
    // The partial line is its own memory, not a slice of the joined (pooled) buffer.
    expect(t.incoming_buffer.toString()).toBe("PING :a")
    expect(t.incoming_buffer.buffer.byteLength).toBe(t.incoming_buffer.length)
    t.onSocketData(Buffer.from("bc\r\n:s PRIVMSG me :é\r\n"))
    expect(lines).toEqual([":s 001 me :Welcome\r\n", "PING :abc\r\n", ":s PRIVMSG me :é\r\n"])
    expect(t.incoming_buffer.length).toBe(0)
    expect(t.incoming_buffer.buffer.byteLength).toBe(0)
  })

  it("keeps the keepalive's answer to itself (noted, not passed on); every other line passes, token or not", () => {
    const { t, lines } = transport()
    expect(t.keepaliveAnswered).toBe(false)
    const passed = [
      ":s PONG s :belay-mode-1\r\n",
      ":s PRIVMSG me :belay-keepalive\r\n",
      ":s PONG s :belay-keepalive now\r\n",
      ":s PONG s :belay-keepalive2\r\n",
      ":s PONG s :x belay-keepalive\r\n"
    ]
    t.onSocketData(Buffer.from(passed.join("")))
    expect(lines).toEqual(passed)
    expect(t.keepaliveAnswered).toBe(false)

    // Trailing or not, with tags and a source or without, and cut across two reads.
    const answers = [
      ":s PONG s :belay-keepalive\r\n",
      "@time=2026-11-27T21:00:00.000Z :s PONG s belay-keepalive\r\n",
      "PONG belay-keepalive\n"
    ]
    for (const answer of answers) {
      t.keepaliveAnswered = false
      t.onSocketData(Buffer.from(answer.slice(0, 9)))
      expect(t.keepaliveAnswered).toBe(false)
      t.onSocketData(Buffer.from(answer.slice(9)))
      expect(t.keepaliveAnswered).toBe(true)
    }
    expect(lines).toEqual(passed)
  })
})
