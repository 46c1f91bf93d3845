// System test: end-to-end encryption (FiSH) against a real IRC server (ngircd 26) on a free loopback port, over
// the real services (the embedded PostgreSQL or TEST_DATABASE_URL, E2eKeys, MessageWriter, Networks) and irc-framework. A
// bare-socket client in the same channel holds the same FiSH key and decrypts with Fish.ts (proven against FiSHLiM,
// fish.py and other implementations' vectors in test/services/crypto/Fish.test.ts).
//
// Proves: what Belay sends to an encrypted channel arrives at another client as `+OK *…` (CBC) lines that decrypt
// to the original, long text included (split so that ngircd relays every piece whole); what that client sends
// encrypted (CBC and ECB) is stored in Belay's history decrypted and marked so; send_raw cannot leak plaintext
// into the channel; and clearing the key while connected makes Belay speak plaintext again.
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Either } from "effect"
import { type FishKey, fishDecrypt, fishEncrypt, parseFishKey } from "../../src/services/crypto/Fish.js"
import { E2eKeys } from "../../src/services/networks/E2eKeys.js"
import type { StoredMessage } from "../../src/services/history/MessageHistory.js"
import { eventually } from "../support/Eventually.js"
import { NGIRCD, ngircd, ngircdNetwork, peer, type Peer } from "../support/Ngircd.js"
import { accountWithNetwork, startSupervisor, storedHistory, withTestServices } from "../support/TestServices.js"

const CHANNEL = "#secret"
const KEY_TEXT = "cbc:Shared FiSH key for the system test"
const CBC_KEY: FishKey = Either.getOrThrow(parseFishKey(KEY_TEXT))
// The same secret in ECB, as a HexChat user with a bare key would send it; Belay reads either mode.
const ECB_KEY: FishKey = Either.getOrThrow(parseFishKey("ecb:Shared FiSH key for the system test"))
// ngircd's flood penalty (PENALTY) makes everything slow; the waits on Belay's side allow a minute.
const WAIT = Duration.seconds(60)

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
  it.live.skipIf(NGIRCD.skip)(
    "Belay ⇄ a FiSH client through a real server: encrypted both ways, stored decrypted, no plaintext leak",
    () =>
      withTestServices(Effect.gen(function*() {
        const server = yield* ngircd
        const { control } = yield* startSupervisor()
        const id = yield* accountWithNetwork("sys", ngircdNetwork(server.port, [CHANNEL]))
        const e2eKeys = yield* E2eKeys
        // As `belay channel encrypt sys <id> #Secret` does, while the network is (being) connected.
        yield* e2eKeys.set("sys", id, "#Secret", KEY_TEXT)

        yield* eventually("the network connected", control.status(id), (s) => s.state === "connected", WAIT)
        const other = yield* peer(server.port, "fishpeer")
        yield* other.send(`JOIN ${CHANNEL}`)
        yield* other.waitFor((l) => / 366 /.test(l))
        const members = Effect.orElseSucceed(control.members(id, CHANNEL), () => [])
        yield* eventually("both in the channel", members, (ms) =>
          ["belaybot", "fishpeer"].every((n) => ms.some((m) => m.nick === n)), WAIT)

        // Belay → peer: CBC on the wire, readable with the shared key.
        yield* control.say(id, "privmsg", CHANNEL, "hello, encrypted world")
        const [hello] = yield* fromBelay(other, 1)
        expect(textOf(hello!)).toMatch(/^\+OK \*[A-Za-z0-9+/]+=*$/)
        expect(decrypted(hello!)).toBe("hello, encrypted world")

        // A long message: several lines, each relayed whole by ngircd (≤ 512 bytes with the prefix it adds).
        const long = "Ünïcödé and emoji 🔐 in a long encrypted message, ".repeat(20) + "fin."
        yield* control.say(id, "privmsg", CHANNEL, long)
        const pieces: Array<string> = []
        while (pieces.join("") !== long) {
          const [line] = yield* fromBelay(other, 1)
          expect(Buffer.byteLength(`${line}\r\n`)).toBeLessThanOrEqual(512)
          pieces.push(decrypted(line!))
        }
        expect(pieces.length).toBeGreaterThan(2)

        yield* control.say(id, "action", CHANNEL, "locks the door")
        const [action] = yield* fromBelay(other, 1)
        expect(textOf(action!)).toMatch(/^\x01ACTION \+OK \*[A-Za-z0-9+/]+=*\x01$/)
        expect(decrypted(action!)).toBe("locks the door")

        // Peer → Belay: CBC and ECB lines are stored decrypted; a plaintext line stays plain.
        yield* other.send(`PRIVMSG ${CHANNEL} :${fishEncrypt(CBC_KEY, "reply in CBC")}`)
        yield* other.send(`PRIVMSG ${CHANNEL} :${fishEncrypt(ECB_KEY, "reply in ECB")}`)
        yield* other.send(`PRIVMSG ${CHANNEL} :plain words`)
        const stored = yield* eventually("the peer's lines in history", storedHistory(id, CHANNEL, 200), (ms) =>
          ms.some((m) => m.text === "plain words"), WAIT)
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
          expect(yield* Effect.flip(control.raw(id, line))).toMatchObject({ _tag: "E2eChannelUseSendMessage" })
        }
        yield* control.say(id, "privmsg", CHANNEL, "after the refusals")
        const [after] = yield* fromBelay(other, 1)
        expect(decrypted(after!)).toBe("after the refusals")
        expect((yield* other.received).filter((l) => l.includes("leak"))).toEqual([])

        // `belay channel decrypt` while connected: plaintext from the next message on.
        expect(yield* e2eKeys.clear("sys", id, CHANNEL)).toBe(true)
        yield* Effect.sleep("200 millis")
        yield* control.say(id, "privmsg", CHANNEL, "in the clear now")
        const [clear] = yield* fromBelay(other, 1)
        expect(textOf(clear!)).toBe("in the clear now")
      })),
    { timeout: 180_000 }
  )
})
