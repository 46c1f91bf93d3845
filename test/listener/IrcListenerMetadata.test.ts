/**
 * draft/metadata-2 with soju's buffer keys `soju.im/pinned` and `soju.im/muted`, end to end (real actor, fake IRC
 * server, real database): the capability's value, SUB before registration and the registration's metadata, the
 * extension's exchanges (GET, LIST, SET, CLEAR, SUB, UNSUB, SUBS, SYNC) and its failures as its examples show them,
 * and one store with the web client: a choice made in one IRC client, or by the web's service, reaches the other
 * clients subscribed to the key, never the one that made it.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { METADATA_MAX_SUBS } from "../../src/listener/CapNegotiation.js"
import { BufferPreferences } from "../../src/services/preferences/BufferPreferences.js"
import { Networks } from "../../src/services/networks/Networks.js"
import { type ClientLine, connectClient, saslPlain } from "../support/IrcTestClient.js"
import { CAPS, PASSWORD, startListenerApp, welcomedClient } from "../support/IrcListenerApp.js"
import { describeMode } from "../support/TestDatabase.js"

const META = `${CAPS} draft/metadata-2`

/** Signs in with `caps`, sends `before` ahead of CAP END, and reads the welcome up to the end of the channel's NAMES. */
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
    const welcome = yield* c.until("366")
    yield* c.send("PING after-welcome")
    const rest = yield* c.until("PONG")
    return Object.assign(c, { ls, early, welcome, rest })
  })

/** What a command answered: its lines up to a PING's answer sent right after it. */
const ask = (
  c: { readonly send: (...l: ReadonlyArray<string>) => Effect.Effect<unknown>; readonly until: (m: string) => Effect.Effect<ReadonlyArray<ClientLine>, Error> },
  line: string
) =>
  Effect.gen(function*() {
    yield* c.send(line, "PING fence")
    const got = yield* c.until("PONG")
    return got.filter((l) => l.command !== "PONG")
  })

const shape = (lines: ReadonlyArray<ClientLine>) => lines.map((l) => [l.command, ...l.params.slice(l.command === "FAIL" || l.command === "BATCH" || l.command === "METADATA" ? 0 : 1)].join(" "))

