// End-to-end encryption (FiSH) in the network actor, against the scripted fake IRC server: what goes on the wire
// for an encrypted target, how inbound FiSH lines are stored, keys changing while connected, and the send_raw guard —
// in the actor itself (ActorHarness) and through NetworkControl over the real E2eKeys and database.
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Option, TestClock } from "effect"
import { Command } from "../../../src/actors/network/NetworkActor.js"
import { FLOOD_INTERVAL } from "../../../src/actors/ReconnectPolicy.js"
import type { NetworkControlService, SayKind } from "../../../src/actors/NetworkApi.js"
import { MAX_LINE_BYTES } from "../../../src/irc/IrcLine.js"
import { Accounts } from "../../../src/services/identity/Accounts.js"
import { type FishKey, fishDecrypt, fishEncrypt, parseFishKey } from "../../../src/services/crypto/Fish.js"
import { E2eKeys } from "../../../src/services/networks/E2eKeys.js"
import { Networks } from "../../../src/services/networks/Networks.js"
import { SecretBox } from "../../../src/services/crypto/SecretBox.js"
import { type Harness, type HarnessOptions, live, startActor } from "../../support/ActorHarness.js"
import * as FakeIrcServer from "../../support/FakeIrcServer.js"
import * as MemoryMessageStore from "../../support/MemoryMessageStore.js"
import { describeMode } from "../../support/TestDatabase.js"
import { startSupervisor as startSharedSupervisor, TestServicesLive } from "../../support/TestServices.js"

const key = (raw: string): FishKey => Either.getOrThrow(parseFishKey(raw))
const bytes = (s: string) => Buffer.byteLength(s, "utf8")

const ME = ":belay!belayuser@127.0.0.1"
const ISUPPORT = [...FakeIrcServer.DEFAULT_ISUPPORT, "STATUSMSG=@+"]
const QUICK_FOX = "The quick brown fox jumps over the lazy dog"
// mpolden/fish fish_test.go and synfron/FiSH FiSHTests/FishTests.cs: ECB, key "unladen swallow".
const ECB_FOX = "+OK zT/uX.Z4Q3A/G4YzZ02hMhT1mAsBo.iVKz71YPSQz/trfT4/srrS611D5Qz.cnm/71snKIp0"
// synfron/FiSH FiSHTests/FishTests.cs (CbcDecrypt): CBC from another implementation, key "unladen swallow".
const CBC_FOX = "+OK *C/Tewfid2vcfWq0YpmVwnGMflO79MbkjHcOxW1T384H0lpP4PAf3bY1ctRjM+rPZmJkhf0GCtiE="
const SWALLOW_CBC = key("cbc:unladen swallow")
const SWALLOW_ECB = key("ecb:unladen swallow")

const setup = (serverOptions: FakeIrcServer.FakeIrcServerOptions = {}, harness: HarnessOptions = {}) =>
  Effect.gen(function*() {
    const server = yield* FakeIrcServer.make(serverOptions)
    const h = yield* startActor(server, harness)
    const conn = yield* server.nextConnection()
    yield* conn.register(undefined, ISUPPORT, serverOptions.caps !== undefined ? { caps: serverOptions.caps } : {})
    yield* h.waitState("connected")
    // Our JOIN tells the actor its user and host, so it budgets the exact relayed prefix.
    yield* conn.send(`${ME} JOIN #Enc`)
    yield* h.waitMessage((m) => m.kind === "join" && m.self)
    return { server, h, conn }
  })

/**
 * Lets `lines` more lines out past the flood-control burst (FLOOD_BURST at once, then one every FLOOD_INTERVAL,
 * Outbound.ts): the TestClock moves one interval at a time, as the actor's "send" timer expects.
 */
const paced = (lines: number) => Effect.repeatN(TestClock.adjust(FLOOD_INTERVAL), lines - 1)

const say = (h: Harness, kind: SayKind, target: string, text: string) =>
  h.ask(Command.say(kind, target, text))
const raw = (h: Harness, line: string) => h.ask(Command.raw(line))

