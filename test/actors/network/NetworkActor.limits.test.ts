// NetworkActor and the account's channel limit (docs/decisions/account-limits.md "Channels: joined and configured,
// counted by the actor"), against the scripted fake IRC server: a channel already counted is joined again at the
// limit, a new one past it is refused with QuotaExceeded naming the limit and no JOIN is written, and a JOIN sent raw
// counts the same way.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { Command } from "../../../src/actors/network/NetworkActor.js"
import { live, registered, startWithServer as setup } from "../../support/ActorHarness.js"

describe("NetworkActor: the channel limit", () => {
  it.scoped("joins within the limit, refuses past it with nothing sent, and counts raw JOINs", () =>
    Effect.gen(function*() {
      const { server, h } = yield* setup({}, { channels: [{ name: "#a", key: null }] })
      const { conn } = yield* registered(server, h)
      yield* conn.waitFor("JOIN #a")
      yield* conn.send(":belay!belayuser@127.0.0.1 JOIN #a")
      yield* h.waitMessage((m) => m.kind === "join" && m.target === "#a")

      // #a is counted already: joining it again is never refused, even at a limit of 1.
      yield* h.ask(Command.join("#A", Option.none(), 1))
      yield* conn.waitFor("JOIN #A")

      yield* h.ask(Command.join("#b", Option.none(), 2))
      yield* conn.waitFor("JOIN #b")
      yield* conn.send(":belay!belayuser@127.0.0.1 JOIN #b")
      yield* h.waitMessage((m) => m.kind === "join" && m.target === "#b")

      const refused = yield* Effect.flip(h.ask(Command.join("#c", Option.none(), 2)))
      expect(refused).toMatchObject({ _tag: "QuotaExceeded", limit: "channels", max: 2 })

      // Raw: two new channels where one place is left is refused whole; one fits.
      const rawRefused = yield* Effect.flip(h.ask(Command.raw("JOIN #c,#d", 3)))
      expect(rawRefused).toMatchObject({ _tag: "QuotaExceeded", limit: "channels", max: 3 })
      yield* h.ask(Command.raw("JOIN #c", 3))
      yield* conn.waitFor("JOIN #c")

      // No limit (null): as before.
      yield* h.ask(Command.join("#e", Option.none(), null))
      yield* conn.waitFor("JOIN #e")
      yield* live(Effect.sleep("50 millis"))
      const joins = (yield* conn.lines).filter((l) => l.startsWith("JOIN"))
      expect(joins).toEqual(["JOIN #a", "JOIN #A", "JOIN #b", "JOIN #c", "JOIN #e"])
    }))
})