describe(`draft/metadata-2 on ${describeMode}`, () => {
  it.scopedLive("the extension's exchanges for soju's buffer keys, and one store with the web", () =>
    Effect.gen(function*() {
      const app = yield* startListenerApp()
      const { port, networkId, upstream } = app

      // A client subscribed before registration (before-connect), to both keys.
      const a = yield* client(port, "alice/fake@a", META, ["METADATA * SUB soju.im/pinned soju.im/muted"])
      const cap = a.ls.flatMap((l) => l.params.at(-1)!.split(" ")).find((w) => w.startsWith("draft/metadata-2"))
      expect(cap).toBe(`draft/metadata-2=before-connect,max-subs=${METADATA_MAX_SUBS},max-keys=0,max-value-bytes=1`)
      expect(shape(a.early.filter((l) => l.command !== "PONG"))).toEqual(["770 soju.im/pinned soju.im/muted"])
      // The registration's own metadata: an empty `metadata` batch for the member's nick, before the MOTD's place.
      const opened = a.welcome.findIndex((l) => l.command === "BATCH" && l.params[1] === "metadata")
      expect(opened).toBeGreaterThan(-1)
      expect(a.welcome[opened]!.params[2]).toBe("alice")
      expect(a.welcome[opened + 1]!.command).toBe("BATCH")
      expect(a.welcome.findIndex((l) => l.command === "422")).toBeGreaterThan(opened)

      // Another client subscribed to pinned only, after registration; one without the capability.
      const b = yield* welcomedClient(port, "alice/fake@b", PASSWORD, META)
      expect(shape(yield* ask(b, "METADATA * SUB soju.im/pinned"))).toEqual(["770 soju.im/pinned"])
      const plain = yield* welcomedClient(port, "alice/fake@plain", PASSWORD)

      // SET: 761 to the setter; METADATA to the others subscribed to the key; nothing more to the setter.
      expect(shape(yield* ask(a, "METADATA #belay SET soju.im/pinned 1"))).toEqual(["761 #belay soju.im/pinned * 1"])
      expect(shape([yield* b.next("METADATA")])).toEqual(["METADATA #belay soju.im/pinned * 1"])
      const web = yield* app.get(BufferPreferences).get(networkId, "rfc1459", "#BELAY")
      expect(web).toEqual({ pinned: true, muted: false, detached: false, notify: "highlights" })

      // GET under another casing of the target, with a key not kept and an invalid one, in a metadata batch, in order.
      const got = yield* ask(a, "METADATA #Belay GET soju.im/pinned soju.im/muted website $bad")
      expect(shape(got)).toEqual([
        `BATCH ${got[0]!.params[0]} metadata #Belay`,
        "761 #Belay soju.im/pinned * 1",
        "761 #Belay soju.im/muted * 0",
        "766 #Belay website key not set",
        "FAIL METADATA KEY_INVALID $bad invalid key",
        `BATCH -${got[0]!.params[0]!.slice(1)}`
      ])
      for (const l of got.slice(1, -1)) expect(l.tags.batch).toBe(got[0]!.params[0]!.slice(1))
      expect(shape(yield* ask(a, "METADATA #belay LIST")).slice(1, -1)).toEqual([
        "761 #belay soju.im/pinned * 1",
        "761 #belay soju.im/muted * 0"
      ])

      // The spec's failures.
      expect(shape(yield* ask(a, "METADATA #belay SET website :http://www.example.com"))).toEqual([
        "FAIL METADATA KEY_NO_PERMISSION #belay website permission denied"
      ])
      expect(shape(yield* ask(a, "METADATA #belay SET $url$ :x"))).toEqual(["FAIL METADATA KEY_INVALID $url$ invalid key"])
      expect(shape(yield* ask(a, "METADATA #belay SET soju.im/muted 2"))).toEqual(["FAIL METADATA VALUE_INVALID value must be 0 or 1"])
      expect(shape(yield* ask(a, "METADATA * SET soju.im/pinned 1"))).toEqual(["FAIL METADATA KEY_NO_PERMISSION * soju.im/pinned permission denied"])
      expect(shape(yield* ask(a, "METADATA $a:user SET url :x"))).toEqual(["FAIL METADATA INVALID_TARGET $a:user invalid metadata target"])
      expect(shape(yield* ask(a, "METADATA * destr0y"))).toEqual(["FAIL METADATA SUBCOMMAND_INVALID destr0y invalid subcommand"])
      expect(shape(yield* ask(a, "METADATA *"))).toEqual(["461 METADATA Not enough parameters"])
      // None of them changed anything.
      expect(yield* app.get(BufferPreferences).get(networkId, "rfc1459", "#belay")).toEqual(web)

      // Subscriptions: SUB of invalid keys, UNSUB, SUBS in a metadata-subs batch, max-subs and TOO_MANY_SUBS.
      expect(shape(yield* ask(b, "METADATA * SUB foo $url bar"))).toEqual(["FAIL METADATA KEY_INVALID $url invalid key", "770 foo bar"])
      expect(shape(yield* ask(b, "METADATA * UNSUB bar foo"))).toEqual(["771 bar foo"])
      const subs = yield* ask(b, "METADATA * SUBS")
      expect(shape(subs)).toEqual([`BATCH ${subs[0]!.params[0]} metadata-subs`, "772 soju.im/pinned", `BATCH -${subs[0]!.params[0]!.slice(1)}`])
      const many = Array.from({ length: METADATA_MAX_SUBS + 2 }, (_, i) => `k${i}`)
      const full = yield* ask(b, `METADATA * SUB ${many.join(" ")}`)
      // One was subscribed already: the limit is reached at the (max - 1)th new key, which the FAIL names.
      expect(shape(full.filter((l) => l.command === "FAIL"))).toEqual([`FAIL METADATA TOO_MANY_SUBS k${METADATA_MAX_SUBS - 1} too many subscriptions`])
      expect(full.filter((l) => l.command === "770").flatMap((l) => l.params.slice(1))).toEqual(many.slice(0, METADATA_MAX_SUBS - 1))
      yield* ask(b, `METADATA * UNSUB ${many.join(" ")}`)

      // The web's side of the store: a change there reaches the subscribed clients (b: pinned only; a: both).
      const accountId = Option.getOrThrow(yield* app.get(Networks).config(networkId)).accountId
      yield* app.get(BufferPreferences).set(accountId, networkId, "rfc1459", "#belay", { muted: true, detached: true })
      const toA = yield* a.until((l) => l.command === "METADATA" && l.params[1] === "soju.im/muted")
      expect(shape(toA.filter((l) => l.command === "METADATA"))).toEqual([
        "METADATA #belay soju.im/pinned * 1",
        "METADATA #belay soju.im/muted * 1"
      ])
      expect(shape([yield* b.next("METADATA")])).toEqual(["METADATA #belay soju.im/pinned * 1"])

      // SYNC: the subscribed keys as METADATA in a metadata batch. CLEAR: every key back to 0, the other choices kept.
      expect(shape(yield* ask(a, "METADATA #belay SYNC")).slice(1, -1)).toEqual([
        "METADATA #belay soju.im/pinned * 1",
        "METADATA #belay soju.im/muted * 1"
      ])
      expect(shape(yield* ask(a, "METADATA #belay CLEAR")).slice(1, -1)).toEqual([
        "761 #belay soju.im/pinned * 0",
        "761 #belay soju.im/muted * 0"
      ])
      expect(yield* app.get(BufferPreferences).get(networkId, "rfc1459", "#belay")).toEqual({
        pinned: false,
        muted: false,
        detached: true,
        notify: "highlights"
      })

      // A client that subscribes before registration hears every buffer with a choice after the welcome.
      yield* ask(a, "METADATA bob SET soju.im/muted 1")
      const c = yield* client(port, "alice/fake@c", META, ["METADATA * SUB soju.im/muted"])
      const sent = c.rest.filter((l) => l.command === "METADATA")
      expect(shape(sent)).toEqual(["METADATA #belay soju.im/muted * 0", "METADATA bob soju.im/muted * 1"])

      // A read-only sign-in reads, and may not set.
      const reader = yield* welcomedClient(port, "alice/fake@reader", app.readToken, META)
      expect(shape(yield* ask(reader, "METADATA bob GET soju.im/muted")).slice(1, -1)).toEqual(["761 bob soju.im/muted * 1"])
      expect((yield* ask(reader, "METADATA bob SET soju.im/muted 0"))[0]!.params.slice(0, 2)).toEqual(["METADATA", "READ_ONLY"])

      // A buffer only the web has (the server buffer) is no IRC target: its choice reaches no client, which stays served;
      // what a client sent that cannot be named back as a parameter is named `*`.
      yield* app.get(BufferPreferences).set(accountId, networkId, "rfc1459", `:server:${networkId}`, { pinned: true, muted: true })
      expect(shape(yield* ask(a, "METADATA * :bad sub"))).toEqual(["FAIL METADATA SUBCOMMAND_INVALID * invalid subcommand"])
      expect(shape(yield* ask(a, "METADATA #belay GET :$no key")).slice(1, -1)).toEqual(["FAIL METADATA KEY_INVALID * invalid key"])
      const resub = yield* ask(a, "METADATA * SUB soju.im/muted")
      expect(resub.some((l) => l.params.includes(`:server:${networkId}`))).toBe(false)
      expect(shape(resub.filter((l) => l.command === "770"))).toEqual(["770 soju.im/muted"])

      // Without the capability, METADATA is the upstream's.
      yield* plain.send("METADATA #belay LIST")
      yield* upstream.waitFor(/^METADATA #belay LIST/)
      // And it heard none of the notifications.
      yield* plain.send("PING plain")
      expect((yield* plain.until("PONG")).some((l) => l.command === "METADATA")).toBe(false)
      yield* Effect.forEach([a, b, c, reader], (x) => x.send("QUIT"))
    }), 60_000)
})
