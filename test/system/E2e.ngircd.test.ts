// System test: end-to-end encryption (issue 7) against a real IRC server (ngircd 26) on a free loopback port, over
// the real services (embedded PGlite or TEST_DATABASE_URL, E2eKeys, MessageStore, Networks) and irc-framework. A
// bare-socket client in the same channel holds the same FiSH key and decrypts with Fish.ts (proven against FiSHLiM,
// fish.py and other implementations' vectors in test/services/crypto/Fish.test.ts).
//
// Proves: what Belay sends to an encrypted channel arrives at another client as `+OK *…` (CBC) lines that decrypt
// to the original, long text included (split so that ngircd relays every piece whole); what that client sends
// encrypted (CBC and ECB) is stored in Belay's history decrypted and marked so; send_raw cannot leak plaintext
// into the channel; and clearing the key while connected makes Belay speak plaintext again.
import { CredentialCache } from "../../src/services/CredentialCache.js"
import * as Fs from "node:fs"
import { describe, expect, it } from "@effect/vitest"
import { Context, Duration, Effect, Either, Layer, Option } from "effect"
import { IrcTransportLive } from "../../src/actors/IrcTransport.js"
import { NetworkControl, type NetworkControlService, type NetworkStatus } from "../../src/actors/NetworkApi.js"
import { NetworkSupervisorLive } from "../../src/actors/NetworkSupervisor.js"
import { Accounts } from "../../src/services/Accounts.js"
import { type FishKey, fishDecrypt, fishEncrypt, parseFishKey } from "../../src/services/crypto/Fish.js"
import { E2eKeys } from "../../src/services/E2eKeys.js"
import { MessageStoreLive } from "../../src/services/MessageStore.js"
import { MessageStore, type MessageStoreService, type StoredMessage } from "../../src/services/MessageStoreApi.js"
import { Metrics } from "../../src/services/Metrics.js"
import { Networks } from "../../src/services/Networks.js"
import { SecretBoxLive } from "../../src/services/SecretBox.js"
import { NGIRCD, ngircd, peer, type Peer } from "../support/Ngircd.js"
import { TestDatabaseLive } from "../support/TestDatabase.js"

const CHANNEL = "#secret"
const KEY_TEXT = "cbc:Shared FiSH key for the system test"
const CBC_KEY: FishKey = Either.getOrThrow(parseFishKey(KEY_TEXT))
// The same secret in ECB, as a HexChat user with a bare key would send it; Belay reads either mode.
const ECB_KEY: FishKey = Either.getOrThrow(parseFishKey("ecb:Shared FiSH key for the system test"))

const Services = Layer.mergeAll(E2eKeys.Default, MessageStoreLive).pipe(
  Layer.provideMerge(Networks.Default),
  Layer.provideMerge(Accounts.Default),
  Layer.provideMerge(Layer.mergeAll(SecretBoxLive, Metrics.Default, CredentialCache.Default)),
  Layer.provideMerge(TestDatabaseLive())
)

/** Polls `read` until `done` holds (ngircd's flood penalty makes everything slow). */
const eventually = <A>(what: string, read: Effect.Effect<A>, done: (a: A) => boolean) =>
  Effect.gen(function*() {
    for (;;) {
      const value = yield* read
      if (done(value)) return value
      yield* Effect.sleep("50 millis")
    }
  }).pipe(Effect.timeoutFail({ duration: Duration.seconds(60), onTimeout: () => new Error(`timed out waiting for ${what}`) }))

const statusOf = (control: NetworkControlService, id: number, predicate: (s: NetworkStatus) => boolean) =>
  eventually("the network state", control.status(id), predicate)

const history = (store: MessageStoreService, id: number) =>
  Effect.zipRight(store.flush, store.recent(id, CHANNEL, { before: Option.none(), limit: 200 }))

/** The text of a PRIVMSG to the channel as the peer received it (`:nick!user@host PRIVMSG #secret :text`). */
const textOf = (line: string) => line.slice(line.indexOf(` PRIVMSG ${CHANNEL} :`) + ` PRIVMSG ${CHANNEL} :`.length)

const decrypted = (line: string): string => {
  const text = textOf(line)
  const payload = text.startsWith("\x01ACTION ") ? text.slice(8, -1) : text
  const result = fishDecrypt(CBC_KEY, payload)
  if (!result.ok) throw new Error(`the peer could not decrypt ${JSON.stringify(line)}: ${result.reason}`)
  expect(result.truncated).toBe(false)
  return result.text
}

/** The next `count` channel PRIVMSGs from belaybot, as received. */
const fromBelay = (other: Peer, count: number) =>
  Effect.gen(function*() {
    const lines: Array<string> = []
    while (lines.length < count) {
      lines.push(yield* other.waitFor((l) => l.startsWith(":belaybot!") && l.includes(` PRIVMSG ${CHANNEL} :`)))
    }
    return lines
  })

