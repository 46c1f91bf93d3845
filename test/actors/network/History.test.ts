// History.messagesFor: which buffer and kind each inbound line is stored as (a table of named cases).
import { describe, expect, it } from "@effect/vitest"
import { applyLine } from "../../../src/actors/network/ChannelReducer.js"
import { type ChannelState, emptyChannelState } from "../../../src/actors/network/ChannelState.js"
import { type HistoryContext, messagesFor, ownMessages } from "../../../src/actors/network/History.js"
import { parseLine } from "../../../src/irc/IrcLine.js"
import { applyISupport, defaultISupport } from "../../../src/irc/ISupport.js"

const isupport = applyISupport(defaultISupport, ["me", "STATUSMSG=@+", "CHANTYPES=#&", "CASEMAPPING=rfc1459"])
// Joined #Chan and #other (our JOIN's spelling is the buffer's), alice in both.
const channels: ChannelState = [
  ":me!u@h JOIN #Chan",
  ":alice!a@h JOIN #chan",
  ":me!u@h JOIN #other",
  ":alice!a@h JOIN #other"
].reduce(
  (state, raw) => applyLine(state, parseLine(raw)!, { selfNick: "me", isupport, caseMapping: "rfc1459", now: new Date(0) }).state,
  emptyChannelState("rfc1459")
)

const ctx: HistoryContext = {
  networkId: 7,
  selfNick: "me",
  registered: true,
  isupport,
  channels,
  lastModeChannel: null,
  time: new Date(1000)
}

type Row = readonly [target: string, folded: string, kind: string, nick: string | null, text: string, self: boolean]
const rows = (line: string, context: HistoryContext = ctx): ReadonlyArray<Row> =>
  messagesFor(context, parseLine(line)!).map((m) => [m.target, m.targetFolded, m.kind, m.nick, m.text, m.self] as const)

