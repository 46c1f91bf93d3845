/**
 * ClientPreferences owns `client_preferences` (migration 0013): the web client's settings that follow the member to
 * another browser — one small JSON document per account (schema/Preferences.ts: `theme` light|dark|system,
 * `linkPreviews` default true, and a few keys more; at most CLIENT_DOCUMENT_BYTES), checked before it is stored, so a
 * bad one changes nothing (docs/contract.md "Preferences"). An account without a row has the default document.
 *
 * Every stored change is announced on `changes` and becomes a `client-preferences` frame for every open tab of the
 * account (MemberEvents.publish), so another browser switches theme at once; in a cluster, a change stored on another
 * node arrives through `changedElsewhere` (ClusterEvents.ts). The row goes with the account (AccountData.ts).
 *
 * Concurrency rule: state in PostgreSQL; an update is one transaction that holds the account's row, so two updates of
 * one account merge one after the other and neither loses the other's keys.
 */
import { SqlClient } from "@effect/sql"
import { Data, Effect, PubSub, Queue } from "effect"
import { type ClientDocument, mergeClientDocument, readClientDocument, DEFAULT_CLIENT_DOCUMENT } from "../../schema/Preferences.js"
import { MemberEvents } from "../events/MemberEvents.js"

/** The document was refused (schema/Preferences.ts mergeClientDocument says why): nothing changed. */
export class InvalidClientDocument extends Data.TaggedError("InvalidClientDocument")<{ readonly message: string }> {}

export interface ClientDocumentChange {
  readonly accountId: number
  readonly document: ClientDocument
}

export class ClientPreferences extends Effect.Service<ClientPreferences>()("belay/ClientPreferences", {
  scoped: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const events = yield* MemberEvents
    const changes = yield* PubSub.unbounded<ClientDocumentChange>()

    /** The account's document; the default when it has none. */
    const get = (accountId: number): Effect.Effect<ClientDocument> =>
      sql<{ document: unknown }>`SELECT document FROM client_preferences WHERE account_id = ${accountId}`.pipe(
        Effect.orDie,
        Effect.map((rows) => (rows[0] === undefined ? DEFAULT_CLIENT_DOCUMENT : readClientDocument(rows[0].document)))
      )

    /** Merges `patch` (the body of `PUT /api/preferences/client`) over the stored document; the document as stored. */
    const update = (accountId: number, patch: unknown): Effect.Effect<ClientDocument, InvalidClientDocument> =>
      Effect.gen(function*() {
        const stored = yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql`SELECT id FROM accounts WHERE id = ${accountId} FOR NO KEY UPDATE`
          const rows = yield* sql<{ document: unknown }>`SELECT document FROM client_preferences WHERE account_id = ${accountId}`
          const before = rows[0] === undefined ? DEFAULT_CLIENT_DOCUMENT : readClientDocument(rows[0].document)
          const merged = mergeClientDocument(before, patch)
          if (!merged.ok) return yield* new InvalidClientDocument({ message: merged.reason })
          const json = JSON.stringify(merged.document)
          yield* sql`
            INSERT INTO client_preferences (account_id, document) VALUES (${accountId}, ${json}::jsonb)
            ON CONFLICT (account_id) DO UPDATE SET document = EXCLUDED.document, updated_at = now()`
          return merged.document
        })).pipe(Effect.catchTag("SqlError", Effect.die))
        yield* PubSub.publish(changes, { accountId, document: stored })
        return stored
      })

    /**
     * A change stored on another node (ClusterEvents.ts, which checked it with readClientDocument), announced here as
     * if made here: this very object, which ClusterEvents knows not to send back.
     */
    const changedElsewhere = (change: ClientDocumentChange): Effect.Effect<void> => Effect.asVoid(PubSub.publish(changes, change))

    const heard = yield* PubSub.subscribe(changes)
    yield* Queue.take(heard).pipe(
      Effect.flatMap((c) => Effect.sync(() => events.publish(c.accountId, [{ type: "client-preferences", preferences: c.document }]))),
      Effect.forever,
      Effect.forkScoped
    )

    return { get, update, changes, changedElsewhere } as const
  }),
  dependencies: [MemberEvents.Default]
}) {}
