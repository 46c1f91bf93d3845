/**
 * AccountExport against a real database: one JSON Lines stream with every kind the member owns (the history oldest
 * first, across pages), an `end` line whose counts match, and none of the member's secrets — in the clear or sealed.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Chunk, Effect, Stream } from "effect"
import { AccountDeletion } from "../../../src/services/memberdata/AccountDeletion.js"
import { AccountExport } from "../../../src/services/memberdata/AccountExport.js"
import { describeMode } from "../../support/TestDatabase.js"
import { TestServicesLive } from "../../support/TestServices.js"
import { secretsOf, seedMember } from "./Fixtures.js"

interface Line {
  readonly kind: string
  readonly [field: string]: unknown
}

const exportOf = (name: string) =>
  Effect.gen(function*() {
    const chunks = yield* Stream.runCollect(yield* (yield* AccountExport).byName(name)).pipe(Effect.orDie)
    return Chunk.toReadonlyArray(chunks).join("")
  })

describe(`AccountExport on ${describeMode}`, () => {
  layer(TestServicesLive(), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.scoped("every kind, the history oldest first across pages, counts that match, and no secret", () =>
      Effect.gen(function*() {
        const member = yield* seedMember("exporter", 2_500)
        const text = yield* exportOf("exporter")
        expect(text.endsWith("\n")).toBe(true)
        const lines = text.trimEnd().split("\n").map((l) => JSON.parse(l) as Line)

        expect(lines[0]).toMatchObject({
          kind: "archive",
          archive: { format: "belay-account-export", version: 1, account: { name: "exporter", status: "active" } }
        })
        const kinds = new Set(lines.map((l) => l.kind))
        expect([...kinds].sort()).toEqual(
          ["archive", "buffer", "channel", "end", "message", "network", "nick-note", "read-marker", "relay-bot"].sort()
        )
        const counts: Record<string, number> = {}
        for (const l of lines.slice(1, -1)) counts[l.kind] = (counts[l.kind] ?? 0) + 1
        expect(lines.at(-1)).toEqual({ kind: "end", end: { counts } })
        expect(counts).toEqual({
          network: 1,
          channel: 1,
          "nick-note": 1,
          "relay-bot": 1,
          "read-marker": 1,
          buffer: 2,
          message: 2_503
        })

        // Each buffer is followed by its own messages, oldest first.
        const firstBuffer = lines.findIndex((l) => l.kind === "buffer")
        const messages = lines.slice(firstBuffer + 1, firstBuffer + 1 + 2_500).map((l) => l["message"] as { id: number; text: string; target: string })
        expect(messages.map((m) => m.text)).toEqual(Array.from({ length: 2_500 }, (_, i) => `line ${i + 1}`))
        expect(new Set(messages.map((m) => m.target))).toEqual(new Set(["#belay"]))
        expect(lines[firstBuffer + 1 + 2_500]).toMatchObject({ kind: "buffer", buffer: { target: "friend", type: "dm", encrypted: true } })

        expect(lines.find((l) => l.kind === "network")).toMatchObject({
          network: { id: member.networkId, name: "libera", hasServerPassword: true, hasSasl: true }
        })
        expect(lines.find((l) => l.kind === "channel")).toEqual({
          kind: "channel",
          channel: { networkId: member.networkId, name: "#keyed", hasKey: true }
        })
        expect(lines.find((l) => l.kind === "nick-note")).toMatchObject({ nickNote: { nick: "Bob", note: "met at FOSDEM" } })
        expect(lines.find((l) => l.kind === "relay-bot")).toMatchObject({ relayBot: { nick: "Relay", pattern: null } })
        expect(lines.find((l) => l.kind === "read-marker")).toMatchObject({ readMarker: { target: "#belay", messageId: 1 } })

        // No secret in the clear, and nothing of what is stored for them (sealed bytes, hashes).
        for (const secret of Object.values(secretsOf("exporter"))) expect(text).not.toContain(secret)
        const sql = yield* SqlClient.SqlClient
        const [stored] = yield* sql<{ hash: string; sealed: Buffer }>`
          SELECT a.password_hash AS hash, n.server_password_enc AS sealed
          FROM accounts a JOIN networks n ON n.account_id = a.id WHERE a.name = 'exporter'`
        expect(text).not.toContain(stored!.hash)
        expect(text).not.toContain(stored!.sealed.toString("base64"))
        expect(text).not.toMatch(/Enc"|Hash"|token|secret|"key"/i)
      }))

    it.scoped("a message record is the MCP record, whatever its text, its numeric or its encryption, across strings", () =>
      Effect.gen(function*() {
        const member = yield* seedMember("shapes", 0)
        const sql = yield* SqlClient.SqlClient
        const texts = [
          `quotes " and \\ backslashes`,
          "a tab\there, a bell \u0007, a DEL \u007f",
          "emoji 🧗 and astral 𝄞, accents é, CJK 攀登",
          "</script><!-- -->",
          ""
        ]
        // Enough lines for several of PostgreSQL's strings and a second page, with a microsecond time.
        for (let i = 0; i < 1_100; i++) {
          yield* sql`
            INSERT INTO messages (buffer_id, time, kind, nick, text, numeric, self, encryption)
            VALUES (${member.bufferIds[0]!}, now() - ${1_100 - i}::int * interval '1.000123 second',
                    ${i % 3 === 0 ? "numeric" : "privmsg"}, ${i % 5 === 0 ? null : `nick${i}`}, ${texts[i % texts.length]!},
                    ${i % 3 === 0 ? "433" : null}, ${i % 2 === 0}, ${["plain", "decrypted", "undecryptable"][i % 3]!})`
        }
        const stored = yield* sql<{
          id: number
          time: Date
          kind: string
          nick: string | null
          text: string
          numeric: string | null
          self: boolean
          encryption: string
        }>`SELECT id, time, kind, nick, text, numeric, self, encryption FROM messages WHERE buffer_id = ${member.bufferIds[0]!} ORDER BY id`
        const text = yield* exportOf("shapes")
        const exported = text.trimEnd().split("\n").map((l) => JSON.parse(l) as Line).filter((l) => l.kind === "message")
        expect(exported.length).toBe(1_100 + 3)
        expect(exported.slice(0, 1_100).map((l) => l["message"])).toEqual(stored.map((m) => ({
          id: m.id,
          networkId: member.networkId,
          target: "#belay",
          time: m.time.toISOString(),
          kind: m.kind,
          nick: m.nick,
          text: m.text,
          self: m.self,
          ...(m.numeric !== null ? { numeric: m.numeric } : {}),
          ...(m.encryption !== "plain" ? { encrypted: m.encryption === "decrypted" } : {})
        })))
        expect(text.trimEnd().split("\n").at(-1)).toContain(`"message":1103`)
      }))

    it.scoped("an account being deleted, or none, is not exported", () =>
      Effect.gen(function*() {
        yield* seedMember("going", 1)
        yield* (yield* AccountDeletion).begin("going")
        const exporter = yield* AccountExport
        expect((yield* Effect.flip(exporter.byName("going")))._tag).toBe("AccountNotFound")
        expect((yield* Effect.flip(exporter.byName("nobody")))._tag).toBe("AccountNotFound")
      }))
  })
})
