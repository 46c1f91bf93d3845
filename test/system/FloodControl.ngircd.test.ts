// System test: outbound flood control against a real ngircd 26 on a free loopback port, through NetworkControl over
// the real services and irc-framework. Belay reaches ngircd through a TCP relay in this process that timestamps every
// line Belay writes, so the pacing measured is Belay's own output: ngircd only slows a flooding client (its
// PENALTY), where InspIRCd and Solanum disconnect it with "Excess Flood", so what arrives at the peer alone could not
// tell a paced client from a throttled one.
//
// Proves: 60 lines sent as fast as send_message answers arrive at a peer complete and in order, the connection stays
// up (one connection through the relay, still connected), and no one-second window of Belay's output holds more
// than FLOOD_BURST lines (5 at once, then one every 2 s: about 2 minutes for the 60).
import * as Net from "node:net"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, type Scope } from "effect"
import { FLOOD_BURST, FLOOD_INTERVAL } from "../../src/actors/ReconnectPolicy.js"
import { freePort } from "../support/BelayProcess.js"
import { eventually } from "../support/Eventually.js"
import { NGIRCD, ngircd, ngircdNetwork, peer } from "../support/Ngircd.js"
import { accountWithNetwork, startSupervisor, withTestServices } from "../support/TestServices.js"

const LINES = 60
/** The burst goes at once, then one line per interval; plus room for a slow machine. */
const SENDING = Duration.sum(Duration.times(FLOOD_INTERVAL, LINES - FLOOD_BURST), Duration.seconds(30))

interface Relay {
  readonly port: number
  /** Every line the client wrote, with the time (ms) the relay read it, in order. */
  readonly written: () => ReadonlyArray<{ readonly at: number; readonly line: string }>
  readonly connections: () => number
}

/** A TCP relay from a free loopback port to `target`, timestamping the client's lines; closed with the scope. */
const relay = (target: number): Effect.Effect<Relay, never, Scope.Scope> =>
  Effect.gen(function*() {
    const port = yield* freePort
    const written: Array<{ at: number; line: string }> = []
    const sockets = new Set<Net.Socket>()
    let connections = 0
    const server = Net.createServer((client) => {
      connections++
      const upstream = Net.connect({ host: "127.0.0.1", port: target })
      sockets.add(client).add(upstream)
      let pending = ""
      client.setEncoding("utf8")
      client.on("data", (chunk: string) => {
        const at = performance.now()
        pending += chunk
        const parts = pending.split("\r\n")
        pending = parts.pop() ?? ""
        for (const line of parts) written.push({ at, line })
        upstream.write(chunk)
      })
      upstream.on("data", (chunk) => client.write(chunk))
      const close = () => {
        client.destroy()
        upstream.destroy()
      }
      client.on("close", close).on("error", close)
      upstream.on("close", close).on("error", close)
    })
    yield* Effect.acquireRelease(
      Effect.async<void>((resume) => {
        server.listen(port, "127.0.0.1", () => resume(Effect.void))
      }),
      () =>
        Effect.async<void>((resume) => {
          for (const s of sockets) s.destroy()
          server.close(() => resume(Effect.void))
        })
    )
    return { port, written: () => [...written], connections: () => connections }
  })

/** The most lines in any window of `ms` milliseconds (two pointers over times in order). */
const busiestWindow = (times: ReadonlyArray<number>, ms: number) => {
  let most = 0
  for (let i = 0, j = 0; i < times.length; i++) {
    while (times[i]! - times[j]! >= ms) j++
    most = Math.max(most, i - j + 1)
  }
  return most
}

describe("outbound flood control against ngircd", () => {
  it.live.skipIf(NGIRCD.skip)(
    `${LINES} lines sent at once arrive complete and in order, paced at most ${FLOOD_BURST} a second, the link up`,
    () =>
      withTestServices(Effect.gen(function*() {
        const server = yield* ngircd
        const link = yield* relay(server.port)
        const { control } = yield* startSupervisor()
        const id = yield* accountWithNetwork("flood", ngircdNetwork(link.port, ["#flood"]))
        yield* eventually("the network connected", control.status(id), (s) => s.state === "connected")
        const other = yield* peer(server.port, "peer")
        yield* other.send("JOIN #flood")
        yield* other.waitFor((l) => / 366 /.test(l))
        yield* eventually(
          "belaybot and peer in #flood",
          Effect.orElseSucceed(control.members(id, "#flood"), () => []),
          (members) => ["belaybot", "peer"].every((n) => members.some((m) => m.nick === n))
        )

        const texts = Array.from({ length: LINES }, (_, i) => `flood line ${i + 1} of ${LINES}`)
        const before = link.written().length
        const calls = performance.now()
        // As fast as the tool answers: each call returns once its line is queued.
        for (const text of texts) yield* control.say(id, "privmsg", "#flood", text)
        const callsMs = performance.now() - calls

        const arrived = (lines: ReadonlyArray<string>) =>
          lines.filter((l) => l.startsWith(":belaybot!") && l.includes(" PRIVMSG #flood :")).map((l) =>
            l.slice(l.indexOf(" PRIVMSG #flood :") + " PRIVMSG #flood :".length)
          )
        const received = yield* eventually(
          `all ${LINES} lines at the peer`,
          Effect.map(other.received, arrived),
          (got) => got.length >= LINES,
          SENDING
        )
        expect(received).toEqual(texts)

        // The link never dropped: one connection through the relay, still registered, nothing but our lines quit.
        expect(link.connections()).toBe(1)
        expect((yield* control.status(id)).state).toBe("connected")
        expect((yield* other.received).some((l) => l.startsWith(":belaybot!") && l.includes(" QUIT "))).toBe(false)

        // Belay's own output from the first of these lines on: PONGs (irc-framework's, outside the bucket) aside.
        const output = link.written().slice(before).filter((w) => !w.line.startsWith("PONG "))
        const privmsgs = output.filter((w) => w.line.startsWith("PRIVMSG #flood "))
        expect(privmsgs.map((w) => w.line.slice(w.line.indexOf(":") + 1))).toEqual(texts)
        const times = output.map((w) => w.at)
        const busiest = busiestWindow(times, 1000)
        expect(busiest).toBeLessThanOrEqual(FLOOD_BURST)
        const paced = privmsgs.slice(FLOOD_BURST).map((w) => w.at)
        const gaps = paced.slice(1).map((t, i) => t - paced[i]!)
        console.log(
          `flood control against ngircd: ${LINES} send_message calls answered in ${Math.round(callsMs)} ms; ` +
            `busiest 1 s window ${busiest} lines; the last line ${((privmsgs.at(-1)!.at - privmsgs[0]!.at) / 1000).toFixed(1)} s ` +
            `after the first; gaps beyond the burst ${Math.round(Math.min(...gaps))}–${Math.round(Math.max(...gaps))} ms`
        )
      })),
    { timeout: 240_000 }
  )
})
