import { describe, expect, it } from "@effect/vitest"
import { Either, Option } from "effect"
import { parseLine } from "../../../src/irc/IrcLine.js"
import { applyISupport, defaultISupport, type ISupport } from "../../../src/irc/ISupport.js"
import {
  type Completion,
  emptyModeListRequests,
  expire,
  isListLetter,
  type ListLetter,
  MAX_ORPHANS,
  type ModeListRequests,
  onLine,
  outcome,
  pendingRequests,
  register,
  reset
} from "../../../src/actors/network/ModeListRequests.js"
import { Refused, Timeout } from "../../../src/schema/ToolErrors.js"

// Solanum (Libera): q is a type A quiet list.
const solanum: ISupport = applyISupport(defaultISupport, ["me", "CHANMODES=eIbq,k,flj,imnpst", "PREFIX=(ov)@+", "x y"])
const ngircd: ISupport = applyISupport(defaultISupport, ["me", "CHANMODES=beI,k,l,imnpst", "PREFIX=(qaohv)~&@%+", "x y"])
const ctx = { caseMapping: "rfc1459" as const, isupport: solanum }

/** A tiny driver: register requests, feed server lines, record what each line did. */
class Harness {
  state: ModeListRequests = emptyModeListRequests
  sent: Array<string> = []
  completed: Array<Completion> = []
  consumed: Array<boolean> = []

  ask(requestId: number, channel: string, letter: ListLetter): ReadonlyArray<string> {
    const r = register(this.state, { channel, letter, requestId }, ctx.caseMapping)
    this.state = r.state
    this.sent.push(...r.lines)
    return r.lines
  }

  /** The PING tokens of the n-th query sent (0-based). */
  tokens(n: number): { open: string; close: string } {
    const pings = this.sent.filter((l) => l.startsWith("PING "))
    return { open: pings[2 * n]?.slice(5) ?? "?", close: pings[2 * n + 1]?.slice(5) ?? "?" }
  }

  server(...raws: ReadonlyArray<string>): ReadonlyArray<boolean> {
    const out: Array<boolean> = []
    for (const raw of raws) {
      const line = parseLine(raw)
      if (line === undefined) throw new Error(`unparsable ${raw}`)
      const r = onLine(this.state, line, ctx)
      this.state = r.state
      this.completed.push(...r.completed)
      out.push(r.consumed)
    }
    this.consumed.push(...out)
    return out
  }

  pong(token: string): ReadonlyArray<boolean> {
    return this.server(`:irc.test PONG irc.test :${token}`)
  }

  result(requestId: number) {
    return this.completed.find((c) => c.requestId === requestId)?.result
  }
}

describe("register", () => {
  it("fences the MODE query between two PINGs", () => {
    const h = new Harness()
    expect(h.ask(1, "#chan", "b")).toEqual(["PING belay-ml-1-open", "MODE #chan b", "PING belay-ml-1-close"])
    expect(pendingRequests(h.state)).toEqual([1])
  })

  it("coalesces a second request for the same channel (casemapped) and letter", () => {
    const h = new Harness()
    h.ask(1, "#Chan[1]", "b")
    expect(h.ask(2, "#chan{1}", "b")).toEqual([])
    expect(h.ask(3, "#chan{1}", "e")).toHaveLength(3)
    const { open, close } = h.tokens(0)
    h.pong(open)
    h.server(":irc.test 367 me #chan{1} *!*@a alice 1700000000", ":irc.test 368 me #chan{1} :End of Channel Ban List")
    h.pong(close)
    const expected = {
      _tag: "Entries",
      channel: "#Chan[1]",
      letter: "b",
      entries: [{ mask: "*!*@a", setBy: "alice", setAt: "2023-11-14T22:13:20.000Z" }]
    }
    expect(h.result(1)).toEqual(expected)
    expect(h.result(2)).toEqual(expected)
    expect(h.result(3)).toBeUndefined()
  })
})

