/**
 * The pure parts of the capabilities added as soju offers them: account-required refused in any CAP REQ, the ISUPPORT
 * tokens before registration, on a control connection and on a network, the SEARCH attributes (a table, then
 * generated input: never a throw, every bound kept), and stored channel events drawn back into lines for
 * draft/event-playback (a table, then generated rows: never a throw, never a line that breaks).
 */
import { describe, expect, it } from "@effect/vitest"
import fc from "fast-check"
import { ACCOUNT_REQUIRED, initialCapState, offeredCaps, onCap } from "../../src/listener/CapNegotiation.js"
import { isupportTokens } from "../../src/listener/IsupportReply.js"
import { type ClientView, storedEventLine } from "../../src/listener/MessageLines.js"
import { parseSearch, SEARCH_ATTRIBUTES, SEARCH_LIMIT, SEARCH_TEXT_CHARS, SEARCH_WORD_CHARS } from "../../src/listener/Search.js"
import { parseLine } from "../../src/irc/IrcLine.js"
import type { StoredMessage } from "../../src/services/history/MessageHistory.js"
import { MessageKind } from "../../src/schema/Message.js"

describe("account-required", () => {
  const ctx = { nick: "*", registered: false, offered: offeredCaps(undefined) }
  it("is offered", () => expect(ctx.offered.has(ACCOUNT_REQUIRED)).toBe(true))
  it.each([ACCOUNT_REQUIRED, `batch ${ACCOUNT_REQUIRED}`, `-${ACCOUNT_REQUIRED}`])("REQ %j is refused whole", (req) => {
    const out = onCap(initialCapState, ["REQ", req], ctx)
    expect(out.replies[0]?.params?.[1]).toBe("NAK")
    expect(out.state.enabled.size).toBe(0)
  })
})

describe("CAP LS before 302", () => {
  it("lists the capabilities on one line, which fits in 512 bytes: every one but drafts that do not fit", () => {
    const offered = offeredCaps(undefined)
    for (const nick of ["*", "a-nine-ch"]) {
      const ls = onCap(initialCapState, ["LS"], { nick, registered: false, offered })
      expect(ls.replies).toHaveLength(1)
      const listed = ls.replies[0]!.params!.at(-1)!.split(" ")
      expect(listed).toEqual([...offered.keys()].filter((cap) => listed.includes(cap)))
      expect([...offered.keys()].filter((cap) => !listed.includes(cap)).every((cap) => cap.startsWith("draft/"))).toBe(true)
      expect(`:belay CAP ${nick} LS :${ls.replies[0]!.params!.at(-1)!}\r\n`.length).toBeLessThanOrEqual(512)
    }
  })
})

describe("ISUPPORT tokens", () => {
  const upstream = { isupport: ["CHANTYPES=#", "CHATHISTORY=50", "NETWORK=Fake"], caps: ["message-tags"] }
  it("before registration: Belay's history tokens only", () =>
    expect(isupportTokens(undefined, undefined)).toEqual(["CHATHISTORY=1000", "MSGREFTYPES=msgid,timestamp"]))
  it("on a control connection: an empty CHANTYPES", () =>
    expect(isupportTokens(null, undefined)).toEqual(["CHANTYPES=", "CHATHISTORY=1000", "MSGREFTYPES=msgid,timestamp"]))
  it("on a network: the upstream's, Belay's own in place of the upstream's", () =>
    expect(isupportTokens(7, upstream)).toEqual([
      "CHANTYPES=#",
      "NETWORK=Fake",
      "BOUNCER_NETID=7",
      "CHATHISTORY=1000",
      "MSGREFTYPES=msgid,timestamp"
    ]))
  it("CLIENTTAGDENY=* when the upstream lacks message-tags", () =>
    expect(isupportTokens(7, { ...upstream, caps: [] })).toContain("CLIENTTAGDENY=*"))
})

