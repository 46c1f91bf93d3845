/**
 * Live channel events with their stored msgid (LiveOrder.ts, EventStamps.ts, MessageLines.relayedLine): a line that
 * names its rows waits for them (and the lines after it wait behind it), then goes out with the first row's msgid and
 * time; a row announced before its line came still stamps it; a row that never comes lets the line go unstamped, at
 * once when a later number shows it was dropped, else after HOLD_LIMIT; a line without rows is not held for any;
 * another node's line keeps the stamp it came with; a line held while a client binds goes only to the clients bound
 * before it arrived (the later one's welcome has it); and the stamp reaches a client as `msgid` only with
 * message-tags, as `time` only with server-time.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { HOLD_LIMIT, makeLiveOrder } from "../../src/listener/LiveOrder.js"
import { makeSessionHub, type SessionHandle } from "../../src/listener/SessionHub.js"
import { type ClientView, relayedLine } from "../../src/listener/MessageLines.js"
import type { FeedLine } from "../../src/services/events/NetworkFeed.js"
import type { MessageKind, StoredRow } from "../../src/services/history/MessageRow.js"
import { storedRow } from "../support/MessageFixtures.js"

const row = storedRow

/** A stored channel event: id `id`, stored at `time` ms. */
const event = (id: number, kind: MessageKind, time: number, networkId = 1): StoredRow => ({
  ...storedRow(id, networkId),
  kind,
  time: new Date(time)
})

const line = (text: string, after: number, rows?: readonly [number, number]): FeedLine => ({
  accountId: 1,
  networkId: 1,
  line: text,
  time: 0,
  after,
  ...(rows !== undefined ? { rows } : {})
})

const harness = () => {
  const out: Array<string> = []
  let now = 0
  const order = makeLiveOrder({
    rows: (networkId, rows) => out.push(...rows.map((r) => `${networkId}:${r.text}`)),
    line: (l) => out.push(`${l.networkId}:${l.line}${l.stamp !== undefined ? ` msgid=${l.stamp.msgid} time=${l.stamp.time}` : ""}`),
    holding: () => {}
  }, () => now)
  return { order, out, advance: (ms: number) => (now += ms) }
}

describe("live channel events with their stored msgid", () => {
  it.effect("a line waits for its own row and takes its msgid and time; the lines after it keep their place", () =>
    Effect.sync(() => {
      const { order, out } = harness()
      // Conversation row 1, then the TOPIC became row 2 (no upstream msgid); a numeric came after it.
      order.line(line(":d TOPIC #c :new", 1, [2, 2]))
      order.line(line(":irc 324 alice #c +nt", 1))
      order.stored([row(10)], [1])
      expect(out).toEqual(["1:row 10"])
      order.stored([event(11, "topic", 5000), row(12)], [2, 3])
      expect(out).toEqual([
        "1:row 10",
        "1:row 11",
        "1::d TOPIC #c :new msgid=11 time=5000",
        "1::irc 324 alice #c +nt",
        "1:row 12"
      ])
      expect(order.holdingAny()).toBe(false)
    }))

  it.effect("a QUIT stored in several channels takes the first row's msgid, and goes after all of them", () =>
    Effect.sync(() => {
      const { order, out } = harness()
      order.line(line(":b QUIT :bye", 0, [1, 3]))
      order.stored([event(20, "quit", 7000), event(21, "quit", 7000)], [1, 2])
      expect(out).toEqual(["1:row 20", "1:row 21"])
      order.stored([event(22, "quit", 7000)], [3])
      expect(out).toEqual(["1:row 20", "1:row 21", "1:row 22", "1::b QUIT :bye msgid=20 time=7000"])
    }))

  it.effect("its row announced before the line came: the line goes at once, stamped; an upstream msgid is the row's", () =>
    Effect.sync(() => {
      const { order, out } = harness()
      order.stored([{ ...event(30, "join", 1000), msgid: "up-30" }, event(31, "mode", 2000)], [1, 2])
      order.line(line(":d JOIN #c", 0, [1, 1]))
      order.line(line(":b MODE #c +v d", 0, [2, 2]))
      expect(out.slice(2)).toEqual(["1::d JOIN #c msgid=up-30 time=1000", "1::b MODE #c +v d msgid=31 time=2000"])
    }))

  it.effect("a row that never comes: a later number announced lets the line go unstamped; else HOLD_LIMIT does", () =>
    Effect.sync(() => {
      const { order, out, advance } = harness()
      // Row 2 (the PART's) was refused and dropped: row 3 announced says so.
      order.line(line(":c PART #c", 1, [2, 2]))
      order.stored([row(40)], [1])
      order.stored([row(41)], [3])
      expect(out).toEqual(["1:row 40", "1::c PART #c", "1:row 41"])
      // The database is down: the KICK's row 4 does not come; the line goes after HOLD_LIMIT, without a msgid.
      order.line(line(":b KICK #c d", 3, [4, 4]))
      advance(Duration.toMillis(HOLD_LIMIT) - 1)
      order.releaseOverdue()
      expect(out.at(-1)).toBe("1:row 41")
      advance(1)
      order.releaseOverdue()
      expect(out.at(-1)).toBe("1::b KICK #c d")
      expect(order.holdingAny()).toBe(false)
    }))

  it.effect("a line that names no rows (not stored, or with the upstream's msgid) waits for nothing more", () =>
    Effect.sync(() => {
      const { order, out } = harness()
      order.stored([row(50)], [1])
      order.line(line("@msgid=up :d NICK e", 1))
      order.line(line(":irc 433 alice e :in use", 1))
      expect(out).toEqual(["1:row 50", "1:@msgid=up :d NICK e", "1::irc 433 alice e :in use"])
    }))

  it.effect("another node's line keeps the stamp it came with", () =>
    Effect.sync(() => {
      const { order, out } = harness()
      order.line({ accountId: 1, networkId: 3, line: ":d JOIN #c", time: 0, afterId: 0, stamp: { msgid: "77", time: 9000 } })
      expect(out).toEqual(["3::d JOIN #c msgid=77 time=9000"])
    }))
})