describe("replies", () => {
  it.each<{ name: string; letter: ListLetter; lines: ReadonlyArray<string>; mask: string }>([
    { name: "bans 367/368", letter: "b", lines: ["367 me #c m1 op 1700000000", "368 me #c :End"], mask: "m1" },
    { name: "exceptions 348/349", letter: "e", lines: ["348 me #c m1 op 1700000000", "349 me #c :End"], mask: "m1" },
    { name: "invite exceptions 346/347", letter: "I", lines: ["346 me #c m1 op 1700000000", "347 me #c :End"], mask: "m1" },
    { name: "quiets 728/729", letter: "q", lines: ["728 me #c q m1 op 1700000000", "729 me #c q :End"], mask: "m1" }
  ])("reads $name", ({ letter, lines, mask }) => {
    const h = new Harness()
    h.ask(1, "#c", letter)
    h.pong(h.tokens(0).open)
    expect(h.server(...lines.map((l) => `:irc.test ${l}`))).toEqual([true, true])
    expect(h.result(1)).toEqual({
      _tag: "Entries",
      channel: "#c",
      letter,
      entries: [{ mask, setBy: "op", setAt: "2023-11-14T22:13:20.000Z" }]
    })
  })

  it("keeps entries in order; setter and time may be missing", () => {
    const h = new Harness()
    h.ask(1, "#c", "b")
    h.pong(h.tokens(0).open)
    h.server(
      ":irc.test 367 me #c a!*@* op!o@h 1700000000",
      ":irc.test 367 me #c b!*@*",
      ":irc.test 367 me #c c!*@* op",
      ":irc.test 367 me #c d!*@* op notanumber",
      ":irc.test 368 me #c :End of Channel Ban List"
    )
    expect(h.result(1)).toEqual({
      _tag: "Entries",
      channel: "#c",
      letter: "b",
      entries: [
        { mask: "a!*@*", setBy: "op!o@h", setAt: "2023-11-14T22:13:20.000Z" },
        { mask: "b!*@*", setBy: null, setAt: null },
        { mask: "c!*@*", setBy: "op", setAt: null },
        { mask: "d!*@*", setBy: "op", setAt: null }
      ]
    })
  })

  it("an empty list is a success with no entries", () => {
    const h = new Harness()
    h.ask(1, "#c", "I")
    h.pong(h.tokens(0).open)
    h.server(":irc.test 347 me #c :End of Channel Invite List")
    expect(h.result(1)).toEqual({ _tag: "Entries", channel: "#c", letter: "I", entries: [] })
  })

  it("never crosses interleaved replies for #a b and #b e", () => {
    const h = new Harness()
    h.ask(1, "#a", "b")
    h.ask(2, "#b", "e")
    h.pong(h.tokens(0).open)
    h.pong(h.tokens(1).open)
    const consumed = h.server(
      ":irc.test 367 me #a a1",
      ":irc.test 348 me #b b1",
      ":irc.test 367 me #b not-ours", // #b's ban list was never asked for
      ":irc.test 348 me #a not-ours", // nor #a's exceptions
      ":irc.test 367 me #A a2",
      ":irc.test 349 me #b :End",
      ":irc.test 368 me #a :End"
    )
    expect(consumed).toEqual([true, true, false, false, true, true, true])
    expect(h.result(1)).toMatchObject({ _tag: "Entries", entries: [{ mask: "a1" }, { mask: "a2" }] })
    expect(h.result(2)).toMatchObject({ _tag: "Entries", entries: [{ mask: "b1" }] })
  })

  it("leaves a list the user asked for with send_raw to the server buffer", () => {
    const h = new Harness()
    h.ask(1, "#c", "b")
    // Before our opening PONG: these answer a MODE #c b sent earlier, not ours.
    expect(h.server(":irc.test 367 me #c raw1", ":irc.test 368 me #c :End")).toEqual([false, false])
    h.pong(h.tokens(0).open)
    h.server(":irc.test 367 me #c mine", ":irc.test 368 me #c :End")
    expect(h.result(1)).toMatchObject({ entries: [{ mask: "mine" }] })
    // After the answer, a repeat of the list is someone else's again.
    expect(h.server(":irc.test 367 me #c raw2")).toEqual([false])
  })

  it("consumes our PONGs and nobody else's", () => {
    const h = new Harness()
    h.ask(1, "#c", "b")
    expect(h.server(":irc.test PONG irc.test :keepalive-42")).toEqual([false])
    expect(h.pong(h.tokens(0).open)).toEqual([true])
    h.server(":irc.test 368 me #c :End")
    expect(h.pong(h.tokens(0).close)).toEqual([true])
    expect(h.state.queries).toEqual([])
  })

  it("swallows a PONG of ours that outlived its query (reset, dropped orphan)", () => {
    const h = new Harness()
    h.ask(1, "#c", "b")
    h.state = reset(h.state).state
    expect(h.pong(h.tokens(0).open)).toEqual([true])
    expect(h.completed).toEqual([])
  })
})

