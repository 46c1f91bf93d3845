/**
 * The Web Push key pair (VapidKeyStore.ts): alone, in the data directory as before; in a cluster, one pair for every
 * node, in the database with its private key sealed by BELAY_SECRET_KEY — the first node's existing vapid.json kept,
 * nodes that start together agreeing, and a node with another BELAY_SECRET_KEY refused with a clear error.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer } from "effect"
import webpush from "web-push"
import { AppConfig } from "../../../src/services/AppConfig.js"
import { DatabaseLive } from "../../../src/services/storage/Database.js"
import { SecretBox } from "../../../src/services/crypto/SecretBox.js"
import { loadVapidKeys } from "../../../src/services/push/VapidKeyStore.js"
import { describeMode, settingsFrom, tempDir, testEnvironment } from "../../support/TestDatabase.js"

const KEY = "cd".repeat(32)
const cluster = (port: number, key = KEY) => ({ BELAY_CLUSTER_ADDRESS: `127.0.0.1:${port}`, BELAY_SECRET_KEY: key })

/** One node's context (its own pool and data directory) over `env`'s database. */
const node = (env: Record<string, string>) =>
  Effect.gen(function*() {
    const settings = yield* settingsFrom(env)
    const context = yield* Layer.build(
      SecretBox.Default.pipe(Layer.provideMerge(DatabaseLive), Layer.provideMerge(Layer.succeed(AppConfig, settings)), Layer.orDie)
    )
    return { load: Effect.provide(loadVapidKeys, context), sql: Context.get(context, SqlClient.SqlClient) }
  })

describe(`Web Push keys on ${describeMode}`, () => {
  it.scoped("alone: generated into the data directory and kept, nothing in the database", () =>
    Effect.gen(function*() {
      const env = yield* testEnvironment()
      const n = yield* node(env)
      const first = yield* n.load
      expect(yield* n.load).toEqual(first)
      const file = JSON.parse(Fs.readFileSync(Path.join(env.BELAY_DATA_DIR!, "vapid.json"), "utf8")) as unknown
      expect(file).toEqual(first)
      expect(yield* n.sql`SELECT 1 FROM vapid_keys`.pipe(Effect.orDie)).toEqual([])
    }), 60_000)

  it.scoped("a cluster: the first node's vapid.json becomes every node's, sealed in the database", () =>
    Effect.gen(function*() {
      const env = yield* testEnvironment()
      const existing = webpush.generateVAPIDKeys()
      Fs.writeFileSync(Path.join(env.BELAY_DATA_DIR!, "vapid.json"), JSON.stringify(existing), { mode: 0o600 })
      const a = yield* node({ ...env, ...cluster(34501) })
      expect(yield* a.load).toEqual(existing)
      const b = yield* node({ ...env, ...cluster(34502), BELAY_DATA_DIR: yield* tempDir("belay-node-b-") })
      expect(yield* b.load).toEqual(existing)
      // Not in the clear: neither the key's text nor its bytes are in the row.
      const rows = yield* a.sql<{ sealed: Uint8Array }>`SELECT private_key_sealed AS sealed FROM vapid_keys`.pipe(Effect.orDie)
      expect(rows).toHaveLength(1)
      const sealed = Buffer.from(rows[0]!.sealed)
      expect(sealed.includes(Buffer.from(existing.privateKey))).toBe(false)
      expect(sealed.includes(Buffer.from(existing.privateKey, "base64url"))).toBe(false)
      // A node with another BELAY_SECRET_KEY cannot open it, and says why.
      const c = yield* node({ ...env, ...cluster(34503, "ef".repeat(32)), BELAY_DATA_DIR: yield* tempDir("belay-node-c-") })
      const refused = yield* Effect.exit(c.load)
      expect(Exit.isFailure(refused) && String(refused.cause)).toMatch(/BELAY_SECRET_KEY/)
    }), 60_000)

  it.scoped("nodes of a new cluster that start together agree on one pair", () =>
    Effect.gen(function*() {
      const env = yield* testEnvironment()
      const nodes = yield* Effect.forEach([34511, 34512, 34513], (port) =>
        Effect.flatMap(tempDir("belay-node-"), (dir) => node({ ...env, ...cluster(port), BELAY_DATA_DIR: dir })))
      const keys = yield* Effect.forEach(nodes, (n) => n.load, { concurrency: "unbounded" })
      expect(new Set(keys.map((k) => k.publicKey)).size).toBe(1)
      expect(new Set(keys.map((k) => k.privateKey)).size).toBe(1)
      expect(Buffer.from(keys[0]!.publicKey, "base64url")).toHaveLength(65)
    }), 60_000)
})
