// ChannelReducer.applyLine over lines as servers send them, read back through the queries of ChannelState.ts
// (members, topic, keys, away), which these cases cover too.
import { describe, expect, it } from "@effect/vitest"
import { applyLine, parseModeChanges } from "../../../src/actors/network/ChannelReducer.js"
import {
  type ChannelContext,
  type ChannelEvent,
  channelKey,
  channelName,
  type ChannelState,
  channelsOf,
  emptyChannelState,
  isAway,
  isJoined,
  joinedChannels,
  members,
  rememberKey,
  topic
} from "../../../src/actors/network/ChannelState.js"
import type { CaseMapping } from "../../../src/irc/CaseMapping.js"
import { parseLine } from "../../../src/irc/IrcLine.js"
import { applyISupport, defaultISupport, type ISupport } from "../../../src/irc/ISupport.js"

// ngircd-like: five prefixes, so multi-prefix ordering is visible.
const isupport: ISupport = applyISupport(defaultISupport, [
  "me",
  "PREFIX=(qaohv)~&@%+",
  "CHANMODES=beI,k,l,imnpst",
  "CASEMAPPING=rfc1459",
  "are supported by this server"
])
const NOW = new Date("2025-01-02T03:04:05.000Z")

interface Run {
  readonly state: ChannelState
  readonly events: ReadonlyArray<ChannelEvent>
  readonly selfNick: string
}

/** Feeds raw lines in order, following our own nick through NICK as the actor does. */
const feed = (
  lines: ReadonlyArray<string>,
  start: Partial<Run> & { readonly caseMapping?: CaseMapping; readonly isupport?: ISupport } = {}
): Run => {
  const caseMapping = start.caseMapping ?? "rfc1459"
  let state = start.state ?? emptyChannelState(caseMapping)
  let selfNick = start.selfNick ?? "me"
  const events: Array<ChannelEvent> = [...(start.events ?? [])]
  for (const raw of lines) {
    const line = parseLine(raw)
    if (line === undefined) throw new Error(`unparsable test line ${raw}`)
    const ctx: ChannelContext = { selfNick, isupport: start.isupport ?? isupport, caseMapping, now: NOW }
    const update = applyLine(state, line, ctx)
    state = update.state
    events.push(...update.events)
    for (const e of update.events) if (e._tag === "NickChanged" && e.self) selfNick = e.to
  }
  return { state, events, selfNick }
}

const JOINED = [":me!u@h JOIN #chan", ":irc.test 353 me = #chan :~me @+alice bob", ":irc.test 366 me #chan :End of /NAMES list."]

/** Compact member rendering: `@+alice`, `bob`, with `(away)` when away. */
const show = (run: Run, channel = "#chan"): ReadonlyArray<string> | undefined =>
  members(run.state, channel, isupport)?.map((m) => `${m.prefix}${m.nick}${m.away ? " (away)" : ""}`)