describe("History.messagesFor", () => {
  const cases: ReadonlyArray<{ readonly name: string; readonly line: string; readonly want: ReadonlyArray<Row> }> = [
    { name: "channel message, buffer shown as joined", line: ":alice!a@h PRIVMSG #CHAN :hi", want: [["#Chan", "#chan", "privmsg", "alice", "hi", false]] },
    { name: "STATUSMSG target goes to the channel", line: ":alice!a@h NOTICE @#chan :ops", want: [["#Chan", "#chan", "notice", "alice", "ops", false]] },
    { name: "ACTION", line: ":alice!a@h PRIVMSG #chan :\x01ACTION waves\x01", want: [["#Chan", "#chan", "action", "alice", "waves", false]] },
    { name: "private message in the peer's buffer", line: ":Alice[1]!a@h PRIVMSG me :psst", want: [["Alice[1]", "alice{1}", "privmsg", "Alice[1]", "psst", false]] },
    { name: "our echoed DM in the recipient's buffer", line: ":me!u@h PRIVMSG Bob :yo", want: [["Bob", "bob", "privmsg", "me", "yo", true]] },
    { name: "server notice", line: ":irc.example.net NOTICE me :*** Looking up", want: [[":server:7", ":server:7", "notice", "irc.example.net", "*** Looking up", false]] },
    { name: "global $ notice", line: ":oper!o@h NOTICE $*.net :maintenance", want: [[":server:7", ":server:7", "notice", "oper", "maintenance", false]] },
    { name: "CTCP request is server-buffer chatter", line: ":bob!b@h PRIVMSG me :\x01VERSION\x01", want: [[":server:7", ":server:7", "privmsg", "bob", "CTCP VERSION", false]] },
    { name: "QUIT lands in every shared channel", line: ":alice!a@h QUIT :bye", want: [["#Chan", "#chan", "quit", "alice", "bye", false], ["#other", "#other", "quit", "alice", "bye", false]] },
    { name: "QUIT of a stranger stores nothing", line: ":zed!z@h QUIT :bye", want: [] },
    { name: "own NICK in every channel", line: ":me!u@h NICK :me2", want: [["#Chan", "#chan", "nick", "me", "me2", true], ["#other", "#other", "nick", "me", "me2", true]] },
    { name: "channel MODE", line: ":alice!a@h MODE #chan +o me", want: [["#Chan", "#chan", "mode", "alice", "+o me", false]] },
    { name: "user MODE to the server buffer", line: ":me MODE me :+i", want: [[":server:7", ":server:7", "mode", "me", "+i", true]] },
    { name: "TOPIC", line: ":alice!a@h TOPIC #chan :new", want: [["#Chan", "#chan", "topic", "alice", "new", false]] },
    { name: "KICK with reason", line: ":alice!a@h KICK #chan me :out", want: [["#Chan", "#chan", "kick", "alice", "me (out)", false]] },
    { name: "numeric in the server buffer", line: ":srv.net 311 me bob b host * :Bob", want: [[":server:7", ":server:7", "numeric", "srv.net", "bob b host * Bob", false]] },
    {
      name: "error numeric about a joined channel goes to it",
      line: ":srv.net 482 me #chan :You're not channel operator",
      want: [["#Chan", "#chan", "error", "srv.net", "Channel operator privileges needed: You're not channel operator (482)", false]]
    },
    {
      name: "478 list full goes to the channel",
      line: ":srv.net 478 me #CHAN b :Channel ban list is full",
      want: [["#Chan", "#chan", "error", "srv.net", "The b list is full: Channel ban list is full (478)", false]]
    },
    { name: "472 without a MODE sent stays in the server buffer", line: ":srv.net 472 me X :is unknown mode char to me", want: [[":server:7", ":server:7", "numeric", "srv.net", "X is unknown mode char to me", false]] },
    { name: "error numeric about another channel stays in the server buffer", line: ":srv.net 475 me #locked :Cannot join channel (+k)", want: [[":server:7", ":server:7", "numeric", "srv.net", "#locked Cannot join channel (+k)", false]] },
    { name: "ERROR", line: "ERROR :Closing Link", want: [[":server:7", ":server:7", "error", null, "Closing Link", false]] },
    { name: "PING is not history", line: "PING :x", want: [] },
    { name: "away-notify AWAY is not history", line: ":alice!a@h AWAY :lunch", want: [] }
  ]
  it.each(cases)("$name", ({ line, want }) => {
    expect(rows(line)).toEqual(want)
  })

  it("472 names no channel: it goes to the channel we last sent MODE to, when we are in it", () => {
    const line = ":srv.net 472 me X :is unknown mode char to me"
    expect(rows(line, { ...ctx, lastModeChannel: "#other" })).toEqual([
      ["#other", "#other", "error", "srv.net", "Unknown mode X: is unknown mode char to me (472)", false]
    ])
    expect(rows(line, { ...ctx, lastModeChannel: "#gone" })).toEqual([
      [":server:7", ":server:7", "numeric", "srv.net", "X is unknown mode char to me", false]
    ])
  })

  it("before registration every notice is the server's", () => {
    expect(rows(":NickServ!s@services NOTICE * :hello", { ...ctx, registered: false })).toEqual([
      [":server:7", ":server:7", "notice", "NickServ", "hello", false]
    ])
  })

  it("server-time wins over the receive time", () => {
    const [m] = messagesFor(ctx, parseLine("@time=2024-05-06T07:08:09.123Z :alice!a@h PRIVMSG #chan :x")!)
    expect(m!.time.toISOString()).toBe("2024-05-06T07:08:09.123Z")
    const [n] = messagesFor(ctx, parseLine("@time=garbage :alice!a@h PRIVMSG #chan :x")!)
    expect(n!.time).toEqual(new Date(1000))
  })

  it("ownMessages: one self message per line and per comma target", () => {
    const stored = ownMessages(ctx, ["PRIVMSG #chan,bob :one", "NOTICE #chan :two", "JOIN #x"])
    expect(stored.map((m) => [m.target, m.kind, m.nick, m.text, m.self])).toEqual([
      ["#Chan", "privmsg", "me", "one", true],
      ["bob", "privmsg", "me", "one", true],
      ["#Chan", "notice", "me", "two", true]
    ])
  })
})