describe("refusals", () => {
  it("a 482 goes to the waiter for its channel", () => {
    const h = new Harness()
    h.ask(1, "#a", "b")
    h.ask(2, "#b", "b")
    h.pong(h.tokens(0).open)
    h.pong(h.tokens(1).open)
    expect(h.server(":irc.test 482 me #b :You're not channel operator")).toEqual([true])
    expect(h.result(2)).toEqual({ _tag: "Refused", numeric: "482", text: "You're not channel operator" })
    expect(h.result(1)).toBeUndefined()
    h.server(":irc.test 367 me #a m", ":irc.test 368 me #a :End")
    expect(h.result(1)).toMatchObject({ _tag: "Entries", entries: [{ mask: "m" }] })
  })

  it("a 482 answering an earlier TOPIC (before our opening PONG) is not ours", () => {
    // InspIRCd refuses TOPIC, +k and +b with 482s that differ only in text; ngircd's text is always the same.
    const h = new Harness()
    h.ask(1, "#a", "b")
    expect(h.server(":irc.test 482 me #a :You do not have access to change the topic on this channel")).toEqual([false])
    h.pong(h.tokens(0).open)
    h.server(":irc.test 367 me #a m", ":irc.test 368 me #a :End")
    expect(h.result(1)).toMatchObject({ _tag: "Entries" })
    // And a refusal of a command sent after our query arrives after our answer: not ours either.
    expect(h.server(":irc.test 482 me #a :You're not channel operator")).toEqual([false])
  })

  it.each<{ name: string; letter: ListLetter; line: string; numeric: string }>([
    { name: "403 no such channel", letter: "b", line: "403 me #a :No such channel", numeric: "403" },
    { name: "442 not on channel", letter: "e", line: "442 me #a :You're not on that channel", numeric: "442" },
    { name: "401 (InspIRCd for a missing channel)", letter: "b", line: "401 me #a :No such nick/channel", numeric: "401" },
    { name: "479 illegal name", letter: "b", line: "479 me #a :Illegal channel name", numeric: "479" },
    { name: "472 with our letter", letter: "e", line: "472 me e :is unknown mode char to me", numeric: "472" },
    { name: "481 without a channel", letter: "I", line: "481 me :Permission Denied", numeric: "481" }
  ])("$name answers refused", ({ letter, line, numeric }) => {
    const h = new Harness()
    h.ask(1, "#a", letter)
    h.pong(h.tokens(0).open)
    expect(h.server(`:irc.test ${line}`)).toEqual([true])
    expect(h.result(1)).toMatchObject({ _tag: "Refused", numeric })
  })

  it.each([
    { name: "472 for another letter", line: "472 me x :is unknown mode char to me" },
    { name: "a refusal naming another channel", line: "482 me #other :You're not channel operator" }
  ])("$name is not ours", ({ line }) => {
    const h = new Harness()
    h.ask(1, "#a", "b")
    h.pong(h.tokens(0).open)
    expect(h.server(`:irc.test ${line}`)).toEqual([false])
    expect(h.completed).toEqual([])
  })

  it("a refusal never interrupts a list that has started", () => {
    const h = new Harness()
    h.ask(1, "#a", "b")
    h.pong(h.tokens(0).open)
    expect(h.server(":irc.test 367 me #a m", ":irc.test 482 me #a :nope")).toEqual([true, false])
  })
})

