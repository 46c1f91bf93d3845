/**
 * The smaller capabilities Belay offers as soju does, end to end (real actor, fake IRC server, real database):
 * no-implicit-names (no NAMES after the member's JOIN, in the welcome or live, while a client without it gets them),
 * extended-isupport (`ISUPPORT` before registration, and every 005 in a `draft/isupport` batch), account-required
 * (listed, never enabled), pre-away (an away message before registration becomes the member's; `AWAY *` keeps the
 * client out of auto-away's count); then draft/event-playback (stored channel events in CHATHISTORY in their places,
 * messages only without it) and soju.im/search (`SEARCH` from the stored history, in a `soju.im/search` batch).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { AUTO_AWAY_MESSAGE } from "../../src/listener/SessionHub.js"
import { MessageWriter } from "../../src/services/history/MessageWriter.js"
import { type ClientLine, connectClient, saslPlain } from "../support/IrcTestClient.js"
import { batchEnd, CAPS, PASSWORD, startListenerApp, texts, welcomedClient } from "../support/IrcListenerApp.js"
import { describeMode } from "../support/TestDatabase.js"

/** Signs in with `caps` (and SASL), sends `before` ahead of CAP END, and reads the welcome up to its MOTD numeric. */
const client = (port: number, user: string, caps: string, before: ReadonlyArray<string> = []) =>
  Effect.gen(function*() {
    const c = yield* connectClient(port)
    yield* c.send("CAP LS 302", "NICK someone", `USER ${user} 0 * :Real`)
    const ls = yield* c.until((l) => l.command === "CAP" && l.params[1] === "LS" && l.params[2] !== "*")
    yield* c.send(`CAP REQ :sasl ${caps}`)
    yield* c.next((l) => l.command === "CAP" && l.params[1] === "ACK")
    yield* c.send("AUTHENTICATE PLAIN")
    yield* c.next("AUTHENTICATE")
    yield* c.send(`AUTHENTICATE ${saslPlain(user, PASSWORD)}`)
    yield* c.next("903")
    yield* c.send(...before, "PING before-end")
    const early = yield* c.until("PONG")
    yield* c.send("CAP END")
    const welcome = yield* c.until("422")
    // The rest of the welcome (channels), up to a PING's answer.
    yield* c.send("PING after-welcome")
    const rest = yield* c.until("PONG")
    return Object.assign(c, { ls, early, welcome, rest })
  })

const lsWords = (lines: ReadonlyArray<ClientLine>) => lines.flatMap((l) => l.params.at(-1)!.split(" "))

