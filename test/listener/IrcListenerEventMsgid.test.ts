/**
 * Live channel events and their stored rows, end to end (real actor, fake IRC server, real database): a JOIN, NICK,
 * MODE, TOPIC, KICK, PART and QUIT the upstream sent without a msgid reach a client with message-tags with the msgid
 * and time that CHATHISTORY under draft/event-playback later shows for each, in the server's order among the messages;
 * one the upstream gave a msgid keeps it; a client without message-tags gets the same lines without tags.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type { ClientLine } from "../support/IrcTestClient.js"
import { batchEnd, CAPS, PASSWORD, startListenerApp, welcomedClient } from "../support/IrcListenerApp.js"
import { describeMode } from "../support/TestDatabase.js"

const EVENTS: ReadonlySet<string> = new Set(["JOIN", "PART", "QUIT", "KICK", "NICK", "MODE", "TOPIC"])

const events = (lines: ReadonlyArray<ClientLine>) => lines.filter((l) => EVENTS.has(l.command))

describe(`live channel events with their stored msgid on ${describeMode}`, () => {
  it.scopedLive("a stored event carries the msgid and time CHATHISTORY gives it; without message-tags, no tags", () =>
    Effect.gen(function*() {
      const { upstream, port } = yield* startListenerApp()
      const tagged = yield* welcomedClient(port, "alice/fake@events", PASSWORD, `${CAPS} draft/event-playback`)
      const plain = yield* welcomedClient(port, "alice/fake@plain", PASSWORD, "batch")
      yield* upstream.send(
        ":dora!d@host JOIN #belay",
        ":dora!d@host PRIVMSG #belay :hello",
        ":dora!d@host NICK dorothy",
        ":bob!b@host MODE #belay +o dorothy",
        ":dorothy!d@host TOPIC #belay :pancakes day",
        ":bob!b@host KICK #belay dorothy :too many pancakes",
        ":carol!c@host PART #belay :later",
        ":bob!b@host QUIT :gone",
        "@msgid=up-1 :erin!e@host JOIN #belay",
        ":erin!e@host PRIVMSG #belay :fence"
      )
      const seen = yield* tagged.until((l) => l.command === "PRIVMSG" && l.params[1] === "fence", "20 seconds")
      const live = events(seen)
      const commands = ["JOIN", "NICK", "MODE", "TOPIC", "KICK", "PART", "QUIT", "JOIN"]
      expect(live.map((l) => l.command)).toEqual(commands)
      // In the server's order among the messages.
      expect(seen.filter((l) => l.command !== "PING").map((l) => l.command)).toEqual(["JOIN", "PRIVMSG", ...commands.slice(1), "PRIVMSG"])
      for (const l of live) {
        expect(l.tags.msgid).toMatch(/^\S+$/)
        expect(l.tags.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
      }
      expect(live.at(-1)!.tags.msgid).toBe("up-1")
      expect(new Set(live.map((l) => l.tags.msgid)).size).toBe(live.length)

      // The same events from the history, with the same msgid and time.
      yield* tagged.send("CHATHISTORY LATEST #belay * 50")
      const page = yield* tagged.until(batchEnd)
      const ref = page.find((l) => l.command === "BATCH" && l.params[0]!.startsWith("+"))!.params[0]!.slice(1)
      const shown = new Map(events(page.filter((l) => l.tags.batch === ref)).map((l) => [l.tags.msgid, l] as const))
      for (const l of live) {
        const stored = shown.get(l.tags.msgid)
        expect(stored?.command).toBe(l.command)
        expect(stored?.tags.time).toBe(l.tags.time)
      }

      // A client without message-tags: the same lines, as the upstream sent them, without tags.
      const plainSeen = yield* plain.until((l) => l.command === "PRIVMSG" && l.params[1] === "fence", "20 seconds")
      const plainLive = events(plainSeen)
      expect(plainLive.map((l) => l.command)).toEqual(commands)
      for (const l of plainLive) expect(l.tags).toEqual({})
      expect(plainLive.find((l) => l.command === "TOPIC")?.raw).toBe(":dorothy!d@host TOPIC #belay :pancakes day")
    }), 60_000)
})
