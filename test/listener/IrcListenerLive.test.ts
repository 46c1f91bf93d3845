/**
 * What IRC clients hear live, end to end (real actor, fake IRC server, real database): stored messages and the other
 * lines in the order the server sent them.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { PASSWORD, startListenerApp, welcomedClient } from "../support/IrcListenerApp.js"
import { describeMode } from "../support/TestDatabase.js"

describe(`IRC clients live on ${describeMode}`, () => {
  it.scopedLive("messages and the lines around them arrive in the server's order", () =>
    Effect.gen(function*() {
      const { upstream, port } = yield* startListenerApp()
      const c = yield* welcomedClient(port, "alice/fake", PASSWORD, "server-time")
      yield* upstream.send(
        ":bob!b@host PRIVMSG #belay :last words",
        ":bob!b@host PART #belay :bye",
        ":carol!c@host NICK carla",
        ":carla!c@host PRIVMSG #belay :as carla",
        ":dave!d@host JOIN #belay",
        ":dave!d@host PRIVMSG #belay :hi from dave",
        ":dave!d@host TOPIC #belay :new topic"
      )
      const got = yield* c.until("TOPIC")
      expect(got.map((l) => `${l.command} ${l.params.at(-1)}`)).toEqual([
        "PRIVMSG last words",
        "PART bye",
        "NICK carla",
        "PRIVMSG as carla",
        "JOIN #belay",
        "PRIVMSG hi from dave",
        "TOPIC new topic"
      ])
    }), 60_000)
})