describe(`soju's smaller capabilities on ${describeMode}`, () => {
  it.scopedLive("no-implicit-names, extended-isupport, account-required, pre-away", () =>
    Effect.gen(function*() {
      const app = yield* startListenerApp()
      const { port, upstream, networkId } = app

      // pre-away `AWAY *`, the first client: it does not count as present, so auto-away marks the member away.
      const quiet = yield* client(port, "alice/fake@quiet", `${CAPS} draft/no-implicit-names draft/pre-away batch draft/extended-isupport`, [
        "AWAY *",
        "ISUPPORT"
      ])
      expect((yield* upstream.waitFor(/^AWAY /)).params[0]).toBe(AUTO_AWAY_MESSAGE)

      // account-required is listed, and a REQ naming it is refused whole.
      const words = lsWords(quiet.ls)
      for (const cap of ["draft/no-implicit-names", "draft/pre-away", "draft/extended-isupport", "soju.im/account-required", "draft/event-playback", "soju.im/search"]) {
        expect(words).toContain(cap)
      }
      yield* quiet.send("CAP REQ :batch soju.im/account-required")
      expect((yield* quiet.next((l) => l.command === "CAP")).params[1]).toBe("NAK")

      // ISUPPORT before registration: Belay's own tokens, in a draft/isupport batch holding nothing else.
      const early = quiet.early.filter((l) => l.command !== "PONG")
      expect(early.map((l) => l.command)).toEqual(["BATCH", "005", "BATCH"])
      expect(early[0]!.params.slice(1)).toEqual(["draft/isupport"])
      expect(early[1]!.tags.batch).toBe(early[0]!.params[0]!.slice(1))
      expect(early[1]!.params).toContain("CHATHISTORY=1000")
      // The welcome's 005 lines too, now with the network's tokens.
      const isupport = quiet.welcome.filter((l) => l.command === "005")
      const opened = quiet.welcome.find((l) => l.command === "BATCH" && l.params[1] === "draft/isupport")!
      expect(isupport.length).toBeGreaterThan(0)
      for (const l of isupport) expect(l.tags.batch).toBe(opened.params[0]!.slice(1))
      expect(isupport.flatMap((l) => l.params)).toContain(`BOUNCER_NETID=${networkId}`)
      // no-implicit-names: the welcome draws #belay's JOIN and topic but no NAMES.
      const burst = quiet.rest
      expect(burst.map((l) => l.command)).toContain("JOIN")
      expect(burst.map((l) => l.command)).toContain("332")
      expect(burst.some((l) => l.command === "353" || l.command === "366")).toBe(false)

      // And the command after registration.
      yield* quiet.send("ISUPPORT")
      const again = yield* quiet.until(batchEnd)
      expect(again.filter((l) => l.command === "005").flatMap((l) => l.params)).toContain(`BOUNCER_NETID=${networkId}`)

      // A client without pre-away: AWAY before registration is refused as any unregistered command.
      const plain = yield* client(port, "alice/fake@plain", CAPS, ["AWAY :too early"])
      expect(plain.early.map((l) => l.command)).toContain("451")
      expect(plain.rest.map((l) => l.command)).toContain("366")
      // It is present: auto-away is cleared.
      yield* upstream.waitFor(/^AWAY$/)

      // A live JOIN of the member: the NAMES that follows reaches the plain client, not the quiet one.
      yield* upstream.send(
        ":alice!a@host JOIN #new",
        ":irc.fake.test 353 alice = #new :@alice dora",
        ":irc.fake.test 366 alice #new :End of /NAMES list.",
        ":dora!d@host TOPIC #new :after the names"
      )
      const quietLive = yield* quiet.until((l) => l.command === "TOPIC")
      expect(quietLive.map((l) => l.command).filter((c) => c !== "MARKREAD")).toEqual(["JOIN", "TOPIC"])
      const plainLive = yield* plain.until((l) => l.command === "TOPIC")
      expect(plainLive.map((l) => l.command).filter((c) => c !== "MARKREAD")).toEqual(["JOIN", "353", "366", "TOPIC"])
      // A later NAMES of the channel (the answer to an explicit NAMES) passes: it no longer follows the JOIN.
      yield* upstream.send(":irc.fake.test 353 alice = #new :@alice dora", ":irc.fake.test 366 alice #new :End of /NAMES list.")
      expect((yield* quiet.next("366")).params[1]).toBe("#new")

      // After registration: `AWAY` counts the quiet client as present again (and clears the away upstream), so the
      // plain client leaving sets no auto-away; then `AWAY *` (answered 306) does.
      yield* quiet.send("AWAY")
      yield* upstream.waitFor(/^AWAY$/)
      yield* plain.send("QUIT")
      yield* plain.closed()
      yield* quiet.send("AWAY *")
      yield* quiet.next("306")
      expect((yield* upstream.waitFor(/^AWAY /)).params[0]).toBe(AUTO_AWAY_MESSAGE)
      expect((yield* upstream.lines).filter((l) => l.includes(AUTO_AWAY_MESSAGE))).toHaveLength(2)

      // pre-away with a message: the member's away message once registered, auto-away left to it.
      const lunch = yield* client(port, "alice/fake@lunch", `${CAPS} draft/pre-away`, ["AWAY :at lunch"])
      expect(lunch.early.map((l) => l.command)).not.toContain("451")
      yield* upstream.waitFor("AWAY :at lunch")
      yield* lunch.send("PRIVMSG #belay :fence after lunch")
      yield* upstream.waitFor("PRIVMSG #belay :fence after lunch")
      expect((yield* upstream.lines).filter((l) => l.startsWith("AWAY")).at(-1)).toBe("AWAY :at lunch")
    }), 60_000)

  it.scopedLive("draft/event-playback in CHATHISTORY, and SEARCH", () =>
    Effect.gen(function*() {
      const app = yield* startListenerApp()
      const { upstream, port } = app
      const at = (s: number) => `2024-02-01T10:00:${String(s).padStart(2, "0")}.000Z`
      const events = yield* welcomedClient(port, "alice/fake@events", PASSWORD, `${CAPS} draft/event-playback soju.im/search`)
      const plain = yield* welcomedClient(port, "alice/fake@plain", PASSWORD)
      yield* upstream.send(
        `@time=${at(1)} :dora!d@host JOIN #belay`,
        `@time=${at(2)} :dora!d@host PRIVMSG #belay :hello pancakes`,
        `@time=${at(3)} :dora!d@host NICK dorothy`,
        `@time=${at(4)} :bob!b@host MODE #belay +o dorothy`,
        `@time=${at(5)} :dorothy!d@host TOPIC #belay :pancakes day`,
        `@time=${at(6)} :bob!b@host KICK #belay dorothy :too many pancakes`,
        `@time=${at(7)} :bob!b@host PRIVMSG #belay :sorry about the pancakes`,
        `@time=${at(8)} :carol!c@host PART #belay :later`,
        `@time=${at(9)} :bob!b@host QUIT :gone`,
        `@time=${at(10)} :erin!e@host PRIVMSG alice :pancakes in private`
      )
      yield* events.next((l) => l.command === "PRIVMSG" && l.params[1] === "pancakes in private", "10 seconds")
      yield* app.get(MessageWriter).flush

      const page = (c: typeof events, command: string) =>
        Effect.gen(function*() {
          yield* c.send(command)
          const lines = yield* c.until(batchEnd)
          const ref = lines.find((l) => l.command === "BATCH" && l.params[0]!.startsWith("+"))!.params[0]!.slice(1)
          return lines.filter((l) => l.tags.batch === ref)
        })

      // With event-playback: the events in their places, each with its time and msgid.
      const played = yield* page(events, `CHATHISTORY BETWEEN #belay timestamp=${at(0)} timestamp=${at(11)} 100`)
      expect(played.map((l) => [l.source?.split("!")[0], l.command, ...l.params])).toEqual([
        ["dora", "JOIN", "#belay"],
        ["dora", "PRIVMSG", "#belay", "hello pancakes"],
        ["dora", "NICK", "dorothy"],
        ["bob", "MODE", "#belay", "+o", "dorothy"],
        ["dorothy", "TOPIC", "#belay", "pancakes day"],
        ["bob", "KICK", "#belay", "dorothy", "too many pancakes"],
        ["bob", "PRIVMSG", "#belay", "sorry about the pancakes"],
        ["carol", "PART", "#belay", "later"],
        ["bob", "QUIT", "gone"]
      ])
      expect(played.map((l) => l.tags.time)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9].map(at))
      expect(played.every((l) => l.tags.msgid !== undefined)).toBe(true)
      // The limit counts events too.
      expect((yield* page(events, "CHATHISTORY LATEST #belay * 2")).map((l) => l.command)).toEqual(["PART", "QUIT"])

      // Without it: the messages only.
      const messages = yield* page(plain, `CHATHISTORY BETWEEN #belay timestamp=${at(0)} timestamp=${at(11)} 100`)
      expect(messages.map((l) => l.command)).toEqual(["PRIVMSG", "PRIVMSG"])

      // SEARCH: the matches in the network, oldest first, in a soju.im/search batch.
      const found = yield* page(events, "SEARCH text=pancakes")
      expect(texts(found)).toEqual(["hello pancakes", "sorry about the pancakes", "pancakes in private"])
      expect(found.every((l) => l.tags.msgid !== undefined && l.tags.time !== undefined)).toBe(true)
      // Narrowed by buffer, speaker, limit and time (inclusive).
      expect(texts(yield* page(events, "SEARCH text=pancakes;in=#BELAY"))).toEqual(["hello pancakes", "sorry about the pancakes"])
      expect(texts(yield* page(events, "SEARCH text=pancakes;from=bob"))).toEqual(["sorry about the pancakes"])
      expect(texts(yield* page(events, "SEARCH text=pancakes;limit=1"))).toEqual(["pancakes in private"])
      expect(texts(yield* page(events, `SEARCH text=pancakes;after=${at(2)};before=${at(7)}`))).toEqual([
        "hello pancakes",
        "sorry about the pancakes"
      ])
      expect(texts(yield* page(events, "SEARCH text=waffles"))).toEqual([])
      // The batch type.
      yield* events.send("SEARCH text=pancakes;limit=1")
      const batch = yield* events.until(batchEnd)
      expect(batch.find((l) => l.command === "BATCH")!.params[1]).toBe("soju.im/search")
      // Refusals: no text, a bad limit, a bad time.
      for (const [attrs, context] of [["in=#belay", "text"], ["text=x;limit=0", "limit"], ["text=x;after=yesterday", "after"]] as const) {
        yield* events.send(`SEARCH ${attrs}`)
        expect((yield* events.next("FAIL")).params.slice(0, 3)).toEqual(["SEARCH", "INVALID_PARAMS", context])
      }
      // A control connection has nothing to search.
      const control = yield* client(port, "alice", CAPS)
      yield* control.send("SEARCH text=pancakes")
      expect((yield* control.next("FAIL")).params.slice(0, 3)).toEqual(["SEARCH", "INVALID_PARAMS", "in"])
    }), 60_000)
})

