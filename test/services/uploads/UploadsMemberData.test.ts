/**
 * A member's uploads as part of their data (docs/decisions/uploads.md "Deletion and export"): the export has one
 * `upload` line per file with its metadata and URL, and no byte of it; deleting the account deletes every chunk and
 * every upload row of it, in batches, while another member's files stay and still read back whole.
 */
import { randomBytes } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Chunk, Duration, Effect, Stream } from "effect"
import { Accounts } from "../../../src/services/identity/Accounts.js"
import { AccountDeletion } from "../../../src/services/memberdata/AccountDeletion.js"
import { AccountExport } from "../../../src/services/memberdata/AccountExport.js"
import { CHUNK_BYTES, Uploads } from "../../../src/services/uploads/Uploads.js"
import { describeMode } from "../../support/TestDatabase.js"
import { TestServicesLive } from "../../support/TestServices.js"

const upload = (accountId: number, name: string, bytes: Buffer) =>
  Effect.flatMap(Uploads, (uploads) =>
    uploads.store({ accountId, name, contentType: undefined, declaredSize: bytes.length }, Stream.make(bytes)))

const rowsOf = (accountId: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [r] = yield* sql<{ uploads: number; chunks: number }>`
      SELECT (SELECT count(*)::int FROM uploads WHERE account_id = ${accountId}) AS uploads,
             (SELECT count(*)::int FROM upload_chunks c JOIN uploads u ON u.id = c.upload_id WHERE u.account_id = ${accountId}) AS chunks`
    return r!
  }).pipe(Effect.orDie)

describe(`uploads in the export and the deletion on ${describeMode}`, () => {
  layer(TestServicesLive({ PUBLIC_BASE_URL: "https://belay.example" }), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.scoped("exported as metadata and URL; deleted with the account, chunks and rows; another member's stay", () =>
      Effect.gen(function*() {
        const accounts = yield* Accounts
        const leaver = yield* accounts.create("fileleaver", "a long password").pipe(Effect.orDie)
        const stayer = yield* accounts.create("filestayer", "a long password").pipe(Effect.orDie)
        const big = yield* upload(leaver.id, "big.bin", randomBytes(2 * CHUNK_BYTES + 1))
        const small = yield* upload(leaver.id, "note.txt", Buffer.from("hello"))
        const kept = randomBytes(CHUNK_BYTES + 10)
        const other = yield* upload(stayer.id, "kept.png", kept)
        expect(yield* rowsOf(leaver.id)).toEqual({ uploads: 2, chunks: 4 })

        const text = Chunk.toReadonlyArray(yield* Stream.runCollect(yield* (yield* AccountExport).byName("fileleaver")).pipe(Effect.orDie)).join("")
        const lines = text.trimEnd().split("\n").map((l) => JSON.parse(l) as { kind: string; upload?: Record<string, unknown> })
        const files = lines.filter((l) => l.kind === "upload").map((l) => l.upload!)
        expect(files.map((f) => f.name).sort()).toEqual(["big.bin", "note.txt"])
        expect(files.find((f) => f.name === "note.txt")).toEqual({
          id: small.id,
          name: "note.txt",
          contentType: "text/plain",
          size: 5,
          sha256: small.sha256,
          createdAt: small.createdAt.toISOString(),
          url: `https://belay.example/uploads/${small.id}/note.txt`
        })
        expect(lines.at(-1)).toMatchObject({ kind: "end", end: { counts: { upload: 2 } } })
        expect(text).not.toContain(other.id)
        expect(text).not.toContain(Buffer.from("hello").toString("base64"))

        yield* (yield* AccountDeletion).begin("fileleaver")
        for (let i = 0; i < 300 && (yield* rowsOf(leaver.id)).uploads > 0; i++) yield* Effect.sleep(Duration.millis(100))
        expect(yield* rowsOf(leaver.id)).toEqual({ uploads: 0, chunks: 0 })
        const sql = yield* SqlClient.SqlClient
        expect((yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM upload_chunks WHERE upload_id = ${big.id}`)[0]!.n).toBe(0)
        expect(yield* rowsOf(stayer.id)).toEqual({ uploads: 1, chunks: 2 })
        const uploads = yield* Uploads
        const read = Buffer.concat(Chunk.toReadonlyArray(yield* Stream.runCollect(uploads.read(other, 0, other.size - 1))))
        expect(read.equals(kept)).toBe(true)
      }))
  })
})
