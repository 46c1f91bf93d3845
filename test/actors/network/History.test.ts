// History.messagesFor: which buffer and kind each inbound line is stored as (a table of named cases).
import { describe, expect, it } from "@effect/vitest"
import { applyLine } from "../../../src/actors/network/ChannelReducer.js"
import { type ChannelState, emptyChannelState } from "../../../src/actors/network/ChannelState.js"
import { type HistoryContext, messagesFor, ownMessages, REACTION_MAX, redactionFor } from "../../../src/actors/network/History.js"
import { MSGID_MAX } from "../../../src/services/history/MessageRow.js"
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
    // Parsable, but with no RFC 3339 form to send it in (src/irc/ServerTime.ts): the receive time, as for garbage.
    for (const far of ["+033658-01-01T00:00:00.000Z", "-000001-01-01T00:00:00.000Z"]) {
      const [o] = messagesFor(ctx, parseLine(`@time=${far} :alice!a@h PRIVMSG #chan :x`)!)
      expect(o!.time).toEqual(new Date(1000))
    }
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

describe("History: message ids, replies, reactions and redaction", () => {
  type Tagged = readonly [target: string, kind: string, nick: string | null, text: string, msgid: string | null, replyTo: string | null]
  const tagged = (line: string): ReadonlyArray<Tagged> =>
    messagesFor(ctx, parseLine(line)!).map((m) => [m.target, m.kind, m.nick, m.text, m.msgid ?? null, m.replyTo ?? null] as const)
  const long = "x".repeat(MSGID_MAX + 1)
  const cases: ReadonlyArray<{ readonly name: string; readonly line: string; readonly want: ReadonlyArray<Tagged> }> = [
    { name: "msgid kept", line: "@msgid=abc123 :alice!a@h PRIVMSG #chan :hi", want: [["#Chan", "privmsg", "alice", "hi", "abc123", null]] },
    { name: "reply kept", line: "@msgid=m2;+draft/reply=m1 :alice!a@h PRIVMSG #chan :re", want: [["#Chan", "privmsg", "alice", "re", "m2", "m1"]] },
    { name: "msgid unescaped", line: "@msgid=a\\:b :alice!a@h PRIVMSG #chan :x", want: [["#Chan", "privmsg", "alice", "x", "a;b", null]] },
    { name: "msgid at the bound kept", line: `@msgid=${"y".repeat(MSGID_MAX)} :alice!a@h PRIVMSG #chan :x`, want: [["#Chan", "privmsg", "alice", "x", "y".repeat(MSGID_MAX), null]] },
    { name: "over-long msgid dropped, message kept", line: `@msgid=${long};+draft/reply=${long} :alice!a@h PRIVMSG #chan :x`, want: [["#Chan", "privmsg", "alice", "x", null, null]] },
    { name: "msgid with an escaped space dropped", line: "@msgid=a\\sb :alice!a@h PRIVMSG #chan :x", want: [["#Chan", "privmsg", "alice", "x", null, null]] },
    { name: "msgid with an escaped line break dropped", line: "@msgid=a\\nb :alice!a@h PRIVMSG #chan :x", want: [["#Chan", "privmsg", "alice", "x", null, null]] },
    { name: "empty msgid dropped", line: "@msgid= :alice!a@h PRIVMSG #chan :x", want: [["#Chan", "privmsg", "alice", "x", null, null]] },
    { name: "msgid on a channel event kept", line: "@msgid=j1 :alice!a@h PART #chan :bye", want: [["#Chan", "part", "alice", "bye", "j1", null]] },
    { name: "reaction in a channel", line: "@msgid=r1;+draft/react=👍;+draft/reply=m1 :alice!a@h TAGMSG #chan", want: [["#Chan", "react", "alice", "👍", "r1", "m1"]] },
    { name: "reaction in a DM, filed under the peer", line: "@+draft/react=ok;+draft/reply=m1 :alice!a@h TAGMSG me", want: [["alice", "react", "alice", "ok", null, "m1"]] },
    { name: "our echoed reaction in the recipient's buffer", line: "@+draft/react=ok;+draft/reply=m1 :me!u@h TAGMSG bob", want: [["bob", "react", "me", "ok", null, "m1"]] },
    { name: "reaction without a reply reference", line: "@+draft/react=👍 :alice!a@h TAGMSG #chan", want: [] },
    { name: "reaction with an over-long reference", line: `@+draft/react=👍;+draft/reply=${long} :alice!a@h TAGMSG #chan`, want: [] },
    { name: "reaction too long", line: `@+draft/react=${"r".repeat(REACTION_MAX + 1)};+draft/reply=m1 :alice!a@h TAGMSG #chan`, want: [] },
    { name: "empty reaction", line: "@+draft/react=;+draft/reply=m1 :alice!a@h TAGMSG #chan", want: [] },
    { name: "reaction with a control character", line: "@+draft/react=a\\rb;+draft/reply=m1 :alice!a@h TAGMSG #chan", want: [] },
    { name: "reaction from a server", line: "@+draft/react=x;+draft/reply=m1 :irc.example.net TAGMSG #chan", want: [] },
    { name: "typing is not history", line: "@+typing=active :alice!a@h TAGMSG #chan", want: [] },
    { name: "REDACT is not a row", line: "@msgid=z :alice!a@h REDACT #chan m1 :oops", want: [] }
  ]
  for (const c of cases) it(c.name, () => expect(tagged(c.line)).toEqual(c.want))

  it("REDACT names the message of the conversation's buffer", () => {
    const of = (line: string) => redactionFor(ctx, parseLine(line)!)
    expect(of(":alice!a@h REDACT #CHAN m1 :oops")).toEqual({ networkId: 7, target: "#Chan", targetFolded: "#chan", msgid: "m1" })
    expect(of(":Alice!a@h REDACT me m1")).toEqual({ networkId: 7, target: "Alice", targetFolded: "alice", msgid: "m1" })
    expect(of(":me!u@h REDACT Bob m1")).toEqual({ networkId: 7, target: "Bob", targetFolded: "bob", msgid: "m1" })
    expect(of(":alice!a@h REDACT #chan")).toBeUndefined()
    expect(of(`:alice!a@h REDACT #chan ${long}`)).toBeUndefined()
    expect(of(":irc.example.net REDACT $* m1")).toBeUndefined()
    expect(of(":alice!a@h PRIVMSG #chan m1")).toBeUndefined()
  })
})