describe("NAMES", () => {
  it("collects several 353 lines and replaces the list only at 366", () => {
    const partial = feed([
      ":me!u@h JOIN #chan",
      ":irc.test 353 me = #chan :@+alice bob",
      ":irc.test 353 me = #chan :~me +carol!c@host.example"
    ])
    // Before 366 readers still see the list from the JOIN: never half a NAMES reply.
    expect(show(partial)).toEqual(["me"])
    const done = feed([":irc.test 366 me #chan :End of /NAMES list."], partial)
    expect(show(done)).toEqual(["@+alice", "bob", "+carol", "~me"])
    expect(members(done.state, "#chan", isupport)?.find((m) => m.nick === "alice")?.modes).toEqual(["o", "v"])
    expect(done.events.at(-1)).toEqual({ _tag: "NamesComplete", channel: "#chan" })
  })

  it.each([
    { name: "multi-prefix symbols out of rank order", entry: "+@alice", prefix: "@+", modes: ["o", "v"] },
    { name: "userhost-in-names", entry: "%alice!a@example.org", prefix: "%", modes: ["h"] },
    { name: "both", entry: "~&@%+alice!a@example.org", prefix: "~&@%+", modes: ["q", "a", "o", "h", "v"] },
    { name: "no prefix", entry: "alice", prefix: "", modes: [] }
  ])("reads $name", ({ entry, prefix, modes }) => {
    const run = feed([":me!u@h JOIN #chan", `:irc.test 353 me = #chan :me ${entry}`, ":irc.test 366 me #chan :End"])
    expect(members(run.state, "#chan", isupport)?.find((m) => m.nick === "alice")).toEqual({
      nick: "alice",
      prefix,
      modes,
      away: false
    })
  })

  it("reads the RFC 1459 form without the channel-type symbol", () => {
    const run = feed([":me!u@h JOIN #chan", ":irc.test 353 me #chan :me @alice", ":irc.test 366 me #chan :End"])
    expect(show(run)).toEqual(["@alice", "me"])
  })

  it("keeps a JOIN that arrives between 353 and 366", () => {
    const run = feed([
      ":me!u@h JOIN #chan",
      ":irc.test 353 me = #chan :me alice",
      ":dave!d@h JOIN #chan",
      ":irc.test 366 me #chan :End"
    ])
    expect(show(run)).toEqual(["alice", "dave", "me"])
  })

  it("ignores NAMES for a channel we are not in", () => {
    const before = feed(JOINED)
    const after = feed([":irc.test 353 me = #other :x y", ":irc.test 366 me #other :End"], before)
    expect(after.state).toBe(before.state)
    expect(after.events).toEqual(before.events)
  })
})

describe("membership", () => {
  it.each<{
    name: string
    lines: ReadonlyArray<string>
    members: ReadonlyArray<string> | undefined
    events: ReadonlyArray<ChannelEvent>
  }>([
    { name: "JOIN by another user", lines: [":dave!d@h JOIN #chan"], members: ["@+alice", "bob", "dave", "~me"], events: [] },
    {
      name: "extended-join JOIN",
      lines: [":dave!d@h JOIN #chan dave_account :Dave Real"],
      members: ["@+alice", "bob", "dave", "~me"],
      events: []
    },
    { name: "JOIN matched case-insensitively", lines: [":dave!d@h JOIN #CHAN"], members: ["@+alice", "bob", "dave", "~me"], events: [] },
    { name: "PART by another user", lines: [":bob!b@h PART #chan :bye"], members: ["@+alice", "~me"], events: [] },
    { name: "KICK of another user", lines: [":alice!a@h KICK #chan bob :out"], members: ["@+alice", "~me"], events: [] },
    {
      name: "our own PART",
      lines: [":me!u@h PART #chan"],
      members: undefined,
      events: [{ _tag: "SelfLeft", channel: "#chan", how: "part", by: null }]
    },
    {
      name: "our own PART in another case",
      lines: [":ME!u@h PART #Chan :later"],
      members: undefined,
      events: [{ _tag: "SelfLeft", channel: "#chan", how: "part", by: null }]
    },
    {
      name: "being kicked",
      lines: [":alice!a@h KICK #chan me :behave"],
      members: undefined,
      events: [{ _tag: "SelfLeft", channel: "#chan", how: "kick", by: "alice" }]
    },
    { name: "PART of a channel we are not in", lines: [":bob!b@h PART #elsewhere"], members: ["@+alice", "bob", "~me"], events: [] },
    {
      name: "QUIT of a member",
      lines: [":bob!b@h QUIT :Quit: zzz"],
      members: ["@+alice", "~me"],
      events: [{ _tag: "MemberQuit", nick: "bob", self: false, channels: ["#chan"] }]
    },
    {
      name: "QUIT of a stranger lists no channel",
      lines: [":zed!z@h QUIT :gone"],
      members: ["@+alice", "bob", "~me"],
      events: [{ _tag: "MemberQuit", nick: "zed", self: false, channels: [] }]
    }
  ])("$name", ({ lines, members: expected, events }) => {
    const before = feed(JOINED)
    const run = feed(lines, { state: before.state })
    expect(show(run)).toEqual(expected)
    expect(isJoined(run.state, "#chan")).toBe(expected !== undefined)
    expect(run.events).toEqual(events)
  })

  it("our JOIN creates the channel with us in it and reports it", () => {
    const run = feed([":me!u@h JOIN #New"])
    expect(run.events).toEqual([{ _tag: "SelfJoined", channel: "#New" }])
    expect(isJoined(run.state, "#new")).toBe(true)
    expect(channelName(run.state, "#NEW")).toBe("#New")
    expect(show(run, "#new")).toEqual(["me"])
  })

  it("QUIT lists every channel the user shared with us", () => {
    const run = feed([
      ...JOINED,
      ":me!u@h JOIN #two",
      ":irc.test 353 me = #two :me bob",
      ":irc.test 366 me #two :End",
      ":me!u@h JOIN #three",
      ":bob!b@h QUIT :bye"
    ])
    const quit = run.events.find((e) => e._tag === "MemberQuit")
    expect(quit?._tag === "MemberQuit" ? [...quit.channels].sort() : []).toEqual(["#chan", "#two"])
    expect(channelsOf(run.state, "bob")).toEqual([])
  })

  it("our own QUIT forgets every channel", () => {
    const run = feed([...JOINED, ":me!u@h JOIN #two", ":me!u@h QUIT :bye"])
    const quit = run.events.at(-1)
    expect(quit?._tag).toBe("MemberQuit")
    expect(quit?._tag === "MemberQuit" ? [quit.self, [...quit.channels].sort()] : []).toEqual([true, ["#chan", "#two"]])
    expect(joinedChannels(run.state)).toEqual([])
  })
})

