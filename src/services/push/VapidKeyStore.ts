/**
 * VapidKeyStore: where the Web Push VAPID key pair (RFC 8292) lives (docs/decisions/web.md "Web Push keys in a cluster").
 * A browser subscribes with the public key (`PushManager.subscribe`), and the push service then accepts only
 * notifications signed with its private key; so every node that may send must sign with the same pair.
 *
 * - Alone (no BELAY_CLUSTER_ADDRESS): `$BELAY_DATA_DIR/vapid.json` (mode 0600), generated the first time and kept.
 * - In a cluster: the `vapid_keys` row (migration 0008), the private key sealed with BELAY_SECRET_KEY (SecretBox),
 *   which every node already shares. The first node that finds no row writes one — the key pair of its own
 *   vapid.json when it has one (it ran alone before; its browsers subscribed with it), else a new pair — with
 *   INSERT … ON CONFLICT DO NOTHING, and every node (itself included) then reads the one row that won, so nodes that
 *   start together agree. A node whose vapid.json differs from the cluster's says so once and uses the cluster's.
 *
 * Concurrency rule: read once at start-up (WebPush); the row is never changed afterwards.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import webpush from "web-push"
import { AppConfig } from "../AppConfig.js"
import { SecretBox } from "../crypto/SecretBox.js"

export interface VapidKeys {
  /** base64url of the uncompressed 65-byte P-256 point (`applicationServerKey`). */
  readonly publicKey: string
  readonly privateKey: string
}

const PURPOSE = "vapid-private-key"

const fileOf = (dataDir: string) => Path.join(dataDir, "vapid.json")

/** The key pair in `file`, if there is one; throws when the file holds something else. */
const readFile = (file: string): VapidKeys | undefined => {
  let text: string
  try {
    text = Fs.readFileSync(file, "utf8")
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined
    throw e
  }
  const parsed: unknown = JSON.parse(text)
  if (
    typeof parsed !== "object" || parsed === null || !("publicKey" in parsed) || !("privateKey" in parsed) ||
    typeof parsed.publicKey !== "string" || typeof parsed.privateKey !== "string" ||
    Buffer.from(parsed.publicKey, "base64url").length !== 65
  ) {
    throw new Error(`${file} does not hold a VAPID key pair`)
  }
  return { publicKey: parsed.publicKey, privateKey: parsed.privateKey }
}

/** The key pair in `dataDir`, generated there the first time. */
const fromDataDir = (dataDir: string): VapidKeys => {
  const file = fileOf(dataDir)
  Fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 })
  try {
    // "wx": never replace a key pair browsers already subscribed with.
    Fs.writeFileSync(file, JSON.stringify(webpush.generateVAPIDKeys()) + "\n", { flag: "wx", mode: 0o600 })
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e
  }
  return readFile(file)!
}

/** The key pair this node signs with (see the module comment). */
export const loadVapidKeys: Effect.Effect<VapidKeys, never, AppConfig | SqlClient.SqlClient | SecretBox> = Effect.gen(
  function*() {
    const config = yield* AppConfig
    if (Option.isNone(config.clusterAddress)) return yield* Effect.try(() => fromDataDir(config.dataDir)).pipe(Effect.orDie)
    const sql = yield* SqlClient.SqlClient
    const box = yield* SecretBox
    const local = yield* Effect.try(() => readFile(fileOf(config.dataDir))).pipe(Effect.orDie)
    const read = sql<{ readonly publicKey: string; readonly sealed: Uint8Array }>`
      SELECT public_key AS "publicKey", private_key_sealed AS sealed FROM vapid_keys WHERE id = 1`.pipe(Effect.orDie)
    let rows = yield* read
    if (rows.length === 0) {
      const candidate = local ?? webpush.generateVAPIDKeys()
      yield* sql`
        INSERT INTO vapid_keys (id, public_key, private_key_sealed)
        VALUES (1, ${candidate.publicKey}, ${box.seal(PURPOSE, candidate.privateKey)})
        ON CONFLICT (id) DO NOTHING`.pipe(Effect.orDie)
      rows = yield* read
    }
    const row = rows[0]
    if (row === undefined) return yield* Effect.dieMessage("the cluster's VAPID key pair could not be stored")
    const privateKey = yield* Effect.try(() => box.open(PURPOSE, row.sealed)).pipe(
      Effect.orElse(() =>
        Effect.dieMessage(
          "the cluster's VAPID private key does not open with this node's BELAY_SECRET_KEY: every node needs the same key"
        )
      )
    )
    if (local !== undefined && local.publicKey !== row.publicKey) {
      yield* Effect.logWarning(
        "web push: this node's vapid.json is not the cluster's key pair; the cluster's is used (browsers that subscribed " +
          "through this node alone need notifications turned off and on again in the web client)"
      )
    }
    return { publicKey: row.publicKey, privateKey }
  }
)
