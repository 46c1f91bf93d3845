/**
 * System test: a second real IRC client through Belay's IRC client listener (docs/contract.md "The IRC client
 * listener"): WeeChat without a terminal (weechat-headless), driven through its FIFO as scripts and relays drive it.
 * A real `belay serve` with BELAY_IRC_LISTEN on loopback, its account's network on a real ngircd joined to a channel,
 * a bare-socket peer on ngircd, and WeeChat signing in with SASL PLAIN as `alice/ngircd@weechat`.
 *
 * WeeChat asks for other capabilities than irssi (it requests `server-time`, `multi-prefix`, `away-notify`,
 * `account-notify`, `extended-join` among others, and takes the welcome burst's NAMES with prefixes), so this proves
 * the listener's negotiation and burst against a second real implementation. From what WeeChat logs and what the
 * peer and the database see: WeeChat joins the channel and lists the peer; the peer's line reaches it; a line it sends
 * reaches the peer and is stored once; with WeeChat gone Belay marks the member away upstream; lines said meanwhile
 * reach WeeChat when it comes back under the same client name, once and in order, and the away mark is lifted.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { awayMessage, listenerWithNetwork, occurrences } from "../support/ClientChecks.js"
import { eventually } from "../support/Eventually.js"
import { NGIRCD, ngircd, peer } from "../support/Ngircd.js"
import { WEECHAT, weechat } from "../support/Weechat.js"

const CHANNEL = "#belay-weechat"
const PASSWORD = "correct horse battery"
const WAIT = "30 seconds"

/** A message line of WeeChat's log: time, the sender (a mode prefix at most), the text. */
const said = (nick: string, text: string) => new RegExp(`^\\S+ \\S+\\t[~&@%+]?${nick}\\t${text}$`, "m")

describe("an IRC client (WeeChat) through Belay's listener", () => {
  it.scopedLive.skipIf(NGIRCD.skip || WEECHAT.skip)(
    "joins the channel, hears the peer, is heard, and gets what it missed after a reconnect",
    () =>
      Effect.gen(function*() {
        const server = yield* ngircd
        const { belay, listenerPort, stored } = yield* listenerWithNetwork({
          ngircdPort: server.port,
          channel: CHANNEL,
          password: PASSWORD
        })

        // The peer is in the channel first, so WeeChat's NAMES (Belay's welcome burst) must list it.
        const bob = yield* peer(server.port, "bob")
        yield* bob.send(`JOIN ${CHANNEL}`)
        yield* bob.waitFor((l) => / 366 /.test(l))

        const client = yield* weechat({ port: listenerPort, saslUser: "alice/ngircd@weechat", password: PASSWORD, nick: "alice" })
        const log = client.log(CHANNEL)
        yield* client.start
        const diagnosed = <A, E, R>(self: Effect.Effect<A, E, R>) =>
          Effect.catchAll(self, (error) =>
            Effect.flatMap(client.diagnostics, (shown) =>
              Effect.fail(new Error(`${String(error)}\nweechat shows:\n${shown}\nbelay:\n${belay.output().slice(-3000)}`))))

        // WeeChat joins the channel as Belay's burst draws it; its NAMES line lists the peer.
        yield* eventually("weechat in the channel", log, (l) => new RegExp(`alice .*has joined ${CHANNEL}`).test(l), WAIT)
          .pipe(diagnosed)
        yield* eventually("the peer in weechat's NAMES", log, (l) => /Nicks #belay-weechat: \[.*\bbob\b.*\]/.test(l), WAIT)
          .pipe(diagnosed)

        // The peer speaks; WeeChat logs it.
        yield* bob.send(`PRIVMSG ${CHANNEL} :hello from the peer`)
        yield* eventually("the peer's line in weechat", log, (l) => said("bob", "hello from the peer").test(l), WAIT)
          .pipe(diagnosed)

        // A line WeeChat sends reaches the peer, and is stored once.
        yield* client.command(`/msg ${CHANNEL} hello from weechat`)
        const heard = yield* bob.waitFor((l) => l.includes(` PRIVMSG ${CHANNEL} :hello from weechat`)).pipe(diagnosed)
        expect(heard).toMatch(/^:alice!/)
        yield* eventually("weechat's line stored", stored("hello from weechat"), (n) => n >= 1, WAIT)
        yield* eventually("weechat's own line in its log", log, (l) => said("alice", "hello from weechat").test(l), WAIT)
          .pipe(diagnosed)

        // WeeChat leaves: the last client of the network is gone, so Belay marks the member away upstream.
        yield* client.quit
        const away = yield* eventually("alice marked away", awayMessage(bob, "alice"), (m) => m !== null, WAIT)
        expect(away).toBe("Auto away: no client attached")
        yield* bob.send(`PRIVMSG ${CHANNEL} :missed one`)
        yield* bob.send(`PRIVMSG ${CHANNEL} :missed two`)
        yield* eventually("the missed lines stored", Effect.zipWith(stored("missed one"), stored("missed two"), (a, b) => a + b), (n) =>
          n === 2, WAIT)

        // WeeChat comes back as the same client (`@weechat`): the missed lines arrive, once, in order.
        const before = (yield* log).length
        yield* client.start
        const again = yield* eventually("the missed lines in weechat", log, (l) => said("bob", "missed two").test(l), WAIT)
          .pipe(diagnosed)
        const secondSession = again.slice(before)
        const first = secondSession.search(said("bob", "missed one"))
        expect(first).toBeGreaterThanOrEqual(0)
        expect(secondSession.search(said("bob", "missed two"))).toBeGreaterThan(first)
        expect(occurrences(again, said("bob", "missed one"))).toBe(1)
        expect(occurrences(again, said("bob", "hello from the peer"))).toBe(1)
        // Back: the away mark Belay set is lifted.
        yield* eventually("alice back", awayMessage(bob, "alice"), (m) => m === null, WAIT)
        expect(yield* stored("hello from weechat")).toBe(1)
      }),
    { timeout: 90_000 }
  )
})