describe("a line held while a client binds", () => {
  it.effect("goes to the clients bound before it arrived, not to the one bound meanwhile", () =>
    Effect.sync(() => {
      const got: Array<string> = []
      const hub = makeSessionHub({
        // Auto-away is not what this test looks at: its forks do nothing.
        control: {} as never,
        networks: {} as never,
        fork: () => {},
        arrived: () => order.arrived()
      })
      const session = (id: number): SessionHandle => ({
        id,
        accountId: 1,
        networkId: 1,
        offer: (e) => void (e._tag === "Line" && got.push(`${id}:${e.line.line}`)),
        present: true
      })
      const order = makeLiveOrder({
        rows: () => {},
        line: (l, arrival) => {
          for (const s of hub.ofNetwork(l.networkId)) if (hub.boundBefore(s, arrival)) s.offer({ _tag: "Line", line: l })
        },
        holding: () => {}
      }, () => 0)
      hub.attach(session(1))
      order.line(line(":d TOPIC #c :new", 0, [1, 1]))
      hub.attach(session(2))
      order.line(line(":irc 324 alice #c +nt", 0))
      hub.attach(session(3))
      order.stored([event(60, "topic", 1000)], [1])
      expect(got).toEqual(["1::d TOPIC #c :new", "1::irc 324 alice #c +nt", "2::irc 324 alice #c +nt"])
      order.line(line(":d PART #c", 1))
      expect(got.slice(3)).toEqual(["1::d PART #c", "2::d PART #c", "3::d PART #c"])
    }))
})

describe("a stamped line as each client gets it", () => {
  const view = (caps: ReadonlyArray<string>): ClientView => ({
    caps: new Set(caps),
    selfNick: "alice",
    channelTypes: "#&",
    prefixSymbols: "@+"
  })
  const stamp = { msgid: "42", time: Date.parse("2024-05-06T07:08:09.123Z") }
  const raw = "@time=2024-05-06T07:08:09.1Z;msgid=up7 :d!u@h TOPIC #c :new topic"
  it.each([
    ["message-tags and server-time: the row's msgid and time", ["message-tags", "server-time"], "@time=2024-05-06T07:08:09.123Z;msgid=42 :d!u@h TOPIC #c :new topic"],
    ["server-time alone: the row's time, no msgid", ["server-time"], "@time=2024-05-06T07:08:09.123Z :d!u@h TOPIC #c :new topic"],
    ["neither: no tags, as before", [], ":d!u@h TOPIC #c :new topic"]
  ])("%s", (_name, caps, expected) => expect(relayedLine(raw, 1000, view(caps), { stamp })).toBe(expected))

  it("without a stamp the line is relayed as before", () =>
    expect(relayedLine(raw, 1000, view(["message-tags", "server-time"]))).toBe(
      "@time=2024-05-06T07:08:09.1Z;msgid=up7 :d!u@h TOPIC #c :new topic"
    ))
})
