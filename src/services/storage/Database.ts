/**
 * Database owns the connection to PostgreSQL and the schema migrations.
 *
 * - `DATABASE_URL` set: `@effect/sql-pg` against that server, pool of 10.
 * - unset: Belay's own PostgreSQL server (EmbeddedPostgres.ts) under `BELAY_DATA_DIR/pg`, reached over its Unix
 *   socket by the very same client, pool of 5 (the server's max_connections is sized for it). It starts before
 *   the migrations and stops after the pool has closed.
 *
 * Concurrency: the pool serialises nothing beyond PostgreSQL's own transactions; both modes are real PostgreSQL.
 *
 * Ids: int8 columns are parsed as JS numbers at this edge (ids and counts stay far
 * below 2^53), so the rest of the code and the JSON output see integers.
 */
// The module, not the package's index, which in the server bundle evaluates all it re-exports (src/cli/main.ts).
import * as NodeContext from "@effect/platform-node/NodeContext"
import { Migrator, SqlClient } from "@effect/sql"
import { PgClient, PgMigrator } from "@effect/sql-pg"
import { Effect, Layer, Option, Redacted } from "effect"
import pg from "pg"
import { AppConfig } from "../AppConfig.js"
import * as EmbeddedPostgres from "./EmbeddedPostgres.js"
import migration0001 from "./migrations/0001_init.js"
import migration0002 from "./migrations/0002_search_text_only.js"
import migration0003 from "./migrations/0003_member_web.js"
import migration0004 from "./migrations/0004_push_subscriptions.js"
import migration0005 from "./migrations/0005_read_markers.js"
import migration0006 from "./migrations/0006_message_batches.js"
import migration0007 from "./migrations/0007_client_deliveries.js"
import migration0008 from "./migrations/0008_vapid_keys.js"
import migration0009 from "./migrations/0009_message_batch_writers.js"
import migration0010 from "./migrations/0010_account_limits.js"
import migration0011 from "./migrations/0011_account_deletions.js"
import migration0012 from "./migrations/0012_oauth_resources_and_documents.js"
import migration0013 from "./migrations/0013_preferences.js"
import migration0014 from "./migrations/0014_uploads.js"
import migration0015 from "./migrations/0015_link_previews.js"
import migration0016 from "./migrations/0016_push_owners.js"
import migration0017 from "./migrations/0017_message_tags.js"
import migration0018 from "./migrations/0018_messages_by_sender.js"
import migration0019 from "./migrations/0019_redaction_order.js"

/** Ordered record of migrations; keys are `NNNN_name` (the migrator stores id and name). */
export const migrations = {
  "0001_init": migration0001,
  "0002_search_text_only": migration0002,
  "0003_member_web": migration0003,
  "0004_push_subscriptions": migration0004,
  "0005_read_markers": migration0005,
  "0006_message_batches": migration0006,
  "0007_client_deliveries": migration0007,
  "0008_vapid_keys": migration0008,
  "0009_message_batch_writers": migration0009,
  "0010_account_limits": migration0010,
  "0011_account_deletions": migration0011,
  "0012_oauth_resources_and_documents": migration0012,
  "0013_preferences": migration0013,
  "0014_uploads": migration0014,
  "0015_link_previews": migration0015,
  "0016_push_owners": migration0016,
  "0017_message_tags": migration0017,
  "0018_messages_by_sender": migration0018,
  "0019_redaction_order": migration0019
}

const INT8_OID = 20
const NUMERIC_OID = 1700

const types: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: "text" | "binary") => {
    if (oid === INT8_OID) return (value: string) => Number(value)
    if (oid === NUMERIC_OID) return (value: string) => Number(value)
    return format === "binary" ? pg.types.getTypeParser(oid, "binary") : pg.types.getTypeParser(oid, "text")
  }) as pg.CustomTypesConfig["getTypeParser"]
}

/** SqlClient (and PgClient) for the configured database, without running migrations. */
export const SqlLive: Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, unknown, AppConfig> = Layer.unwrapScoped(
  Effect.gen(function*() {
    const config = yield* AppConfig
    if (Option.isSome(config.databaseUrl)) {
      return PgClient.layer({ url: config.databaseUrl.value, maxConnections: 10, types, applicationName: "belay" })
    }
    const server = yield* EmbeddedPostgres.start({ dataDir: config.dataDir })
    // A server that dies under Belay would turn every request into an error until someone notices: Belay exits
    // non-zero instead, so its supervisor (systemd, Docker) restarts both. Nothing is lost that a graceful
    // shutdown could save: the history it would flush has nowhere to go.
    yield* server.exited.pipe(
      Effect.flatMap((reason) => Effect.logError(`${reason}; belay stops`)),
      Effect.zipRight(Effect.sync(() => process.exit(1))),
      Effect.forkScoped
    )
    return PgClient.layer({
      url: Redacted.make(server.url(server.database)),
      maxConnections: 5,
      // An idle connection is closed after 2 s (pg's default: 10 s). Each is a backend process (a few MB of its own,
      // and the shared buffers it touched mapped), and the 5-second jobs kept one alive for good: the one that had run
      // the migrations, with every table's caches. Reopening one over the socket costs a few milliseconds
      // (bench/results/memory-breakdown.md "Idle on Node 24").
      idleTimeout: "2 seconds",
      types,
      applicationName: "belay"
    })
  })
)

/** Runs pending migrations once at start-up; idempotent (applied ids are recorded). */
export const MigrationsLive = PgMigrator.layer({ loader: Migrator.fromRecord(migrations) }).pipe(
  Layer.provide(NodeContext.layer)
)

/** The database, migrated. Everything that touches SQL depends on this. */
export const DatabaseLive = MigrationsLive.pipe(Layer.provideMerge(SqlLive))