describe("NICK", () => {
  it("renames a member matched under rfc1459 casemapping ([a] is {A})", () => {
    const run = feed([
      ":me!u@h JOIN #chan",
      ":irc.test 353 me = #chan :me @[a]",
      ":irc.test 366 me #chan :End",
      ":{A}!x@h NICK :b^"
    ])
    expect(show(run)).toEqual(["@b^", "me"])
    expect(run.events.at(-1)).toEqual({ _tag: "NickChanged", from: "{A}", to: "b^", self: false, channels: ["#chan"] })
  })

  it("does not fold [ and { under ascii casemapping", () => {
    const run = feed(
      [":me!u@h JOIN #chan", ":irc.test 353 me = #chan :me [a]", ":irc.test 366 me #chan :End", ":{A}!x@h NICK b"],
      { caseMapping: "ascii" }
    )
    expect(show(run)).toEqual(["[a]", "me"])
    expect(run.events.at(-1)).toEqual({ _tag: "NickChanged", from: "{A}", to: "b", self: false, channels: [] })
  })

  it("a case-only change shows the new casing", () => {
    const run = feed([...JOINED, ":bob!b@h NICK Bob"])
    expect(show(run)).toEqual(["@+alice", "Bob", "~me"])
  })

  it("our own NICK renames us in every channel and is reported as ours", () => {
    const run = feed([...JOINED, ":me!u@h JOIN #two", ":ME!u@h NICK me2"])
    const nick = run.events.at(-1)
    expect(nick?._tag === "NickChanged" ? [nick.self, nick.from, nick.to, [...nick.channels].sort()] : []).toEqual([
      true,
      "ME",
      "me2",
      ["#chan", "#two"]
    ])
    expect(show(run)).toEqual(["@+alice", "bob", "~me2"])
    expect(show(run, "#two")).toEqual(["me2"])
    expect(run.selfNick).toBe("me2")
    // The next line from us is recognised under the new nick.
    expect(feed([":me2!u@h PART #two"], run).events.at(-1)?._tag).toBe("SelfLeft")
  })
})