describe("end-to-end encryption against ngircd", () => {
  it.scopedLive.skipIf(!Fs.existsSync(NGIRCD))(
    "Belay ⇄ a FiSH client through a real server: encrypted both ways, stored decrypted, no plaintext leak",
    () =>
      Effect.gen(function*() {
        const server = yield* ngircd
        const context = yield* Layer.build(
          NetworkSupervisorLive.pipe(Layer.provide(IrcTransportLive), Layer.provideMerge(Services))
        )
        const control = Context.get(context, NetworkControl)
        const store = Context.get(context, MessageStore)
        yield* Context.get(context, Accounts).create("sys", "a long password").pipe(Effect.orDie)
        const id = yield* Context.get(context, Networks).add("sys", {
          name: "ngircd",
          host: "127.0.0.1",
          port: server.port,
          tls: false,
          tlsInsecure: false,
          nick: "belaybot",
          username: Option.some("belay"),
          realname: Option.some("Belay system test"),
          serverPassword: Option.none(),
          sasl: Option.none(),
          join: [CHANNEL]
        }).pipe(Effect.orDie)
        // As `belay channel encrypt sys <id> #Secret` does, while the network is (being) connected.
        yield* Context.get(context, E2eKeys).set("sys", id, "#Secret", KEY_TEXT)

        yield* statusOf(control, id, (s) => s.state === "connected")
        const other = yield* peer(server.port, "fishpeer")
        yield* other.send(`JOIN ${CHANNEL}`)
        yield* other.waitFor((l) => / 366 /.test(l))
        yield* eventually("both in the channel", control.members(id, CHANNEL), (r) =>
          r.ok && ["belaybot", "fishpeer"].every((n) => r.members.some((m) => m.nick === n)))

        // Belay → peer: CBC on the wire, readable with the shared key.
        expect(yield* control.say(id, "privmsg", CHANNEL, "hello, encrypted world")).toEqual({ ok: true })
        const [hello] = yield* fromBelay(other, 1)
        expect(textOf(hello!)).toMatch(/^\+OK \*[A-Za-z0-9+/]+=*$/)
        expect(decrypted(hello!)).toBe("hello, encrypted world")

        // A long message: several lines, each relayed whole by ngircd (≤ 512 bytes with the prefix it adds).
        const long = "Ünïcödé and emoji 🔐 in a long encrypted message, ".repeat(20) + "fin."
        expect(yield* control.say(id, "privmsg", CHANNEL, long)).toEqual({ ok: true })
        const pieces: Array<string> = []
        while (pieces.join("") !== long) {
          const [line] = yield* fromBelay(other, 1)
          expect(Buffer.byteLength(`${line}\r\n`)).toBeLessThanOrEqual(512)
          pieces.push(decrypted(line!))
        }
        expect(pieces.length).toBeGreaterThan(2)

        expect(yield* control.say(id, "action", CHANNEL, "locks the door")).toEqual({ ok: true })
        const [action] = yield* fromBelay(other, 1)
        expect(textOf(action!)).toMatch(/^\x01ACTION \+OK \*[A-Za-z0-9+/]+=*\x01$/)
        expect(decrypted(action!)).toBe("locks the door")

        // Peer → Belay: CBC and ECB lines are stored decrypted; a plaintext line stays plain.
        yield* other.send(`PRIVMSG ${CHANNEL} :${fishEncrypt(CBC_KEY, "reply in CBC")}`)
        yield* other.send(`PRIVMSG ${CHANNEL} :${fishEncrypt(ECB_KEY, "reply in ECB")}`)
        yield* other.send(`PRIVMSG ${CHANNEL} :plain words`)
        const stored = yield* eventually("the peer's lines in history", history(store, id), (ms) =>
          ms.some((m) => m.text === "plain words"))
        const said = (ms: ReadonlyArray<StoredMessage>) =>
          ms.filter((m) => m.kind === "privmsg" || m.kind === "action").map((m) => [m.nick, m.kind, m.self, m.encryption, m.text])
        expect(said(stored).slice(-3)).toEqual([
          ["fishpeer", "privmsg", false, "decrypted", "reply in CBC"],
          ["fishpeer", "privmsg", false, "decrypted", "reply in ECB"],
          ["fishpeer", "privmsg", false, "plain", "plain words"]
        ])
        // Our own messages (ngircd has no echo-message): stored once, as plaintext, marked decrypted.
        const own = stored.filter((m) => m.self && (m.kind === "privmsg" || m.kind === "action"))
        expect(own.every((m) => m.encryption === "decrypted")).toBe(true)
        expect(own.map((m) => m.text).join("|")).toBe(["hello, encrypted world", pieces.join("|"), "locks the door"].join("|"))

        // send_raw cannot leak plaintext into the channel, however the line is spelled.
        for (const line of [`PRIVMSG ${CHANNEL} :leak one`, `privmsg #SECRET :leak two`, `NOTICE fishpeer,${CHANNEL} :leak three`]) {
          expect(yield* control.raw(id, line)).toMatchObject({ ok: false, error: "e2e-channel-use-send-message" })
        }
        expect(yield* control.say(id, "privmsg", CHANNEL, "after the refusals")).toEqual({ ok: true })
        const [after] = yield* fromBelay(other, 1)
        expect(decrypted(after!)).toBe("after the refusals")
        expect((yield* other.received).filter((l) => l.includes("leak"))).toEqual([])

        // `belay channel decrypt` while connected: plaintext from the next message on.
        expect(yield* Context.get(context, E2eKeys).clear("sys", id, CHANNEL)).toBe(true)
        yield* Effect.sleep("200 millis")
        expect(yield* control.say(id, "privmsg", CHANNEL, "in the clear now")).toEqual({ ok: true })
        const [clear] = yield* fromBelay(other, 1)
        expect(textOf(clear!)).toBe("in the clear now")
      }),
    { timeout: 180_000 }
  )
})
