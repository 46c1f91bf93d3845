/**
 * Each member their own face upstream, as an IRC server sees it (docs/decisions/hosting.md "Each member their own face
 * upstream"): a real `belay serve` with its ident server on port 113 (root) and source addresses from 127.0.0.0/8,
 * and ngircd asking ident of every client (`Ident = yes`, with `DNS = yes`, without which ngircd 26.1 does not ask).
 * Two members' networks show, in WHOIS, two idents without `~` (ngircd prefixes the user name with `~` when ident did
 * not answer) and two addresses, each the one drawn for its account, and the same again after ngircd restarts and
 * both reconnect.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import pg from "pg"
import { identOf, parseSourceRange, sourceAddressOf } from "../../src/net/UpstreamFace.js"
import { runCli, startBelay } from "../support/BelayProcess.js"
import { NGIRCD, ngircdWith, peer, type Peer } from "../support/Ngircd.js"
import { testEnvironment } from "../support/TestDatabase.js"

const PASSWORD = "a long enough password"
const RANGE = "127.0.0.0/8"
const isRoot = process.getuid?.() === 0

/** The user and host WHOIS shows for `nick`, asked until the nick is on the server (a reconnect takes a backoff). */
const whois = (witness: Peer, nick: string) =>
  Effect.gen(function*() {
    for (let attempt = 0; attempt < 60; attempt++) {
      yield* witness.send(`WHOIS ${nick}`)
      const line = yield* witness.waitFor((l) => new RegExp(` (311|401) witness ${nick} `, "i").test(l))
      const reply = / 311 witness \S+ (\S+) (\S+) /.exec(line)
      if (reply !== null) return { user: reply[1]!, host: reply[2]! }
      yield* Effect.sleep("1 second")
    }
    return yield* Effect.fail(new Error(`${nick} never appeared on the server`))
  })

describe("each member's face upstream, on ngircd", () => {
  it.scopedLive.skipIf(NGIRCD.skip || !isRoot)("two members: two idents without ~, two addresses, the same after a reconnect", () =>
    Effect.gen(function*() {
      const irc = yield* ngircdWith({ ident: true, penalties: false })
      const env = yield* testEnvironment({ BELAY_IDENTD_LISTEN: "0.0.0.0:113", BELAY_UPSTREAM_SOURCE: RANGE, LOG_LEVEL: "info" })
      const belay = yield* startBelay(env)
      expect(belay.output()).toContain("ident server listening on 0.0.0.0:113")

      // A first account, so that neither member is account 1, whose address 127.0.0.1 has a name (localhost).
      const members = ["first", "alice", "bob"]
      for (const name of members) {
        expect((yield* runCli(belay.env, ["account", "add", name], `${PASSWORD}\n`)).code).toBe(0)
      }
      for (const name of ["alice", "bob"]) {
        const added = yield* runCli(belay.env, [
          "network", "add", name, "--name", "ngircd", "--host", "127.0.0.1", "--port", String(irc.port),
          "--nick", `${name}bot`, "--username", "shared"
        ])
        expect(added.code, added.stderr).toBe(0)
      }
      const ids = yield* Effect.acquireUseRelease(
        Effect.promise(async () => {
          const db = new pg.Client({ connectionString: env["DATABASE_URL"] })
          await db.connect()
          return db
        }),
        (db) =>
          Effect.promise(() => db.query<{ name: string; id: string }>("SELECT name, id::text AS id FROM accounts"))
            .pipe(Effect.map((r) => new Map(r.rows.map((row) => [row.name, Number(row.id)])))),
        (db) => Effect.promise(() => db.end())
      )
      const range = parseSourceRange(RANGE)
      if ("error" in range) throw new Error(range.error)
      const expected = (name: string) => {
        const id = ids.get(name)!
        const source = sourceAddressOf(range, id)
        if ("error" in source) throw new Error(source.error)
        return { user: identOf(id)!, host: source.address }
      }

      const faces = yield* Effect.scoped(Effect.gen(function*() {
        const witness = yield* peer(irc.port, "witness")
        return { alice: yield* whois(witness, "alicebot"), bob: yield* whois(witness, "bobbot") }
      }))
      expect(faces.alice).toEqual(expected("alice"))
      expect(faces.bob).toEqual(expected("bob"))
      expect(faces.alice.user).not.toBe(faces.bob.user)
      expect(faces.alice.host).not.toBe(faces.bob.host)

      // ngircd goes away and comes back: both reconnect, with the same faces.
      yield* irc.stop
      yield* irc.start
      const again = yield* Effect.scoped(Effect.gen(function*() {
        const witness = yield* peer(irc.port, "witness")
        return { alice: yield* whois(witness, "alicebot"), bob: yield* whois(witness, "bobbot") }
      }))
      expect(again).toEqual(faces)
    }), { timeout: 180_000 })
})