describe("MODE", () => {
  it.each<{ name: string; modestring: string; params: string; modes: Record<string, ReadonlyArray<string>>; key: string | null }>([
    {
      name: "+o-v+k: prefixes and key in order",
      modestring: "+o-v+k",
      params: "bob alice secret",
      modes: { alice: ["o"], bob: ["o"] },
      key: "secret"
    },
    {
      name: "+bl-k consumes mask, limit and key before a prefix",
      modestring: "+bl-k+v",
      params: "*!*@spam 10 oldkey bob",
      modes: { alice: ["o", "v"], bob: ["v"] },
      key: null
    },
    {
      name: "-l consumes nothing",
      modestring: "-l+h",
      params: "bob",
      modes: { alice: ["o", "v"], bob: ["h"] },
      key: null
    },
    {
      name: "type D letters consume nothing",
      modestring: "+nt-o+a",
      params: "alice bob",
      modes: { alice: ["v"], bob: ["a"] },
      key: null
    },
    {
      name: "unknown letters consume nothing",
      modestring: "+Xo",
      params: "bob",
      modes: { alice: ["o", "v"], bob: ["o"] },
      key: null
    },
    {
      name: "+q ranks above +o (multi-prefix order by PREFIX)",
      modestring: "+qv",
      params: "alice bob",
      modes: { alice: ["q", "o", "v"], bob: ["v"] },
      key: null
    },
    {
      name: "a prefix mode on a nick not in the channel is ignored",
      modestring: "+o",
      params: "ghost",
      modes: { alice: ["o", "v"], bob: [] },
      key: null
    },
    {
      name: "the nick param is matched case-insensitively",
      modestring: "+o",
      params: "BOB",
      modes: { alice: ["o", "v"], bob: ["o"] },
      key: null
    }
  ])("$name", ({ modestring, params, modes, key }) => {
    const run = feed([...JOINED, `:alice!a@h MODE #chan ${modestring} ${params}`])
    const byNick = Object.fromEntries((members(run.state, "#chan", isupport) ?? []).map((m) => [m.nick, m.modes]))
    expect({ alice: byNick.alice, bob: byNick.bob }).toEqual(modes)
    expect(channelKey(run.state, "#chan")).toBe(key)
  })

  it("+k and -k report the key for persistence", () => {
    const run = feed([...JOINED, ":alice!a@h MODE #chan +k s3cret", ":alice!a@h MODE #chan -k *"])
    expect(run.events.filter((e) => e._tag === "KeyChanged")).toEqual([
      { _tag: "KeyChanged", channel: "#chan", key: "s3cret" },
      { _tag: "KeyChanged", channel: "#chan", key: null }
    ])
  })

  it("a +k that lost its param keeps the known key", () => {
    const run = feed([...JOINED, ":alice!a@h MODE #chan +k s3cret", ":alice!a@h MODE #chan +k"])
    expect(run.events.filter((e) => e._tag === "KeyChanged")).toEqual([{ _tag: "KeyChanged", channel: "#chan", key: "s3cret" }])
    expect(channelKey(run.state, "#chan")).toBe("s3cret")
  })

  it("rememberKey seeds the key we joined with", () => {
    const run = feed(JOINED)
    expect(channelKey(rememberKey(run.state, "#CHAN", "k1"), "#chan")).toBe("k1")
    expect(channelKey(run.state, "#nope")).toBeUndefined()
  })

  it("prefix string lists symbols highest first", () => {
    const run = feed([...JOINED, ":alice!a@h MODE #chan +v+h bob bob"])
    expect(members(run.state, "#chan", isupport)?.find((m) => m.nick === "bob")).toEqual({
      nick: "bob",
      prefix: "%+",
      modes: ["h", "v"],
      away: false
    })
  })

  it("ignores user modes and channels we are not in", () => {
    const before = feed(JOINED)
    expect(feed([":me MODE me +i", ":x!x@h MODE #other +o me"], before).state).toBe(before.state)
  })

  it("parseModeChanges pairs each letter with its param", () => {
    expect(parseModeChanges(isupport, "+bl-k", ["mask", "10", "key"])).toEqual([
      { sign: "+", letter: "b", param: "mask" },
      { sign: "+", letter: "l", param: "10" },
      { sign: "-", letter: "k", param: "key" }
    ])
    expect(parseModeChanges(isupport, "-k", [])).toEqual([{ sign: "-", letter: "k", param: undefined }])
  })
})

