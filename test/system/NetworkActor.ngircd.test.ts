// System test: the network actors against a real IRC server (ngircd 26, /usr/sbin/ngircd) on a free loopback port,
// over the real services (the embedded PostgreSQL or TEST_DATABASE_URL, MessageWriter, Networks) and irc-framework. A second,
// bare-socket client plays the other person in the channel. ngircd throttles bursts (PENALTY), so waits are long.
//
// Proves: connect and register, rejoin of the network's channels, a message round trip in both directions, the
// reconnect after ngircd is restarted (backoff, then back, channels rejoined), and that the history survived it.
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Option } from "effect"
import type { NetworkControlService } from "../../src/actors/NetworkApi.js"
import type { NetworkStatus } from "../../src/schema/Network.js"
import { MessageHistory } from "../../src/services/history/MessageHistory.js"
import { MessageWriter } from "../../src/services/history/MessageWriter.js"
import { eventually } from "../support/Eventually.js"
import { NGIRCD, ngircd, ngircdNetwork, peer } from "../support/Ngircd.js"
import { accountWithNetwork, startSupervisor, storedHistory, withTestServices } from "../support/TestServices.js"

// A status wait may span a reconnect: the backoff step, then ngircd's start and registration.
const RECONNECT_WAIT = Duration.seconds(90)

const waitMembers = (control: NetworkControlService, id: number, channel: string, nicks: ReadonlyArray<string>) =>
  eventually(
    `members of ${channel} to include ${nicks.join(", ")}`,
    Effect.orElseSucceed(control.members(id, channel), () => []),
    (members) => nicks.every((n) => members.some((m) => m.nick === n))
  )

describe("NetworkActor against ngircd", () => {
  it.live.skipIf(NGIRCD.skip)("connect, join, round trip, reconnect after a server restart, history intact", () =>
    withTestServices(Effect.gen(function*() {
      const server = yield* ngircd
      const { control } = yield* startSupervisor()
      const writer = yield* MessageWriter
      const store = yield* MessageHistory
      const id = yield* accountWithNetwork("sys", ngircdNetwork(server.port, ["#belay"]))
      const status = (state: NetworkStatus["state"]) =>
        eventually(`the network ${state}`, control.status(id), (s) => s.state === state, RECONNECT_WAIT)
      const said = (text: string) =>
        eventually(`"${text}" in the history of #belay`, storedHistory(id, "#belay"), (ms) => ms.some((m) => m.text === text))

      // Connect and join (the channel comes from the store: the rejoin path).
      const connected = yield* status("connected")
      expect(connected.nick).toBe("belaybot")
      const other = yield* peer(server.port, "peer")
      yield* other.send("JOIN #belay")
      yield* other.waitFor((l) => / 366 /.test(l))
      yield* waitMembers(control, id, "#belay", ["belaybot", "peer"])

      // Round trip: peer → Belay's history; Belay → peer.
      yield* other.send("PRIVMSG #belay :hello from peer")
      yield* said("hello from peer")
      yield* control.say(id, "privmsg", "#belay", "hello from belay")
      yield* other.waitFor((l) => l.includes("PRIVMSG #belay :hello from belay"))
      yield* control.whois(id, "peer")
      yield* eventually("the WHOIS reply in the server buffer", storedHistory(id, `:server:${id}`), (ms) =>
        ms.some((m) => m.numeric === "311"))

      // ngircd goes away and comes back: backoff, then connected again with #belay rejoined.
      yield* server.stop
      const down = yield* status("backoff")
      expect(down.nextRetryAt).not.toBeNull()
      expect(yield* Effect.flip(control.say(id, "privmsg", "#belay", "lost"))).toMatchObject({ _tag: "NotConnected" })
      yield* server.start
      yield* status("connected")
      const again = yield* peer(server.port, "peer")
      yield* again.send("JOIN #belay")
      yield* again.waitFor((l) => / 366 /.test(l))
      yield* waitMembers(control, id, "#belay", ["belaybot", "peer"])
      yield* again.send("PRIVMSG #belay :after the restart")
      yield* said("after the restart")

      // History intact and in order across the restart.
      yield* writer.flush
      const history = yield* store.recent(id, "#belay", { before: Option.none(), limit: 100 })
      const privmsgs = history.filter((m) => m.kind === "privmsg").map((m) => [m.nick, m.text, m.self])
      expect(privmsgs).toEqual([
        ["peer", "hello from peer", false],
        ["belaybot", "hello from belay", true],
        ["peer", "after the restart", false]
      ])
      expect(history.filter((m) => m.kind === "join" && m.self)).toHaveLength(2)
      const serverBuffer = yield* storedHistory(id, `:server:${id}`)
      expect(serverBuffer.some((m) => m.kind === "error" && m.text.startsWith("disconnected"))).toBe(true)
    })), { timeout: 180_000 })
})
