/**
 * Uploads against a real database: a file arrives in pieces of any size and is stored in 256 KiB chunk rows; it reads
 * back whole and in ranges across chunk edges; a file too large, over the account's total, or cut off stores nothing
 * (no row in either table); two uploads racing for the last room of an account's total cannot both pass.
 */
import { createHash, randomBytes } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Chunk, Data, Effect, Either, Option, Stream } from "effect"
import { AccountLimits } from "../../../src/services/identity/AccountLimits.js"
import { Accounts } from "../../../src/services/identity/Accounts.js"
import { CHUNK_BYTES, type Upload, uploadPath, UploadRefused, Uploads } from "../../../src/services/uploads/Uploads.js"
import { describeMode } from "../../support/TestDatabase.js"
import { TestServicesLive } from "../../support/TestServices.js"

const MAX = 1024 * 1024

/** `bytes` as a body arriving in pieces of `piece` bytes. */
const bodyOf = (bytes: Buffer, piece: number): Stream.Stream<Uint8Array> =>
  Stream.fromIterable(Array.from({ length: Math.ceil(bytes.length / piece) }, (_, i) => bytes.subarray(i * piece, (i + 1) * piece)))

const readAll = (file: Upload, start: number, end: number) =>
  Effect.gen(function*() {
    const parts = yield* Stream.runCollect((yield* Uploads).read(file, start, end))
    return Buffer.concat(Chunk.toReadonlyArray(parts))
  })

const rows = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const [u] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM uploads`
  const [c] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM upload_chunks`
  return { uploads: u!.n, chunks: c!.n }
}).pipe(Effect.orDie)

/** The refusal of a failed store, as plain data. */
const refusal = <A, E>(outcome: Either.Either<A, E>) =>
  Either.isLeft(outcome) && outcome.left instanceof UploadRefused ? { reason: outcome.left.reason, max: outcome.left.max } : outcome

class ClientGone extends Data.TaggedError("ClientGone")<{}> {}

let names = 0
const member = Effect.gen(function*() {
  names += 1
  return yield* (yield* Accounts).create(`uploader${names}`, "a long password").pipe(Effect.orDie)
})