describe("topic", () => {
  it("332 then 333 give text, setter nick and time", () => {
    const run = feed([
      ":me!u@h JOIN #chan",
      ":irc.test 332 me #chan :Welcome to #chan",
      ":irc.test 333 me #chan alice!a@example.org 1700000000"
    ])
    expect(topic(run.state, "#CHAN")).toEqual({
      channel: "#chan",
      topic: "Welcome to #chan",
      setBy: "alice",
      setAt: "2023-11-14T22:13:20.000Z"
    })
  })

  it.each<{ name: string; lines: ReadonlyArray<string>; expected: { topic: string; setBy: string | null; setAt: string | null } }>([
    { name: "no topic yet", lines: [], expected: { topic: "", setBy: null, setAt: null } },
    {
      name: "TOPIC uses the server-time tag",
      lines: ["@time=2024-05-06T07:08:09.000Z :bob!b@h TOPIC #chan :new topic"],
      expected: { topic: "new topic", setBy: "bob", setAt: "2024-05-06T07:08:09.000Z" }
    },
    {
      name: "TOPIC without server-time uses the receipt time",
      lines: [":bob!b@h TOPIC #chan :new topic"],
      expected: { topic: "new topic", setBy: "bob", setAt: NOW.toISOString() }
    },
    {
      name: "an empty TOPIC clears it",
      lines: [":bob!b@h TOPIC #chan :set", ":bob!b@h TOPIC #chan :"],
      expected: { topic: "", setBy: null, setAt: null }
    },
    {
      name: "331 clears it",
      lines: [":irc.test 332 me #chan :old", ":irc.test 331 me #chan :No topic is set"],
      expected: { topic: "", setBy: null, setAt: null }
    },
    {
      name: "333 with a bare nick and a zero time",
      lines: [":irc.test 332 me #chan :t", ":irc.test 333 me #chan alice 0"],
      expected: { topic: "t", setBy: "alice", setAt: null }
    },
    {
      // A time past the year 9999 has no RFC 3339 form (src/irc/ServerTime.ts): unknown, as a zero time.
      name: "333 with a time past the year 9999",
      lines: [":irc.test 332 me #chan :t", ":irc.test 333 me #chan alice 999999999999"],
      expected: { topic: "t", setBy: "alice", setAt: null }
    },
    {
      name: "TOPIC with a server-time of the year 33658 uses the receipt time",
      lines: ["@time=+033658-01-01T00:00:00.000Z :bob!b@h TOPIC #chan :far"],
      expected: { topic: "far", setBy: "bob", setAt: NOW.toISOString() }
    }
  ])("$name", ({ lines, expected }) => {
    const run = feed([":me!u@h JOIN #chan", ...lines])
    expect(topic(run.state, "#chan")).toEqual({ channel: "#chan", ...expected })
  })

  it("is undefined for a channel we are not in", () => {
    const run = feed([":irc.test 332 me #other :x", ":bob!b@h TOPIC #other :y"])
    expect(topic(run.state, "#other")).toBeUndefined()
    expect(members(run.state, "#other", isupport)).toBeUndefined()
  })
})

