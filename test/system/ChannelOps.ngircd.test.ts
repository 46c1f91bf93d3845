// System test: channel operations through NetworkControl against a real ngircd 26 on a free loopback port,
// over the real services (embedded PGlite or TEST_DATABASE_URL) and irc-framework. A bare-socket peer is the other
// person in the channels. ngircd offers no away-notify (away comes from the actor's WHO) and throttles bursts
// (PENALTY), so the steps wait for each other and every wait is long.
//
// Proves: op by creating a channel; members of a two-client channel with prefixes, and away state learned by WHO;
// `+b` through set_channel_modes, then get_mode_list reading it back from the server (and nothing of the list in the
// server buffer); `q` refused where it is ngircd's owner prefix; set_topic then get_topic with the setter; a non-op's
// set_topic refused by the server and filed in the channel as an error line.
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Option } from "effect"
import type { NetworkControlService } from "../../src/actors/NetworkApi.js"
import type { StoredMessage } from "../../src/services/history/MessageHistory.js"
import { eventually } from "../support/Eventually.js"
import { NGIRCD, ngircd, ngircdNetwork, peer } from "../support/Ngircd.js"
import { accountWithNetwork, startSupervisor, storedHistory, withTestServices } from "../support/TestServices.js"

/** The members, or none while the account is not (yet) in the channel. */
const membersOf = (control: NetworkControlService, id: number, channel: string) =>
  Effect.orElseSucceed(control.members(id, channel), () => [])

describe("channel operations against ngircd", () => {
  it.live.skipIf(NGIRCD.skip)(
    "op by creation, members and away, +b then get_mode_list, topics, a non-op's refusal in the channel",
    () =>
      withTestServices(Effect.gen(function*() {
        const server = yield* ngircd
        const { control } = yield* startSupervisor()
        const id = yield* accountWithNetwork("ops", ngircdNetwork(server.port))
        yield* eventually("the network connected", control.status(id), (s) => s.state === "connected")

        // The peer owns #lobby (+t) and is away before Belay arrives there.
        const other = yield* peer(server.port, "peer")
        yield* other.send("JOIN #lobby")
        yield* other.waitFor((l) => / 366 /.test(l))
        yield* other.send("MODE #lobby +t")
        yield* other.waitFor((l) => l.includes("MODE #lobby +t"))
        yield* other.send("AWAY :brb")
        yield* other.waitFor((l) => / 306 /.test(l))

        // Op via channel creation: Belay creates #ops and is its operator.
        yield* control.join(id, "#ops", Option.none())
        yield* eventually("belaybot is op in #ops", membersOf(control, id, "#ops"), (ms) =>
          ms.some((m) => m.nick === "belaybot" && m.prefix === "@"))

        // A two-client channel: the peer joins; members sorted by nick with prefixes.
        yield* other.send("JOIN #ops")
        yield* other.waitFor((l) => / 366 /.test(l))
        const opsMembers = yield* eventually("peer in #ops", membersOf(control, id, "#ops"), (ms) => ms.length === 2)
        expect(opsMembers).toEqual([
          { nick: "belaybot", prefix: "@", modes: ["o"], away: false },
          // The peer went away before this JOIN and ngircd has no away-notify: unknown here, so not away.
          { nick: "peer", prefix: "", modes: [], away: false }
        ])

        // Joining the peer's channel: NAMES, then the actor's WHO tells that the peer is away.
        yield* control.join(id, "#lobby", Option.none())
        const lobby = yield* eventually("the peer away in #lobby", membersOf(control, id, "#lobby"), (ms) =>
          ms.some((m) => m.nick === "peer" && m.away))
        expect(lobby).toEqual([
          { nick: "belaybot", prefix: "", modes: [], away: false },
          { nick: "peer", prefix: "@", modes: ["o"], away: true }
        ])

        // +b through set_channel_modes, then the ban list fetched fresh from the server.
        const banned = "*!*@banned.example"
        expect(yield* control.setModes(id, "#ops", [{ sign: "+", letter: "b", param: banned }])).toEqual([
          `MODE #ops +b ${banned}`
        ])
        const bans = yield* control.modeList(id, "#ops", "b")
        expect(bans).toMatchObject({ channel: "#ops", letter: "b" })
        const ban = bans.entries.find((e) => e.mask === banned)
        expect(ban).toBeDefined()
        expect(ban?.setBy ?? "").toMatch(/^belaybot/)
        expect(Number.isNaN(Date.parse(ban?.setAt ?? ""))).toBe(false)
        // An empty list is an answer too; q is ngircd's owner prefix, not a quiet list.
        expect(yield* control.modeList(id, "#ops", "e")).toEqual({ channel: "#ops", letter: "e", entries: [] })
        expect(yield* Effect.flip(control.modeList(id, "#ops", "q"))).toMatchObject({ _tag: "InvalidArguments" })

        // Set and read the topic.
        yield* control.setTopic(id, "#ops", "Belay keeps watch")
        const topic = yield* eventually(
          "the new topic",
          control.topic(id, "#ops"),
          (t) => t.topic === "Belay keeps watch"
        )
        expect(topic).toMatchObject({ channel: "#ops", setBy: "belaybot" })
        expect(Number.isNaN(Date.parse(topic.setAt ?? ""))).toBe(false)
        yield* other.waitFor((l) => l.includes("TOPIC #ops :Belay keeps watch"))

        // Not an operator in #lobby (+t): ngircd refuses with 482, filed in #lobby as an error line.
        yield* control.setTopic(id, "#lobby", "not mine to set")
        const lobbyHistory = yield* eventually(
          "the refusal in #lobby",
          storedHistory(id, "#lobby"),
          (ms) => ms.some((m) => m.kind === "error" && m.numeric === "482")
        )
        expect(lobbyHistory.find((m) => m.kind === "error")?.text).toMatch(/Channel operator privileges needed.*\(482\)/)
        expect(yield* control.topic(id, "#lobby")).toMatchObject({ topic: "" })

        // Nothing of the list exchanges or the automatic WHO reached the server buffer.
        const serverBuffer: ReadonlyArray<StoredMessage> = yield* storedHistory(id, `:server:${id}`)
        const leaked = serverBuffer.filter((m) => ["367", "368", "348", "349", "352", "315"].includes(m.numeric ?? ""))
        expect(leaked).toEqual([])
      })),
    { timeout: Duration.toMillis(Duration.minutes(3)) }
  )
})
