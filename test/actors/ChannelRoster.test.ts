// ChannelRoster: the membership/topic reducer, as pure table-style cases (casemapping, NAMES, MODE params).
import { describe, expect, it } from "@effect/vitest"
import * as Roster from "../../src/actors/ChannelRoster.js"
import { applyISupport, defaultISupport } from "../../src/actors/irc/ISupport.js"

const isupport = applyISupport(defaultISupport, ["me", "PREFIX=(qaohv)~&@%+", "CHANMODES=beI,k,l,imnpst", "CASEMAPPING=rfc1459"])

const withChannel = () => {
  let r = Roster.emptyRoster("rfc1459")
  r = Roster.join(r, "#Chan", "me", true)
  r = Roster.names(r, isupport, "#chan", ["@+alice", "~bob!b@host", "me"])
  r = Roster.names(r, isupport, "#chan", ["%carol[x]"])
  return Roster.endOfNames(r, "#CHAN")
}

describe("ChannelRoster", () => {
  it("NAMES replaces the members at 366, with multi-prefix and userhost-in-names entries", () => {
    const r = withChannel()
    const c = r.get("#chan")!
    expect(c.name).toBe("#Chan")
    expect(Roster.memberList(c, isupport)).toEqual([
      { nick: "alice", prefix: "@+", modes: ["o", "v"], away: false },
      { nick: "bob", prefix: "~", modes: ["q"], away: false },
      { nick: "carol[x]", prefix: "%", modes: ["h"], away: false },
      { nick: "me", prefix: "", modes: [], away: false }
    ])
  })

  it("NAMES for a channel we are not in is ignored; a partial list is not visible before 366", () => {
    let r = withChannel()
    r = Roster.names(r, isupport, "#other", ["x"])
    expect(r.has("#other")).toBe(false)
    r = Roster.names(r, isupport, "#chan", ["only"])
    expect(r.get("#chan")!.members.size).toBe(4)
  })

  it("JOIN, PART, KICK, QUIT and NICK under rfc1459 casemapping", () => {
    let r = withChannel()
    r = Roster.join(r, "#CHAN", "dave", false)
    r = Roster.rename(r, "CAROL{X}", "carol2")
    r = Roster.leave(r, "#chan", "ALICE", false)
    r = Roster.quit(r, "bob")
    expect([...r.get("#chan")!.members.names()].sort()).toEqual(["carol2", "dave", "me"])
    expect(Roster.channelsOf(r, "DAVE")).toEqual(["#Chan"])
    r = Roster.leave(r, "#chan", "me", true)
    expect(r.size).toBe(0)
  })

  it("parseModes consumes params by CHANMODES type and PREFIX; applyModes updates prefixes only", () => {
    const changes = Roster.parseModes(isupport, "+ov-h+lk-l+b", ["alice", "bob", "carol[x]", "10", "key", "*!*@x"])
    expect(changes).toEqual([
      { sign: "+", letter: "o", param: "alice" },
      { sign: "+", letter: "v", param: "bob" },
      { sign: "-", letter: "h", param: "carol[x]" },
      { sign: "+", letter: "l", param: "10" },
      { sign: "+", letter: "k", param: "key" },
      { sign: "-", letter: "l", param: undefined },
      { sign: "+", letter: "b", param: "*!*@x" }
    ])
    const r = Roster.applyModes(withChannel(), isupport, "#chan", changes)
    const byNick = new Map(Roster.memberList(r.get("#chan")!, isupport).map((m) => [m.nick, m.prefix]))
    expect(byNick.get("alice")).toBe("@+")
    expect(byNick.get("bob")).toBe("~+")
    expect(byNick.get("carol[x]")).toBe("")
  })

  it("topic, topic setter and away", () => {
    let r = Roster.setTopic(withChannel(), "#chan", "hello", null, null)
    r = Roster.setTopicWhoTime(r, "#chan", "alice", new Date(0))
    r = Roster.setAway(r, "BOB", true)
    const c = r.get("#chan")!
    expect([c.topic, c.topicSetBy, c.topicSetAt]).toEqual(["hello", "alice", new Date(0)])
    expect(c.members.get("bob")!.away).toBe(true)
  })

  it("withMapping re-keys channels and members", () => {
    const r = Roster.withMapping(withChannel(), "ascii")
    expect(r.has("#chan")).toBe(true)
    expect(r.get("#chan")!.members.has("CAROL{X}")).toBe(false)
    expect(r.get("#chan")!.members.has("CAROL[X]")).toBe(true)
  })
})
