/**
 * The IRC client listener where irctest (progval/irctest, run against Belay in front of ngircd) found it apart from
 * the IRCv3 specifications, over the whole application with the scripted fake IRC server: SASL PLAIN's 400-byte
 * chunk bound (sasl-3.1: 905), AUTHENTICATE after registration (907 after SASL, 462 after PASS), the passthrough
 * capabilities the upstream lacks withdrawn before 001, draft/read-marker's MARKREAD before RPL_ENDOFNAMES after
 * every JOIN, the welcome burst's and a live one's, a DM to oneself delivered to a client without echo-message, and
 * an empty PRIVMSG answered 412 (RFC 2812 §3.3.1), an empty USER name or real name answered 461, CAP END during SASL
 * answered 906 (sasl-3.1), NAMES and WHO narrowed to the client's multi-prefix and
 * userhost-in-names, CHATHISTORY's INVALID_TARGET, and SETNAME (IRCv3 setname).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { type ClientLine, connectClient, saslPlain } from "../support/IrcTestClient.js"
import { MessageHistory } from "../../src/services/history/MessageHistory.js"
import { MessageWriter } from "../../src/services/history/MessageWriter.js"
import { Accounts } from "../../src/services/identity/Accounts.js"
import { batchEnd, CAPS, PASSWORD, saslClient, startListenerApp, welcomedClient } from "../support/IrcListenerApp.js"

const start = startListenerApp()
import { describeMode } from "../support/TestDatabase.js"

const indexOf = (lines: ReadonlyArray<ClientLine>, match: (l: ClientLine) => boolean) => lines.findIndex(match)

describe(`the IRC client listener against the IRCv3 specifications on ${describeMode}`, () => {
  it.scopedLive("SASL: a chunk over 400 bytes is 905 and the client may retry; no AUTHENTICATE after registration", () =>
    Effect.gen(function*() {
      const { port } = yield* start
      const c = yield* connectClient(port)
      yield* c.send("CAP LS 302", "NICK someone", "USER alice/fake 0 * :Real", "CAP REQ :sasl", "AUTHENTICATE PLAIN")
      yield* c.next("AUTHENTICATE")
      yield* c.send(`AUTHENTICATE ${"A".repeat(401)}`)
      expect((yield* c.next((l) => /^9\d\d$/.test(l.command))).command).toBe("905")
      // The exchange ended; a new one succeeds.
      yield* c.send("AUTHENTICATE PLAIN")
      yield* c.next("AUTHENTICATE")
      yield* c.send(`AUTHENTICATE ${saslPlain("alice/fake", PASSWORD)}`)
      yield* c.next("903")
      yield* c.send("CAP END")
      yield* c.until("366")
      yield* c.send("AUTHENTICATE PLAIN")
      expect((yield* c.next((l) => /^\d{3}$/.test(l.command))).command).toBe("907")

      // Signed in with PASS: AUTHENTICATE afterwards is a re-registration.
      const p = yield* connectClient(port)
      yield* p.send(`PASS :alice/fake:${PASSWORD}`, "NICK someone", "USER someone 0 * :Real")
      yield* p.until("366")
      yield* p.send("AUTHENTICATE PLAIN")
      expect((yield* p.next((l) => /^\d{3}$/.test(l.command))).command).toBe("462")
    }), 60_000)

  it.scopedLive("registration: an empty USER name or real name is 461; CAP END during SASL aborts it with 906", () =>
    Effect.gen(function*() {
      const { port } = yield* start
      const e = yield* connectClient(port)
      yield* e.send(`PASS :alice/fake:${PASSWORD}`, "NICK someone", "USER someone * * :")
      const answer = yield* e.next((l) => /^\d{3}$/.test(l.command))
      expect([answer.command, answer.params[1]]).toEqual(["461", "USER"])
      // The registration waits for a valid USER.
      yield* e.send("USER someone * * :Real")
      yield* e.until("001")

      // Registration completed mid-exchange: 906, then the client registers without SASL (here with PASS).
      const c = yield* connectClient(port)
      yield* c.send("CAP LS 302", "CAP REQ :sasl", "AUTHENTICATE PLAIN")
      yield* c.next("AUTHENTICATE")
      yield* c.send(`PASS :alice/fake:${PASSWORD}`, "NICK someone", "USER someone 0 * :Real", "CAP END")
      const welcome = yield* c.until("001")
      expect(welcome.map((l) => l.command).filter((command) => /^9\d\d$/.test(command))).toEqual(["906"])
      // Without other credentials, 906 and then the refusal.
      const n = yield* connectClient(port)
      yield* n.send("CAP LS 302", "CAP REQ :sasl", "AUTHENTICATE PLAIN")
      yield* n.next("AUTHENTICATE")
      yield* n.send("NICK someone", "USER someone 0 * :Real", "CAP END")
      const refused = (yield* n.closed()).map((l) => l.command)
      expect(refused.filter((command) => command === "906" || command === "FAIL")).toEqual(["906", "FAIL"])
    }), 60_000)

  it.scopedLive("welcome: missing passthrough caps the client enabled withdrawn before 001, MARKREAD before 366; a live JOIN's MARKREAD before its 366", () =>
    Effect.gen(function*() {
      const { port, upstream } = yield* start
      // away-notify is offered before the network is known; the fake upstream has no capabilities at all. Only what
      // the client enabled is withdrawn.
      const c = yield* saslClient(port, "alice/fake", PASSWORD, `${CAPS} away-notify`)
      yield* c.next("903")
      yield* c.send("CAP END")
      const burst = yield* c.until("366")
      const withdrawn = indexOf(burst, (l) => l.command === "CAP" && l.params[1] === "DEL")
      expect(withdrawn).toBeGreaterThanOrEqual(0)
      expect(burst[withdrawn]!.params[2]!.split(" ")).toEqual(["away-notify"])
      expect(withdrawn).toBeLessThan(indexOf(burst, (l) => l.command === "001"))
      const marker = indexOf(burst, (l) => l.command === "MARKREAD")
      expect(burst[marker]?.params).toEqual(["#belay", "*"])
      expect(marker).toBeGreaterThan(indexOf(burst, (l) => l.command === "JOIN"))
      yield* c.send("CAP LIST")
      expect((yield* c.next("CAP")).params[2]!.split(" ")).not.toContain("away-notify")

      // A channel joined later: the upstream's JOIN, NAMES and end of NAMES, with the marker before the end.
      yield* c.send("JOIN #later")
      yield* upstream.waitFor("JOIN #later")
      yield* upstream.send(
        ":alice!a@host JOIN #later",
        ":irc.fake.test 353 alice = #later :@alice",
        ":irc.fake.test 366 alice #later :End of /NAMES list."
      )
      const joined = yield* c.until("366")
      const commands = joined.map((l) => l.command).filter((command) => ["JOIN", "353", "MARKREAD", "366"].includes(command))
      expect(commands).toEqual(["JOIN", "353", "MARKREAD", "366"])
      expect(joined.find((l) => l.command === "MARKREAD")?.params).toEqual(["#later", "*"])
      // A NAMES query that is no JOIN's gets no MARKREAD.
      yield* upstream.send(
        ":irc.fake.test 353 alice = #later :@alice",
        ":irc.fake.test 366 alice #later :End of /NAMES list."
      )
      expect((yield* c.until("366")).map((l) => l.command)).not.toContain("MARKREAD")
    }), 60_000)

  it.scopedLive("a DM to the member's own nick reaches a client without echo-message once and is stored once", () =>
    Effect.gen(function*() {
      const { get, port, upstream } = yield* start
      const c = yield* connectClient(port)
      yield* c.send(`PASS :alice/fake:${PASSWORD}`, "NICK someone", "USER someone 0 * :Real")
      yield* c.until("366")
      yield* c.send("PRIVMSG alice :note to self")
      yield* upstream.waitFor("PRIVMSG alice :note to self")
      // ngircd (no echo-message) delivers it back to its sender.
      yield* upstream.send(":alice!a@host PRIVMSG alice :note to self")
      const got = yield* c.next("PRIVMSG")
      expect(got.params).toEqual(["alice", "note to self"])
      expect(got.source).toBe("alice!a@host")
      // Nothing else follows: the own send itself is no echo for this client.
      yield* upstream.send(":bob!b@host PRIVMSG #belay :after")
      const rest = yield* c.until((l) => l.command === "PRIVMSG" && l.params[1] === "after")
      expect(rest.filter((l) => l.command === "PRIVMSG").map((l) => l.params[1])).toEqual(["after"])
      // Stored as sent, the server's delivery of it being the same message: one row.
      yield* get(MessageWriter).flush
      const accountId = Option.getOrThrow(yield* get(Accounts).findByName("alice")).id
      const stored = yield* get(MessageHistory).after(accountId, 0, 100)
      expect(stored.filter((m) => m.text === "note to self").map((m) => [m.target, m.self])).toEqual([["alice", true]])
    }), 60_000)

  it.scopedLive("MARKREAD with a time that names no message answers the marker as stored, not FAIL", () =>
    Effect.gen(function*() {
      const { get, port, upstream } = yield* start
      const c = yield* welcomedClient(port, "alice/fake", PASSWORD)
      // A buffer without history, and a time before its first message: the marker (a message) cannot go there.
      yield* c.send("MARKREAD nobody timestamp=2019-01-04T14:33:26.123Z")
      expect((yield* c.next((l) => l.command === "MARKREAD" || l.command === "FAIL")).params).toEqual(["nobody", "*"])
      yield* upstream.send(":bob!b@host PRIVMSG #belay :first")
      const first = yield* c.next("PRIVMSG")
      yield* get(MessageWriter).flush
      yield* c.send("MARKREAD #belay timestamp=2019-01-04T14:33:26.123Z")
      expect((yield* c.next((l) => l.command === "MARKREAD" || l.command === "FAIL")).params).toEqual(["#belay", "*"])
      // Once set, a time before every message answers the stored marker too.
      yield* c.send(`MARKREAD #belay timestamp=${first.tags.time}`)
      yield* c.next((l) => l.command === "MARKREAD" && l.params[1] !== "*")
      yield* c.send("MARKREAD #belay timestamp=2019-01-04T14:33:26.123Z")
      expect((yield* c.next((l) => l.command === "MARKREAD" || l.command === "FAIL")).params)
        .toEqual(["#belay", `timestamp=${first.tags.time}`])
    }), 60_000)

  it.scopedLive("PRIVMSG with an empty text is 412 ERR_NOTEXTTOSEND and sends nothing upstream", () =>
    Effect.gen(function*() {
      const { port, upstream } = yield* start
      const c = yield* welcomedClient(port, "alice/fake", PASSWORD)
      yield* c.send("PRIVMSG #belay :")
      const answer = yield* c.next((l) => /^\d{3}$/.test(l.command) || l.command === "FAIL")
      expect([answer.command, answer.params[0]]).toEqual(["412", "alice"])
      yield* c.send("NOTICE #belay :", "PRIVMSG #belay :after that")
      yield* upstream.waitFor("PRIVMSG #belay :after that")
      expect((yield* upstream.skipped).filter((l) => /^(PRIVMSG|NOTICE) #belay/.test(l))).toEqual([])
    }), 60_000)

  it.scopedLive("NAMES and WHO narrowed to a client without multi-prefix and userhost-in-names", () =>
    Effect.gen(function*() {
      const { port, upstream } = yield* startListenerApp({ upstreamCaps: ["multi-prefix", "userhost-in-names"] })
      const plain = yield* welcomedClient(port, "alice/fake", PASSWORD)
      const multi = yield* welcomedClient(port, "alice/fake", PASSWORD, `${CAPS} multi-prefix`)
      // The upstream (irc-framework enabled both) answers in its own form.
      yield* upstream.send(
        ":irc.fake.test 353 alice = #belay :@+alice!a@host bob!b@host +carol!c@host",
        ":irc.fake.test 366 alice #belay :End of /NAMES list."
      )
      // The actor's own WHO after NAMES answered first: its replies are the actor's, not the clients'.
      yield* upstream.waitFor("WHO #belay")
      yield* upstream.send(
        ":irc.fake.test 315 alice #belay :End of /WHO list.",
        ":irc.fake.test 352 alice #belay a host irc.fake.test alice H*@+ :0 Alice"
      )
      expect((yield* plain.next("353")).params[3]).toBe("@alice bob +carol")
      expect((yield* plain.next("352")).params[6]).toBe("H*@")
      expect((yield* multi.next("353")).params[3]).toBe("@+alice bob +carol")
      expect((yield* multi.next("352")).params[6]).toBe("H*@+")
    }), 60_000)

  it.scopedLive("CHATHISTORY: a name that is no channel or nick is INVALID_TARGET, a valid one without history empty", () =>
    Effect.gen(function*() {
      const { port } = yield* start
      const c = yield* welcomedClient(port, "alice/fake", PASSWORD)
      yield* c.send("CHATHISTORY LATEST bob!*@* * 10")
      const failed = yield* c.next((l) => l.command === "FAIL" || l.command === "BATCH")
      expect([failed.command, ...failed.params.slice(0, 4)]).toEqual(["FAIL", "CHATHISTORY", "INVALID_TARGET", "LATEST", "bob!*@*"])
      yield* c.send("CHATHISTORY LATEST nobody * 10", "CHATHISTORY BEFORE #nowhere timestamp=2030-01-01T00:00:00.000Z 10")
      for (const target of ["nobody", "#nowhere"]) {
        const open = yield* c.next((l) => l.command === "FAIL" || l.command === "BATCH")
        expect([open.command, open.params[1], open.params[2]]).toEqual(["BATCH", "chathistory", target])
        const lines = yield* c.until(batchEnd)
        expect(lines.map((l) => l.command)).toEqual(["BATCH"])
      }
    }), 60_000)

  it.scopedLive("SETNAME goes to an upstream with setname, whose echo reaches the clients; without it CANNOT_CHANGE_REALNAME", () =>
    Effect.gen(function*() {
      const { port, upstream } = yield* startListenerApp({ upstreamCaps: ["setname"] })
      const c = yield* welcomedClient(port, "alice/fake", PASSWORD, `${CAPS} setname`)
      yield* c.send("SETNAME :Alice Liddell")
      yield* upstream.waitFor("SETNAME :Alice Liddell")
      yield* upstream.send(":alice!a@host SETNAME :Alice Liddell")
      const echo = yield* c.next((l) => l.command === "SETNAME" || l.command === "FAIL")
      expect([echo.command, echo.source, echo.params]).toEqual(["SETNAME", "alice!a@host", ["Alice Liddell"]])

      const without = yield* start
      const d = yield* welcomedClient(without.port, "alice/fake", PASSWORD)
      yield* d.send("SETNAME :Alice Liddell")
      const refused = yield* d.next((l) => l.command === "SETNAME" || l.command === "FAIL")
      expect([refused.command, ...refused.params.slice(0, 2)]).toEqual(["FAIL", "SETNAME", "CANNOT_CHANGE_REALNAME"])
    }), 90_000)
})