describe(`Uploads on ${describeMode}`, () => {
  layer(TestServicesLive({ BELAY_UPLOAD_MAX_BYTES: String(MAX) }), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("a file in odd pieces is stored in 256 KiB chunks and reads back whole and across chunk edges", () =>
      Effect.gen(function*() {
        const account = yield* member
        const uploads = yield* Uploads
        const bytes = randomBytes(2 * CHUNK_BYTES + 12_345)
        const before = yield* rows
        const file = yield* uploads.store(
          { accountId: account.id, name: "holiday photo.PNG", contentType: undefined, declaredSize: undefined },
          bodyOf(bytes, 7001)
        )
        expect(file).toMatchObject({ name: "holiday photo.PNG", contentType: "image/png", size: bytes.length, accountId: account.id })
        expect(file.id).toMatch(/^[A-Za-z0-9_-]{22}$/)
        expect(file.sha256).toBe(createHash("sha256").update(bytes).digest("base64url"))
        expect(uploadPath(file.id, file.name)).toBe(`/uploads/${file.id}/holiday%20photo.PNG`)
        // A long name is cut in the URL, its extension kept, so that the link fits an IRC line.
        expect(uploadPath(file.id, `${"🙂".repeat(100)}.gif`)).toBe(`/uploads/${file.id}/${"%F0%9F%99%82".repeat(6)}.gif`)

        const sql = yield* SqlClient.SqlClient
        const chunks = yield* sql<{ seq: number; n: number }>`
          SELECT seq, length(data) AS n FROM upload_chunks WHERE upload_id = ${file.id} ORDER BY seq`.pipe(Effect.orDie)
        expect(chunks).toEqual([{ seq: 0, n: CHUNK_BYTES }, { seq: 1, n: CHUNK_BYTES }, { seq: 2, n: 12_345 }])
        expect(yield* rows).toEqual({ uploads: before.uploads + 1, chunks: before.chunks + 3 })

        expect((yield* readAll(file, 0, bytes.length - 1)).equals(bytes)).toBe(true)
        for (const [start, end] of [[0, 0], [CHUNK_BYTES - 1, CHUNK_BYTES], [CHUNK_BYTES, CHUNK_BYTES], [10, 2 * CHUNK_BYTES + 5], [bytes.length - 1, bytes.length - 1]] as const) {
          expect((yield* readAll(file, start, end)).equals(bytes.subarray(start, end + 1))).toBe(true)
        }
        expect(Option.map(yield* uploads.find(file.id), (f) => f.size)).toEqual(Option.some(bytes.length))
        expect(yield* uploads.find("A".repeat(22))).toEqual(Option.none())
        expect(yield* uploads.find("../../etc/passwd")).toEqual(Option.none())
      }))

    it.effect("an empty file is stored without chunks", () =>
      Effect.gen(function*() {
        const account = yield* member
        const file = yield* (yield* Uploads).store(
          { accountId: account.id, name: "", contentType: "text/plain; charset=utf-8", declaredSize: 0 },
          Stream.empty
        )
        expect(file).toMatchObject({ name: "upload", contentType: "text/plain", size: 0 })
        expect((yield* readAll(file, 0, -1)).length).toBe(0)
      }))

    it.effect("too large: refused before reading when declared, and mid-way when not; nothing stored either way", () =>
      Effect.gen(function*() {
        const account = yield* member
        const uploads = yield* Uploads
        const before = yield* rows
        // Declared too large: the body is never pulled (pulling it would die).
        const declared = yield* Effect.either(uploads.store(
          { accountId: account.id, name: "big.bin", contentType: undefined, declaredSize: MAX + 1 },
          Stream.die("the body was read")
        ))
        expect(refusal(declared)).toEqual({ reason: "too-large", max: MAX })
        const streamed = yield* Effect.either(uploads.store(
          { accountId: account.id, name: "big.bin", contentType: undefined, declaredSize: undefined },
          bodyOf(randomBytes(MAX + 1), 65_536)
        ))
        expect(refusal(streamed)).toEqual({ reason: "too-large", max: MAX })
        // Exactly the largest is taken.
        const exact = yield* uploads.store(
          { accountId: account.id, name: "exact.bin", contentType: undefined, declaredSize: MAX },
          bodyOf(randomBytes(MAX), 100_000)
        )
        expect(exact.size).toBe(MAX)
        expect(yield* rows).toEqual({ uploads: before.uploads + 1, chunks: before.chunks + 4 })
      }))

    it.effect("a body that fails mid-way (the client went away) stores nothing and fails with its own error", () =>
      Effect.gen(function*() {
        const account = yield* member
        const before = yield* rows
        const body = Stream.concat(bodyOf(randomBytes(CHUNK_BYTES + 5000), 50_000), Stream.fail(new ClientGone()))
        const outcome = yield* Effect.either((yield* Uploads).store(
          { accountId: account.id, name: "cut.bin", contentType: undefined, declaredSize: undefined },
          body
        ))
        expect(Either.isLeft(outcome) && outcome.left._tag).toBe("ClientGone")
        expect(yield* rows).toEqual(before)
      }))

    it.effect("the account's total: a file past it is refused whole, and the override moves it", () =>
      Effect.gen(function*() {
        const account = yield* member
        const uploads = yield* Uploads
        yield* (yield* AccountLimits).set(account.id, { uploads: 1 })
        yield* uploads.store({ accountId: account.id, name: "a", contentType: undefined, declaredSize: undefined }, bodyOf(randomBytes(700_000), 65_536))
        const before = yield* rows
        const over = yield* Effect.either(uploads.store(
          { accountId: account.id, name: "b", contentType: undefined, declaredSize: undefined },
          bodyOf(randomBytes(400_000), 65_536)
        ))
        expect(refusal(over)).toEqual({ reason: "quota-exceeded", max: 1 })
        expect(Either.isLeft(over) && over.left.message).toContain("1 MiB of uploads")
        expect(yield* rows).toEqual(before)
        expect(yield* uploads.usage(account.id)).toBe(700_000)
        yield* (yield* AccountLimits).set(account.id, { uploads: "unlimited" })
        yield* uploads.store({ accountId: account.id, name: "b", contentType: undefined, declaredSize: undefined }, bodyOf(randomBytes(400_000), 65_536))
        expect(yield* uploads.usage(account.id)).toBe(1_100_000)
      }))

    it.effect("two uploads racing for the last room of the total: one is stored, the other refused", () =>
      Effect.gen(function*() {
        const account = yield* member
        const uploads = yield* Uploads
        yield* (yield* AccountLimits).set(account.id, { uploads: 1 })
        const one = (name: string) =>
          Effect.either(uploads.store(
            { accountId: account.id, name, contentType: undefined, declaredSize: undefined },
            // Slow enough that both have read their whole body before either checks the total.
            Stream.tap(bodyOf(randomBytes(600_000), 100_000), () => Effect.promise(() => new Promise((r) => setTimeout(r, 20))))
          ))
        const [a, b] = yield* Effect.all([one("a"), one("b")], { concurrency: 2 })
        expect([a, b].filter(Either.isRight).length).toBe(1)
        expect([a, b].filter(Either.isLeft).map((e) => Either.isLeft(e) && e.left._tag)).toEqual(["UploadRefused"])
        expect(yield* uploads.usage(account.id)).toBe(600_000)
      }))

    it.effect("names and types: sanitised, guessed from the extension, never a path", () =>
      Effect.gen(function*() {
        const account = yield* member
        const uploads = yield* Uploads
        const store = (name: string, contentType?: string) =>
          uploads.store({ accountId: account.id, name, contentType, declaredSize: undefined }, bodyOf(Buffer.from("x"), 1))
        expect(yield* store("../../etc/passwd")).toMatchObject({ name: "_.._etc_passwd", contentType: "application/octet-stream" })
        expect(yield* store("clip.webm", "application/octet-stream")).toMatchObject({ contentType: "video/webm" })
        expect(yield* store("evil\u202egpj.exe", "IMAGE/JPEG; q=1")).toMatchObject({ name: "evil_gpj.exe", contentType: "image/jpeg" })
        expect(yield* store("x.svg", "not a type")).toMatchObject({ contentType: "image/svg+xml" })
      }))
  })
})