describe("away", () => {
  it.each<{ name: string; lines: ReadonlyArray<string>; expected: ReadonlyArray<string> }>([
    { name: "away-notify: going away", lines: [":bob!b@h AWAY :lunch"], expected: ["@+alice", "bob (away)", "~me"] },
    { name: "away-notify: back", lines: [":bob!b@h AWAY :lunch", ":bob!b@h AWAY"], expected: ["@+alice", "bob", "~me"] },
    { name: "away-notify: back with empty text", lines: [":bob!b@h AWAY :lunch", ":bob!b@h AWAY :"], expected: ["@+alice", "bob", "~me"] },
    {
      name: "WHO flags G and H",
      lines: [
        ":irc.test 352 me #chan b h irc.test bob G :0 Bob",
        ":irc.test 352 me #chan a h irc.test alice H@+ :0 Alice",
        ":irc.test 315 me #chan :End of WHO list"
      ],
      expected: ["@+alice", "bob (away)", "~me"]
    },
    {
      name: "WHO H clears an earlier away",
      lines: [":bob!b@h AWAY :x", ":irc.test 352 me #chan b h irc.test BOB H :0 Bob"],
      expected: ["@+alice", "bob", "~me"]
    },
    { name: "301 marks away", lines: [":irc.test 301 me bob :in a meeting"], expected: ["@+alice", "bob (away)", "~me"] },
    { name: "306 marks us away", lines: [":irc.test 306 me :You have been marked as being away"], expected: ["@+alice", "bob", "~me (away)"] },
    { name: "305 marks us back", lines: [":irc.test 306 me :away", ":irc.test 305 me :back"], expected: ["@+alice", "bob", "~me"] },
    {
      name: "away state survives a NICK",
      lines: [":bob!b@h AWAY :x", ":bob!b@h NICK robert"],
      expected: ["@+alice", "~me", "robert (away)"]
    }
  ])("$name", ({ lines, expected }) => {
    expect(show(feed([...JOINED, ...lines]))).toEqual(expected)
  })

  it("reports our own away changes", () => {
    const run = feed([...JOINED, ":irc.test 306 me :away", ":irc.test 306 me :away", ":irc.test 305 me :back"])
    expect(run.events.filter((e) => e._tag === "SelfAwayChanged")).toEqual([
      { _tag: "SelfAwayChanged", away: true },
      { _tag: "SelfAwayChanged", away: false }
    ])
  })

  it("ignores strangers and forgets users who left every shared channel", () => {
    const run = feed([...JOINED, ":zed!z@h AWAY :x", ":irc.test 301 me zed :x", ":bob!b@h AWAY :x", ":bob!b@h PART #chan"])
    expect(isAway(run.state, "zed")).toBe(false)
    expect(isAway(run.state, "bob")).toBe(false)
    // Had it been kept, bob would show as away on his return although we never heard him come back.
    expect(show(feed([":bob!b@h JOIN #chan"], run))).toEqual(["@+alice", "bob", "~me"])
  })

  it("keeps our own away state when we part our last channel", () => {
    const run = feed([...JOINED, ":irc.test 306 me :away", ":me!u@h PART #chan"])
    expect(isAway(run.state, "me")).toBe(true)
  })
})

describe("casemapping", () => {
  it("re-keys the state when CASEMAPPING changes", () => {
    const ascii = feed([":me!u@h JOIN #a[b]", ":irc.test 353 me = #a[b] :me x[1]", ":irc.test 366 me #a[b] :End"], {
      caseMapping: "ascii"
    })
    expect(isJoined(ascii.state, "#a{b}")).toBe(false)
    const rfc = feed([":x{1}!x@h PART #A{B}"], { state: ascii.state, caseMapping: "rfc1459" })
    expect(show(rfc, "#a[b]")).toEqual(["me"])
  })
})

describe("sorting", () => {
  it("sorts by casemapped nick, ties broken by raw nick", () => {
    const run = feed([":me!u@h JOIN #chan", ":irc.test 353 me = #chan :me Zed alice Bob _x [y]", ":irc.test 366 me #chan :End"])
    // rfc1459 folds [ to {, which sorts after letters; _ (0x5f) sorts before lower-case letters.
    expect(show(run)).toEqual(["_x", "alice", "Bob", "me", "Zed", "[y]"])
  })
})