describe("SEARCH attributes", () => {
  it.each([
    ["text=hello", { text: "hello", target: undefined, from: undefined, after: undefined, before: undefined, limit: SEARCH_LIMIT }],
    ["in=#chan;from=bob;text=two\\swords;limit=5", { text: "two words", target: "#chan", from: "bob", after: undefined, before: undefined, limit: 5 }],
    ["text=x;limit=5000", { text: "x", target: undefined, from: undefined, after: undefined, before: undefined, limit: SEARCH_LIMIT }],
    [
      "text=x;after=2024-01-01T00:00:00.000Z;before=2024-01-02T00:00:00Z;unknown=1",
      { text: "x", target: undefined, from: undefined, after: new Date("2024-01-01T00:00:00.000Z"), before: new Date("2024-01-02T00:00:00Z"), limit: SEARCH_LIMIT }
    ]
  ])("%j", (raw, expected) => expect(parseSearch([raw])).toEqual(expected))

  it.each([
    [[], "NEED_MORE_PARAMS", []],
    [[""], "NEED_MORE_PARAMS", []],
    [["in=#chan"], "INVALID_PARAMS", ["text"]],
    [["text=\\s\\s"], "INVALID_PARAMS", ["text"]],
    [[`text=${"a".repeat(SEARCH_TEXT_CHARS + 1)}`], "INVALID_PARAMS", ["text"]],
    [["text=x;limit=0"], "INVALID_PARAMS", ["limit"]],
    [["text=x;limit=-1"], "INVALID_PARAMS", ["limit"]],
    [["text=x;limit=1e3"], "INVALID_PARAMS", ["limit"]],
    [["text=x;after=yesterday"], "INVALID_PARAMS", ["after"]],
    [["text=x;before=2024-13-01T00:00:00Z"], "INVALID_PARAMS", ["before"]],
    [["text=x;in=a\\sb"], "INVALID_PARAMS", ["in"]],
    [[`text=x;from=${"n".repeat(SEARCH_WORD_CHARS + 1)}`], "INVALID_PARAMS", ["from"]],
    [[Array.from({ length: SEARCH_ATTRIBUTES + 1 }, (_, i) => `k${i}=v`).join(";")], "INVALID_PARAMS", ["*"]]
  ])("%j fails", (params, code, context) => {
    const out = parseSearch(params)
    expect(out).toMatchObject({ code, context })
  })

  const attribute = fc.oneof(
    fc.tuple(fc.constantFrom("in", "from", "after", "before", "text", "limit", "x", ""), fc.string({ unit: "binary", maxLength: 40 }))
      .map(([k, v]) => `${k}=${v}`),
    fc.string({ unit: "binary", maxLength: 40 }),
    fc.integer({ min: -5, max: 10_000_000 }).map((n) => `limit=${n}`),
    fc.date({ noInvalidDate: true }).map((d) => `after=${d.toISOString()}`)
  )
  it("never throws, and every request it answers keeps the bounds", () =>
    fc.assert(
      fc.property(fc.array(attribute, { maxLength: 24 }).map((a) => a.join(";")), fc.array(fc.string(), { maxLength: 2 }), (raw, more) => {
        const out = parseSearch([raw, ...more])
        if ("limit" in out) {
          expect(out.limit).toBeGreaterThanOrEqual(1)
          expect(out.limit).toBeLessThanOrEqual(SEARCH_LIMIT)
          expect(out.text.length).toBeLessThanOrEqual(SEARCH_TEXT_CHARS)
          expect(out.text.trim()).not.toBe("")
          expect(/[\r\n\0]/.test(out.text)).toBe(false)
          for (const w of [out.target, out.from]) if (w !== undefined) expect(w.length).toBeLessThanOrEqual(SEARCH_WORD_CHARS)
          for (const t of [out.after, out.before]) if (t !== undefined) expect(Number.isNaN(t.getTime())).toBe(false)
        } else {
          expect(["INVALID_PARAMS", "NEED_MORE_PARAMS"]).toContain(out.code)
        }
      }),
      { numRuns: 2000, seed: 20261206 }
    ))
})

describe("stored channel events as lines (event-playback)", () => {
  const view: ClientView = { caps: new Set(["server-time", "message-tags"]), selfNick: "alice", channelTypes: "#", prefixSymbols: "@+" }
  const row = (kind: StoredMessage["kind"], nick: string | null, text: string, self = false): StoredMessage => ({
    id: 42,
    networkId: 1,
    target: "#chan",
    time: new Date("2024-01-01T00:00:00.000Z"),
    kind,
    nick,
    text,
    numeric: null,
    self,
    encryption: "plain"
  })
  const words = (line: string | undefined) => {
    const parsed = line === undefined ? undefined : parseLine(line)
    return parsed === undefined ? undefined : [parsed.source?.nick, parsed.command, ...parsed.params]
  }
  it.each([
    [row("join", "dora", ""), ["dora", "JOIN", "#chan"]],
    [row("part", "dora", ""), ["dora", "PART", "#chan"]],
    [row("part", "dora", "bye now"), ["dora", "PART", "#chan", "bye now"]],
    [row("quit", "dora", "Ping timeout"), ["dora", "QUIT", "Ping timeout"]],
    [row("kick", "bob", "dora (too loud)"), ["bob", "KICK", "#chan", "dora", "too loud"]],
    [row("kick", "bob", "dora"), ["bob", "KICK", "#chan", "dora", "dora"]],
    [row("kick", "bob", "dora (a (nested) reason)"), ["bob", "KICK", "#chan", "dora", "a (nested) reason"]],
    [row("nick", "dora", "dorothy"), ["dora", "NICK", "dorothy"]],
    [row("mode", "bob", "+ov dora carol"), ["bob", "MODE", "#chan", "+ov", "dora", "carol"]],
    [row("topic", "bob", "new topic"), ["bob", "TOPIC", "#chan", "new topic"]],
    [row("topic", "bob", ""), ["bob", "TOPIC", "#chan", ""]],
    [row("privmsg", "bob", "hello"), undefined],
    [row("join", null, ""), undefined],
    [row("nick", "dora", ""), undefined],
    [row("mode", "bob", "  "), undefined]
  ])("%#", (r, expected) => expect(words(storedEventLine(r, view))).toEqual(expected))

  it("carries time and msgid, the member's own source, and the extended JOIN", () => {
    const line = storedEventLine(row("join", "alice", "", true), { ...view, caps: new Set([...view.caps, "extended-join"]) }, {
      selfSource: "alice!a@host"
    })
    expect(line).toBe("@time=2024-01-01T00:00:00.000Z;msgid=42 :alice!a@host JOIN #chan * alice")
  })

  it("never throws and never breaks a line, whatever was stored", () =>
    fc.assert(
      fc.property(
        fc.constantFrom(...MessageKind.literals),
        fc.option(fc.string({ unit: "binary", maxLength: 30 }), { nil: null }),
        fc.string({ unit: "binary", maxLength: 200 }),
        fc.boolean(),
        (kind, nick, text, self) => {
          const line = storedEventLine(row(kind, nick, text, self), view, { selfSource: "alice!a@host" })
          if (line === undefined) return
          expect(/[\r\n\0]/.test(line)).toBe(false)
          expect(parseLine(line)).toBeDefined()
        }
      ),
      { numRuns: 3000, seed: 20261206 }
    ))
})