/** The text of a PRIVMSG/NOTICE line the fake received, decrypted with `k` (ACTION framing removed). */
const opened = (k: FishKey, line: string) => {
  const text = FakeIrcServer.parseLine(line).params[1] ?? ""
  const payload = text.startsWith("\x01ACTION ") ? text.slice(8, -1) : text
  const result = fishDecrypt(k, payload)
  if (!result.ok) throw new Error(`${line}: ${result.reason}`)
  return result.text
}

/** Everything stored once a marker sent afterwards is stored (nothing in flight). */
const settled = (h: Harness, conn: FakeIrcServer.FakeIrcConnection, marker: string) =>
  Effect.gen(function*() {
    yield* conn.send(`:x!x@h PRIVMSG belay :${marker}`)
    yield* h.waitMessage((m) => m.text === marker)
    return yield* h.store.all
  })

describe("NetworkActor: sending to an encrypted target", () => {
  it.scoped("long text: split so every relayed line fits 512 bytes, all ciphertext, stored once as plaintext", () =>
    Effect.gen(function*() {
      const { h, conn } = yield* setup({}, { e2eKeys: [{ target: "#enc", key: SWALLOW_CBC }] })
      const text = "é🙂 naïve words, spaced out; ".repeat(40) + "the end"
      yield* say(h, "privmsg", "#ENC", text)
      // A raw line after it: once the fake has it, it has every piece (one TCP stream, written in order).
      yield* raw(h, "WHOIS done")
      // More lines than the flood-control burst: the rest go one interval apart.
      yield* paced(10)
      yield* conn.waitFor("WHOIS done")
      const lines = (yield* conn.lines).filter((l) => l.startsWith("PRIVMSG #ENC "))
      expect(lines.length).toBeGreaterThan(2)
      for (const line of lines) {
        expect(line).toMatch(/^PRIVMSG #ENC :\+OK \*[A-Za-z0-9+/]+=*$/)
        expect(bytes(`${ME} ${line}\r\n`)).toBeLessThanOrEqual(MAX_LINE_BYTES)
      }
      expect(lines.map((l) => opened(SWALLOW_CBC, l)).join("")).toBe(text)

      // No echo-message: stored locally, one plaintext message per line sent, with that line as its raw.
      const stored = (yield* settled(h, conn, "marker")).filter((m) => m.self && m.kind === "privmsg")
      expect(stored.map((m) => m.text).join("")).toBe(text)
      expect(stored.map((m) => m.raw)).toEqual(lines)
      expect(stored.every((m) => m.target === "#Enc" && m.encryption === "decrypted")).toBe(true)
    }))

  it.scoped("ACTION and NOTICE, to a channel and to a keyed nick, in the key's mode", () =>
    Effect.gen(function*() {
      const { h, conn } = yield* setup({}, {
        e2eKeys: [{ target: "#enc", key: SWALLOW_CBC }, { target: "Alice", key: SWALLOW_ECB }]
      })
      yield* say(h, "action", "alice", "waves")
      yield* say(h, "notice", "@#enc", "ops only")
      yield* say(h, "privmsg", "bob", "not keyed")
      yield* conn.waitFor("PRIVMSG bob :not keyed")
      const sent = yield* conn.lines
      expect(sent).toContain(`PRIVMSG alice :\x01ACTION ${fishEncrypt(SWALLOW_ECB, "waves")}\x01`)
      const notice = sent.find((l) => l.startsWith("NOTICE @#enc :+OK *"))
      expect(notice).toBeDefined()
      expect(opened(SWALLOW_CBC, notice!)).toBe("ops only")
      const stored = (yield* settled(h, conn, "marker")).filter((m) => m.self)
      expect(stored.map((m) => [m.target, m.kind, m.text, m.encryption])).toEqual([
        ["#Enc", "join", "", "plain"],
        ["alice", "action", "waves", "decrypted"],
        ["#Enc", "notice", "ops only", "decrypted"],
        ["bob", "privmsg", "not keyed", "plain"]
      ])
    }))

  it.scoped("echo-message: the echoed ciphertext is stored once, decrypted, and nothing locally", () =>
    Effect.gen(function*() {
      const { h, conn } = yield* setup({ caps: ["echo-message"] }, { e2eKeys: [{ target: "#enc", key: SWALLOW_CBC }] })
      yield* say(h, "privmsg", "#enc", "hi there")
      const line = yield* conn.waitFor((l) => l.command === "PRIVMSG")
      expect(line.raw).not.toContain("hi there")
      expect((yield* settled(h, conn, "before echo")).filter((m) => m.self && m.kind === "privmsg")).toEqual([])
      yield* conn.send(`${ME} ${line.raw}`)
      const stored = (yield* settled(h, conn, "after echo")).filter((m) => m.self && m.kind === "privmsg")
      expect(stored.map((m) => [m.target, m.text, m.encryption])).toEqual([["#Enc", "hi there", "decrypted"]])
    }))
})

describe("NetworkActor: receiving on an encrypted target", () => {
  it.scoped("CBC and ECB from other implementations are stored decrypted; a wrong key is stored as received", () =>
    Effect.gen(function*() {
      const { h, conn } = yield* setup({}, {
        e2eKeys: [{ target: "#enc", key: SWALLOW_ECB }, { target: "alice", key: SWALLOW_CBC }]
      })
      const wrongKey = fishEncrypt(key("not the channel key"), "you cannot read this")
      yield* conn.send(
        `:alice!a@h PRIVMSG #enc :${CBC_FOX}`,
        `:alice!a@h PRIVMSG #ENC :\x01ACTION ${ECB_FOX}\x01`,
        `:alice!a@h NOTICE @#enc :${ECB_FOX}`,
        `:Alice!a@h PRIVMSG belay :${CBC_FOX}`,
        `:mallory!m@h PRIVMSG #enc :${wrongKey}`,
        ":bob!b@h PRIVMSG #enc :plain words",
        `:carol!c@h PRIVMSG #open :${ECB_FOX}`
      )
      const stored = (yield* settled(h, conn, "marker")).filter((m) => !m.self && m.text !== "marker" && m.target !== ":server:1")
      expect(stored.map((m) => [m.target, m.kind, m.nick, m.text, m.encryption])).toEqual([
        ["#Enc", "privmsg", "alice", QUICK_FOX, "decrypted"],
        ["#Enc", "action", "alice", QUICK_FOX, "decrypted"],
        ["#Enc", "notice", "alice", QUICK_FOX, "decrypted"],
        ["Alice", "privmsg", "Alice", QUICK_FOX, "decrypted"],
        ["#Enc", "privmsg", "mallory", wrongKey, "undecryptable"],
        ["#Enc", "privmsg", "bob", "plain words", "plain"],
        // No key for #open: Belay cannot know it is ciphertext for anyone, so it is stored as it came.
        ["#open", "privmsg", "carol", ECB_FOX, "plain"]
      ])
      // The raw line kept is the one received.
      expect(stored[0]?.raw).toBe(`:alice!a@h PRIVMSG #enc :${CBC_FOX}`)
    }))
})

describe("NetworkActor: keys change while connected", () => {
  it.scoped("a key set at runtime encrypts the next message and opens the next line; cleared, plaintext again", () =>
    Effect.gen(function*() {
      const { h, conn } = yield* setup()
      yield* say(h, "privmsg", "#enc", "before it")
      yield* conn.waitFor("PRIVMSG #enc :before it")

      yield* h.setE2eKey("#ENC", SWALLOW_CBC)
      // The change reaches the dispatcher through its inbox (E2eKeys.changes → actor), a fiber hop away.
      yield* live(Effect.sleep("100 millis"))
      yield* say(h, "privmsg", "#enc", "during it")
      const during = yield* conn.waitFor((l) => l.command === "PRIVMSG" && l.params[0] === "#enc" && l.raw !== "PRIVMSG #enc :before it")
      expect(opened(SWALLOW_CBC, during.raw)).toBe("during it")
      expect(yield* Effect.flip(raw(h, "PRIVMSG #enc :leak"))).toMatchObject({ _tag: "E2eChannelUseSendMessage", target: "#enc" })
      yield* conn.send(`:alice!a@h PRIVMSG #enc :${CBC_FOX}`)
      yield* h.waitMessage((m) => m.text === QUICK_FOX && m.encryption === "decrypted")

      yield* h.setE2eKey("#enc", undefined)
      yield* live(Effect.sleep("100 millis"))
      yield* say(h, "privmsg", "#enc", "after it")
      yield* conn.waitFor("PRIVMSG #enc :after it")
      expect((yield* conn.lines).filter((l) => l.includes("leak"))).toEqual([])
    }))
})

/** The send_raw guard matrix (the interface, send_raw): refused lines and lines that must still go through. */
const REFUSED: ReadonlyArray<string> = [
  "PRIVMSG #enc :x1",
  "privmsg #Enc :x2",
  "PrivMsg #ENC :x3",
  "@tag=1 :me PRIVMSG #a,#enc :x4",
  ":me PRIVMSG #a,,#enc :x5",
  "PRIVMSG :#enc x6",
  "NOTICE #enc :x7",
  "notice #open,#ENC :x8",
  "PRIVMSG @#enc :x9",
  "PRIVMSG +@#enc :x10",
  "PRIVMSG #enc :\x01ACTION x11\x01"
]
const ALLOWED: ReadonlyArray<string> = [
  "PRIVMSG #open :y1",
  "PRIVMSG #open,bob :y2",
  "NOTICE @#open :y3",
  "TOPIC #enc :y4",
  "PART #enc :y5",
  "MODE #enc +t",
  "WHOIS y6"
]

describe("NetworkActor: the send_raw guard", () => {
  it.scoped("the actor refuses plaintext to an encrypted target itself, and sends nothing", () =>
    Effect.gen(function*() {
      const { h, conn } = yield* setup({}, { e2eKeys: [{ target: "#enc", key: SWALLOW_CBC }] })
      for (const line of REFUSED) {
        expect(yield* Effect.flip(raw(h, line)), line).toMatchObject({ _tag: "E2eChannelUseSendMessage" })
      }
      for (const line of ALLOWED) yield* raw(h, line)
      yield* paced(ALLOWED.length)
      yield* conn.waitFor("WHOIS y6")
      const sent = yield* conn.lines
      for (const line of REFUSED) expect(sent).not.toContain(line)
      for (const line of ALLOWED) expect(sent).toContain(line)
    }))
})

// ---------------------------------------------------------------------------------------------------------------
// Through NetworkControl, over the real E2eKeys, Networks and database.

const ServicesTest = TestServicesLive()

const startSupervisor = Effect.gen(function*() {
  const store = yield* MemoryMessageStore.make
  const { control } = yield* startSharedSupervisor({ store })
  return { control, store }
})

let accountSeq = 0
const newNetwork = (server: FakeIrcServer.FakeIrcServer) =>
  Effect.gen(function*() {
    const account = `e2e${++accountSeq}`
    yield* (yield* Accounts).create(account, "a long password").pipe(Effect.orDie)
    const id = yield* (yield* Networks).add(account, {
      name: `net-${server.port}`,
      host: server.host,
      port: server.port,
      tls: false,
      tlsInsecure: false,
      nick: "belay",
      username: Option.some("belayuser"),
      realname: Option.none(),
      serverPassword: Option.none(),
      sasl: Option.none(),
      join: []
    }).pipe(Effect.orDie)
    return { account, id }
  })

const connected = (server: FakeIrcServer.FakeIrcServer, control: NetworkControlService, id: number) =>
  Effect.gen(function*() {
    const conn = yield* server.nextConnection()
    yield* conn.register(undefined, ISUPPORT)
    yield* live(
      Effect.gen(function*() {
        while ((yield* control.status(id)).state !== "connected") yield* Effect.sleep("10 millis")
      })
    )
    return conn
  })

describe(`the send_raw guard and runtime keys through NetworkControl on ${describeMode}`, () => {
  it.layer(ServicesTest, { timeout: 120_000 })((it) => {
    it.scoped("the guard matrix: refused with e2e-channel-use-send-message and nothing sent; the rest goes out", () =>
      Effect.gen(function*() {
        const server = yield* FakeIrcServer.make()
        const { account, id } = yield* newNetwork(server)
        yield* (yield* E2eKeys).set(account, id, "#Enc", "cbc:channel key")
        const { control } = yield* startSupervisor
        const conn = yield* connected(server, control, id)
        for (const line of REFUSED) {
          expect(yield* Effect.flip(control.raw(id, line)), line).toMatchObject({ _tag: "E2eChannelUseSendMessage" })
          expect(Option.isSome(yield* control.encryptedTargetOfRaw(id, line)), line).toBe(true)
        }
        for (const line of ALLOWED) {
          expect(yield* control.encryptedTargetOfRaw(id, line), line).toEqual(Option.none())
          yield* control.raw(id, line)
        }
        expect(yield* control.encryptedTargetOfRaw(id, "@t=1 PRIVMSG #a,@#ENC :x")).toEqual(Option.some("#ENC"))
        expect(yield* control.isEncrypted(id, "#ENC")).toBe(true)
        expect(yield* control.isEncrypted(id, "#open")).toBe(false)
        yield* paced(ALLOWED.length)
        yield* conn.waitFor("WHOIS y6")
        const sent = yield* conn.lines
        for (const line of REFUSED) expect(sent).not.toContain(line)
        for (const line of ALLOWED) expect(sent).toContain(line)
      }))

    it.scoped("belay channel encrypt/decrypt while connected takes effect at once; the key is stored sealed and normalized", () =>
      Effect.gen(function*() {
        const server = yield* FakeIrcServer.make()
        const { account, id } = yield* newNetwork(server)
        const e2e = yield* E2eKeys
        const { control, store } = yield* startSupervisor
        const conn = yield* connected(server, control, id)

        yield* e2e.set(account, id, "#Enc", "unladen swallow")
        yield* live(Effect.sleep("100 millis"))
        yield* control.say(id, "privmsg", "#enc", "secret plans")
        const line = yield* conn.waitFor((l) => l.command === "PRIVMSG")
        // A bare key is ECB (Fish.ts: what a bare key means to FiSHLiM and fish.py).
        expect(line.raw).toBe(`PRIVMSG #enc :${fishEncrypt(SWALLOW_ECB, "secret plans")}`)
        yield* conn.send(`:alice!a@h PRIVMSG #enc :${CBC_FOX}`)
        yield* live(
          Effect.gen(function*() {
            while (!(yield* store.all).some((m) => m.text === QUICK_FOX && m.encryption === "decrypted")) {
              yield* Effect.sleep("10 millis")
            }
          })
        )

        // Stored normalized (mode spelled out) and sealed: the row holds neither the key nor its normalized form.
        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql<{ keyEnc: Uint8Array }>`
          SELECT e2e_key_enc AS "keyEnc" FROM buffers WHERE network_id = ${id} AND e2e_key_enc IS NOT NULL`
        expect(rows).toHaveLength(1)
        expect(Buffer.from(rows[0]!.keyEnc).toString("latin1")).not.toContain("unladen")
        expect((yield* SecretBox).open("e2e-key", rows[0]!.keyEnc)).toBe("ecb:unladen swallow")

        expect(yield* e2e.clear(account, id, "#ENC")).toBe(true)
        yield* live(Effect.sleep("100 millis"))
        yield* control.say(id, "privmsg", "#enc", "in the clear")
        yield* conn.waitFor("PRIVMSG #enc :in the clear")
        yield* control.raw(id, "PRIVMSG #enc :raw again")
      }))

    it.scoped("E2eKeys refuses empty or unusable keys and targets that are not one name", () =>
      Effect.gen(function*() {
        const server = yield* FakeIrcServer.make()
        const { account, id } = yield* newNetwork(server)
        const e2e = yield* E2eKeys
        for (const [target, rawKey, message] of [
          ["#a", "", "the FiSH key is empty"],
          ["#a", "cbc:", "the FiSH key is empty"],
          ["#a", "ECB:", "the FiSH key is empty"],
          ["#a", "k\u0000ey", "the FiSH key contains NUL, CR or LF"],
          ["#a b", "key", "\"#a b\" is not a channel or nick name"],
          ["#a,#b", "key", "\"#a,#b\" is not a channel or nick name"]
        ] as const) {
          const error = yield* Effect.flip(e2e.set(account, id, target, rawKey))
          expect(error).toMatchObject({ _tag: "InvalidE2eKey", message })
        }
        expect((yield* e2e.forNetwork(id)).size).toBe(0)
      }))
  })
})