describe("timeouts and silence", () => {
  it("expire removes the waiter; the orphan still swallows its late replies", () => {
    const h = new Harness()
    h.ask(1, "#a", "b")
    const e = expire(h.state, 1)
    expect(e.found).toBe(true)
    h.state = e.state
    expect(pendingRequests(h.state)).toEqual([])
    expect(expire(h.state, 1).found).toBe(false)
    h.pong(h.tokens(0).open)
    expect(h.server(":irc.test 367 me #a late", ":irc.test 368 me #a :End")).toEqual([true, true])
    expect(h.pong(h.tokens(0).close)).toEqual([true])
    expect(h.completed).toEqual([])
    expect(h.state.queries).toEqual([])
  })

  it("a new request joins an orphan still in flight instead of racing it", () => {
    const h = new Harness()
    h.ask(1, "#a", "b")
    h.state = expire(h.state, 1).state
    expect(h.ask(2, "#a", "b")).toEqual([])
    h.pong(h.tokens(0).open)
    h.server(":irc.test 368 me #a :End")
    expect(h.result(2)).toMatchObject({ _tag: "Entries", entries: [] })
  })

  it("expiring one coalesced waiter leaves the other waiting", () => {
    const h = new Harness()
    h.ask(1, "#a", "b")
    h.ask(2, "#a", "b")
    h.state = expire(h.state, 1).state
    h.pong(h.tokens(0).open)
    h.server(":irc.test 368 me #a :End")
    expect(h.completed.map((c) => c.requestId)).toEqual([2])
  })

  it("the closing PONG with no answer completes NoReply", () => {
    const h = new Harness()
    h.ask(1, "#a", "q")
    h.pong(h.tokens(0).open)
    h.pong(h.tokens(0).close)
    expect(h.result(1)).toEqual({ _tag: "NoReply", channel: "#a", letter: "q" })
  })

  it("keeps at most MAX_ORPHANS orphans", () => {
    const h = new Harness()
    for (let i = 0; i < MAX_ORPHANS + 5; i++) {
      h.ask(i, `#c${i}`, "b")
      h.state = expire(h.state, i).state
    }
    expect(h.state.queries).toHaveLength(MAX_ORPHANS)
    // A PONG of a dropped orphan is still ours to swallow.
    expect(h.pong(h.tokens(0).close)).toEqual([true])
  })

  it("reset hands back every waiter", () => {
    const h = new Harness()
    h.ask(1, "#a", "b")
    h.ask(2, "#a", "b")
    h.ask(3, "#b", "e")
    const r = reset(h.state)
    expect(r.waiters).toEqual([1, 2, 3])
    expect(r.state.queries).toEqual([])
  })
})

describe("isListLetter", () => {
  it.each([
    { letter: "b", isupport: solanum, ok: true },
    { letter: "q", isupport: solanum, ok: true },
    { letter: "q", isupport: ngircd, ok: false }, // owner prefix there
    { letter: "I", isupport: ngircd, ok: true },
    { letter: "e", isupport: applyISupport(defaultISupport, ["me", "CHANMODES=b,k,l,imnpst", "x y"]), ok: false },
    { letter: "k", isupport: solanum, ok: false },
    { letter: "bb", isupport: solanum, ok: false }
  ])("$letter → $ok", ({ letter, isupport, ok }) => {
    expect(isListLetter(isupport, letter)).toBe(ok)
  })
})

describe("outcome", () => {
  it("entries: the list", () => {
    expect(outcome({ _tag: "Entries", channel: "#a", letter: "b", entries: [] })).toEqual(
      Either.right({ channel: "#a", letter: "b", entries: [] })
    )
  })

  it("refused: Refused with the server's numeric and text", () => {
    const refused = Either.getLeft(outcome({ _tag: "Refused", numeric: "482", text: "nope" }))
    expect(refused).toEqual(Option.some(new Refused({ numeric: "482", text: "nope" })))
  })

  it("no reply: Timeout naming the query, with no bound (none ran out)", () => {
    const timeout = Either.getLeft(outcome({ _tag: "NoReply", channel: "#a", letter: "I" }))
    expect(timeout).toEqual(Option.some(new Timeout({ operation: "the I list query for #a" })))
    expect(Option.map(timeout, (t) => t.message)).toEqual(Option.some("the I list query for #a got no answer; try again"))
  })
})
