/**
 * System test: a real IRC client through Belay's IRC client listener (docs/contract.md "The IRC client listener").
 * A real `belay serve` with BELAY_IRC_LISTEN on loopback, its account's network on a real ngircd joined to a channel,
 * a bare-socket peer on ngircd, and irssi (in tmux, typed into as a person would) signing in to the listener with
 * SASL PLAIN as `alice/ngircd@irssi`.
 *
 * Proves, from what irssi shows (its channel log) and what the peer and the database see: irssi sees the channel;
 * the peer's line reaches irssi; a line typed in irssi reaches the peer and is stored once; with irssi gone Belay
 * marks the member away upstream; lines said meanwhile reach irssi when it comes back under the same client name
 * (the backlog), once, and the away mark is lifted.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { awayMessage, listenerWithNetwork, occurrences } from "../support/ClientChecks.js"
import { eventually } from "../support/Eventually.js"
import { irssi, IRSSI, TMUX } from "../support/Irssi.js"
import { NGIRCD, ngircd, peer } from "../support/Ngircd.js"

const CHANNEL = "#belay-irc"
const PASSWORD = "correct horse battery"
const WAIT = "30 seconds"

describe("an IRC client (irssi) through Belay's listener", () => {
  it.scopedLive.skipIf(NGIRCD.skip || IRSSI.skip || TMUX.skip)(
    "sees the channel, hears the peer, is heard, and gets what it missed after a reconnect",
    () =>
      Effect.gen(function*() {
        const server = yield* ngircd
        const { belay, listenerPort, stored } = yield* listenerWithNetwork({
          ngircdPort: server.port,
          channel: CHANNEL,
          password: PASSWORD
        })

        const client = yield* irssi({ port: listenerPort, saslUser: "alice/ngircd@irssi", password: PASSWORD, nick: "alice" })
        const log = client.log(CHANNEL)
        yield* client.start
        const diagnosed = <A, E, R>(self: Effect.Effect<A, E, R>) =>
          Effect.catchAll(self, (error) =>
            Effect.flatMap(client.screen, (screen) =>
              Effect.fail(new Error(`${String(error)}\nirssi shows:\n${screen}\nbelay:\n${belay.output().slice(-3000)}`))))

        // irssi sees the channel (Belay's welcome burst, or the JOIN as the network makes it).
        yield* eventually("irssi in the channel", log, (l) => new RegExp(`alice \\S+ has joined ${CHANNEL}`).test(l), WAIT)
          .pipe(diagnosed)

        // The peer joins and speaks; irssi shows both.
        const bob = yield* peer(server.port, "bob")
        yield* bob.send(`JOIN ${CHANNEL}`)
        yield* bob.waitFor((l) => / 366 /.test(l))
        yield* bob.send(`PRIVMSG ${CHANNEL} :hello from the peer`)
        yield* eventually("the peer's line in irssi", log, (l) => /< ?bob> hello from the peer$/m.test(l), WAIT).pipe(diagnosed)
        expect(yield* log).toMatch(new RegExp(`bob \\S+ has joined ${CHANNEL}`))

        // A line typed in irssi's channel window reaches the peer, and is stored once.
        yield* client.type(`/window goto ${CHANNEL}`)
        yield* client.type("hello from irssi")
        const heard = yield* bob.waitFor((l) => l.includes(` PRIVMSG ${CHANNEL} :hello from irssi`)).pipe(diagnosed)
        expect(heard).toMatch(/^:alice!/)
        yield* eventually("irssi's line stored", stored("hello from irssi"), (n) => n >= 1, WAIT)
        expect(occurrences(yield* log, /<.alice> hello from irssi$/)).toBe(1)

        // irssi leaves: the last client of the network is gone, so Belay marks the member away upstream. Once the
        // peer sees that, the session is over and what is said next is for the backlog.
        yield* client.quit
        const away = yield* eventually("alice marked away", awayMessage(bob, "alice"), (m) => m !== null, WAIT)
        expect(away).toBe("Auto away: no client attached")
        yield* bob.send(`PRIVMSG ${CHANNEL} :missed one`)
        yield* bob.send(`PRIVMSG ${CHANNEL} :missed two`)
        yield* eventually("the missed lines stored", Effect.zipWith(stored("missed one"), stored("missed two"), (a, b) => a + b), (n) =>
          n === 2, WAIT)

        // irssi comes back as the same client (`@irssi`): the missed lines arrive, once, after its new join.
        yield* client.start
        const again = yield* eventually("the missed lines in irssi", log, (l) => /< ?bob> missed two$/m.test(l), WAIT).pipe(diagnosed)
        const secondSession = again.slice(again.lastIndexOf("--- Log opened"))
        expect(secondSession).toMatch(/< ?bob> missed one\n.*< ?bob> missed two$/m)
        expect(occurrences(again, /< ?bob> missed one$/)).toBe(1)
        expect(occurrences(again, /< ?bob> hello from the peer$/)).toBe(1)
        // Back: the away mark Belay set is lifted.
        yield* eventually("alice back", awayMessage(bob, "alice"), (m) => m === null, WAIT)
        expect(yield* stored("hello from irssi")).toBe(1)
      }),
    { timeout: 90_000 }
  )
})
