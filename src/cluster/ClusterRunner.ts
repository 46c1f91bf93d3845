/**
 * ClusterRunner: this process as one node of the cluster (BELAY_CLUSTER_ADDRESS, docs/decisions/several-nodes.md "Several nodes"):
 * @effect/cluster's Sharding over PostgreSQL (runners and shard locks in `cluster_*` tables, each shard a session
 * advisory lock) with its runner on raw TCP at the configured address, and the start-up check that must pass
 * before the node joins.
 *
 * - Its own small pool, not the application's: the lock session is held for the node's whole life, the cluster's
 *   storage reads int8 ids with the driver's default parsing (the application's pool reads them as numbers), and the
 *   URL carries per-session TCP keepalives, so PostgreSQL ends the session — and frees the locks — of a node whose
 *   host died, within about 16 s (idle 10 s + 3 probes 2 s apart).
 * - Timings (SHARDING_TIMINGS): a lock lasts 15 s and is refreshed every 5 s; assignments are re-read every second;
 *   runners are pinged every 5 s. A node that cannot refresh its locks stops its networks' entities at once
 *   (Sharding marks its lock storage unhealthy), well before the locks can move. The lock storage is watched
 *   (ShardLockWatch): one failed lock operation drops every lock of the node in 0.60.2, so the node's fence closes at
 *   once rather than at Sharding's next refresh.
 * - The configuration is given whole (ShardingConfig.layer), never read from the environment: the cluster's own
 *   `layerFromEnv` would take the runner's address from HOST and PORT, which are Belay's HTTP listener.
 *
 * Concurrency rule: Sharding owns its fibers; this module builds layers and runs one check.
 */
import { RunnerAddress, RunnerHealth, Runners, ShardingConfig, SocketRunner, SqlMessageStorage, SqlRunnerStorage } from "@effect/cluster"
import { NodeClusterSocket } from "@effect/platform-node"
import { RpcSerialization } from "@effect/rpc"
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Data, Duration, Effect, Layer, Option, Redacted } from "effect"
import type { AppSettings } from "../services/AppConfig.js"
import { SecretBox, type SecretPurpose } from "../services/crypto/SecretBox.js"
import { ShardLockWatchLive } from "./ShardLockWatch.js"

export class ClusterStartupError extends Data.TaggedError("ClusterStartupError")<{ readonly message: string }> {
}

/** docs/decisions/several-nodes.md "Several nodes", timings. */
export const SHARDING_TIMINGS = {
  shardLockExpiration: Duration.seconds(15),
  shardLockRefreshInterval: Duration.seconds(5),
  refreshAssignmentsInterval: Duration.seconds(1),
  runnerHealthCheckInterval: Duration.seconds(5),
  entityMessagePollInterval: Duration.seconds(5),
  // The wait for an entity's requests in flight before its scope closes; then its actor QUITs (QUIT_GRACE).
  entityTerminationTimeout: Duration.seconds(2)
} as const

/** Per-session TCP keepalives, so the server notices a dead node's host (not `idle_session_timeout`: see the top). */
const KEEPALIVES = "-c tcp_keepalives_idle=10 -c tcp_keepalives_interval=2 -c tcp_keepalives_count=3"

/** DATABASE_URL with the keepalive options added to any it already has. */
export const clusterDatabaseUrl = (url: string): string => {
  const parsed = new URL(url)
  const options = parsed.searchParams.get("options")
  parsed.searchParams.set("options", options === null || options === "" ? KEEPALIVES : `${options} ${KEEPALIVES}`)
  return parsed.toString()
}

export const shardingConfig = (address: { readonly host: string; readonly port: number }) =>
  ShardingConfig.layer({
    runnerAddress: Option.some(RunnerAddress.make(address.host, address.port)),
    runnerListenAddress: Option.none(),
    ...SHARDING_TIMINGS
  })

/**
 * A node whose BELAY_SECRET_KEY cannot open the secrets already stored would connect nothing and corrupt what it
 * writes: it refuses to join. One sealed value of any kind is enough to tell (SecretBox binds the purpose).
 */
export const checkSecretKey = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const box = yield* SecretBox
  const rows = yield* sql<{ purpose: SecretPurpose; sealed: Uint8Array }>`
    (SELECT 'server-password' AS purpose, server_password_enc AS sealed FROM networks
      WHERE server_password_enc IS NOT NULL LIMIT 1)
    UNION ALL (SELECT 'sasl-password', sasl_password_enc FROM networks WHERE sasl_password_enc IS NOT NULL LIMIT 1)
    UNION ALL (SELECT 'channel-key', key_enc FROM channels WHERE key_enc IS NOT NULL LIMIT 1)
    UNION ALL (SELECT 'e2e-key', e2e_key_enc FROM buffers WHERE e2e_key_enc IS NOT NULL LIMIT 1)`.pipe(
    Effect.mapError((e) => new ClusterStartupError({ message: `could not read the stored secrets: ${e.message}` }))
  )
  for (const row of rows) {
    const opened = yield* Effect.try(() => box.open(row.purpose, row.sealed)).pipe(Effect.either)
    if (opened._tag === "Left") {
      return yield* new ClusterStartupError({
        message: "BELAY_SECRET_KEY cannot read the secrets already stored in this database; every node of a cluster " +
          "must use the same BELAY_SECRET_KEY"
      })
    }
  }
})

/**
 * Sharding for this node (Sharding | Runners | MessageStorage), after the secret key check. Needs the application's
 * database and SecretBox for the check only; the cluster itself runs on its own pool.
 */
export const ClusterRunnerLive = (settings: AppSettings, address: { readonly host: string; readonly port: number }) =>
  Layer.unwrapScoped(
    Effect.gen(function*() {
      if (Option.isNone(settings.databaseUrl)) {
        return yield* new ClusterStartupError({ message: "BELAY_CLUSTER_ADDRESS requires DATABASE_URL" })
      }
      yield* checkSecretKey
      const database = PgClient.layer({
        url: Redacted.make(clusterDatabaseUrl(Redacted.value(settings.databaseUrl.value))),
        maxConnections: 4,
        applicationName: "belay-cluster"
      })
      const clientProtocol = NodeClusterSocket.layerClientProtocol
      return Layer.provide(SocketRunner.layer, [NodeClusterSocket.layerSocketServer, clientProtocol]).pipe(
        Layer.provide(RunnerHealth.layerPing.pipe(Layer.provide(Runners.layerRpc), Layer.provide(clientProtocol))),
        Layer.provideMerge(Layer.orDie(SqlMessageStorage.layer)),
        // Watched: a failed lock operation drops every lock of the node (ShardLockWatch.ts), and the fence must know.
        Layer.provideMerge(ShardLockWatchLive.pipe(Layer.provide(Layer.orDie(SqlRunnerStorage.layer)))),
        Layer.provide(shardingConfig(address)),
        Layer.provide(RpcSerialization.layerMsgPack),
        Layer.provide(Layer.orDie(database))
      )
    })
  )
