/**
 * What the system tests of real IRC clients through Belay's listener share: a `belay serve` with its IRC listener
 * on loopback and an account whose one network is connected to ngircd in a channel; and what they check outside the
 * client: how many times a channel line is stored, and whether the server shows the member away (the listener's
 * auto-away, docs/contract.md "The IRC client listener"). No state beyond the scope's processes.
 */
import { expect } from "@effect/vitest"
import { Effect } from "effect"
import { freePort, runCli, startBelay } from "./BelayProcess.js"
import { eventually } from "./Eventually.js"
import { storedCount } from "./HistoryAudit.js"
import type { Peer } from "./Ngircd.js"
import { testEnvironment } from "./TestDatabase.js"

/**
 * Belay with its listener on a free loopback port, account `alice` (with `password`) and its network `ngircd` on
 * the server at `ngircdPort`, joined to `channel` and connected; `stored(text)` counts the channel's stored lines carrying `text`.
 */
export const listenerWithNetwork = (options: { readonly ngircdPort: number; readonly channel: string; readonly password: string }) =>
  Effect.gen(function*() {
    const listenerPort = yield* freePort
    const env = yield* testEnvironment({ BELAY_IRC_LISTEN: `127.0.0.1:${listenerPort}` })
    const belay = yield* startBelay(env)
    const cli = (args: ReadonlyArray<string>, stdin?: string) => runCli(belay.env, args, stdin)
    expect((yield* cli(["account", "add", "alice"], `${options.password}\n`)).code).toBe(0)
    expect((yield* cli(["network", "add", "alice", "--name", "ngircd", "--host", "127.0.0.1", "--port",
      String(options.ngircdPort), "--nick", "alice", "--join", options.channel])).code).toBe(0)
    yield* eventually("the network connected", cli(["network", "list", "alice", "--json"]), (r) =>
      r.stdout.includes(`"state":"connected"`), "30 seconds")
    const stored = (text: string) => storedCount(env.DATABASE_URL!, options.channel, text)
    return { belay, listenerPort, stored }
  })

/** The away message WHOIS shows for `nick` on the server, as the peer asks it (301), or null when not away. */
export const awayMessage = (other: Peer, nick: string) =>
  Effect.gen(function*() {
    yield* other.send(`WHOIS ${nick}`)
    const line = yield* other.waitFor((l) => new RegExp(` (301|318) \\S+ ${nick} `).test(l))
    return / 301 /.test(line) ? line.slice(line.indexOf(" :", line.indexOf(" 301 ")) + 2) : null
  })

/** How many lines of `text` match `pattern`. */
export const occurrences = (text: string, pattern: RegExp) => text.split("\n").filter((l) => pattern.test(l)).length
