/**
 * RevocationChannel is the wire between Belay processes that share one database: PostgreSQL's LISTEN/NOTIFY on the
 * channel `belay_revocations` (docs/decisions.md, "Revocation is immediate across processes").
 *
 * - A writer NOTIFYs inside the very transaction that ends the credentials (`notifyStatements`), so PostgreSQL
 *   delivers the notice exactly when the change commits, and never for a rollback.
 * - Every process LISTENs on a connection of its own (`listenForever`), outside the pool: @effect/sql-pg's own
 *   `listen` swallows the connection's errors and never says it was lost, and a lost LISTEN must be noticed (while
 *   it is down, notices are lost, so the credential cache must not answer from memory).
 *
 * A payload is JSON: the sending process (`o`, a random id, so a process can skip its own notices, which it has
 *   already handled) and either revoked credentials (`r`: [credential, row id, account id]) or an account whose
 *   status changed (`a`). PostgreSQL caps a payload below 8000 bytes, so a long list is sent in several notices.
 *
 * Concurrency: `listenForever` runs in one fiber; `onPayload` is called synchronously from the socket's data
 *   callback, in the order PostgreSQL sent the notices.
 */
import type { PgClient } from "@effect/sql-pg"
import { Cause, Clock, Deferred, Duration, Effect, Either, Exit, Redacted, Schema } from "effect"
import pg from "pg"
import type { CredentialRevoked } from "./CredentialRevocations.js"

export const CHANNEL = "belay_revocations"

/** Entries per notice: ~30 bytes each, well under PostgreSQL's 8000-byte payload limit. */
const PER_NOTICE = 150
/** Reconnect backoff of the LISTEN connection. */
const RETRY_FIRST = Duration.millis(100)
const RETRY_MAX = Duration.seconds(5)

const Credential = Schema.Literal("api-token", "oauth", "session")
const Payload = Schema.parseJson(Schema.Struct({
  o: Schema.String,
  r: Schema.optional(Schema.Array(Schema.Tuple(Credential, Schema.Int, Schema.Int))),
  a: Schema.optional(Schema.Int)
}))
const decodePayload = Schema.decodeUnknownEither(Payload)

export type Notice =
  | { readonly _tag: "Revoked"; readonly origin: string; readonly revoked: ReadonlyArray<CredentialRevoked> }
  | { readonly _tag: "AccountChanged"; readonly origin: string; readonly accountId: number }

/** The payloads announcing `revoked` (several when the list is long). */
export const revokedPayloads = (origin: string, revoked: ReadonlyArray<CredentialRevoked>): ReadonlyArray<string> => {
  const payloads: Array<string> = []
  for (let i = 0; i < revoked.length; i += PER_NOTICE) {
    const r = revoked.slice(i, i + PER_NOTICE).map((e) => [e.credential, e.tokenId, e.accountId])
    payloads.push(JSON.stringify({ o: origin, r }))
  }
  return payloads
}

export const accountPayload = (origin: string, accountId: number): string => JSON.stringify({ o: origin, a: accountId })

/** A notice, or a message saying why the payload is not one. */
export const parseNotice = (payload: string): Either.Either<Notice, string> =>
  Either.flatMap(Either.mapLeft(decodePayload(payload), (e) => e.message), (p): Either.Either<Notice, string> => {
    if (p.r !== undefined) {
      return Either.right({
        _tag: "Revoked",
        origin: p.o,
        revoked: p.r.map(([credential, tokenId, accountId]) => ({ credential, tokenId, accountId }))
      })
    }
    if (p.a !== undefined) return Either.right({ _tag: "AccountChanged", origin: p.o, accountId: p.a })
    return Either.left("neither revocations nor an account")
  })

/** The settings of the pool (Database.ts), for a connection of its own. */
const clientConfig = (config: PgClient.PgClientConfig): pg.ClientConfig => ({
  connectionString: config.url ? Redacted.value(config.url) : undefined,
  host: config.host,
  port: config.port,
  database: config.database,
  user: config.username,
  password: config.password ? Redacted.value(config.password) : undefined,
  ssl: config.ssl,
  application_name: "belay-revocations",
  // A peer that vanishes without a FIN (a cut network) is noticed by TCP keepalive; the cache's TTL covers the
  // time until then.
  keepAlive: true
})

export interface ListenHandlers {
  /** A notice's payload; called synchronously as the connection reads it. */
  readonly onPayload: (payload: string) => void
  /** LISTEN is in effect: every notice committed from now on will arrive. */
  readonly onListening: () => void
  /** The connection failed or was lost: notices may be missed until `onListening` again. */
  readonly onLost: (reason: string) => void
}

/** One LISTEN connection, until it fails. */
const session = (config: PgClient.PgClientConfig, handlers: ListenHandlers) =>
  Effect.scoped(Effect.gen(function*() {
    const lost = yield* Deferred.make<never, Error>()
    const fail = (error: Error) => Deferred.unsafeDone(lost, Exit.fail(error))
    const client = yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: async () => {
          const client = new pg.Client(clientConfig(config))
          // An 'error' event without a listener would throw out of the socket callback.
          client.on("error", fail)
          client.on("end", () => fail(new Error("the connection ended")))
          client.on("notification", (message) => {
            if (message.channel === CHANNEL && message.payload !== undefined) handlers.onPayload(message.payload)
          })
          await client.connect()
          return client
        },
        catch: (cause) => cause instanceof Error ? cause : new Error(String(cause))
      }),
      (client) =>
        Effect.promise(() => client.end().catch(() => undefined)).pipe(Effect.timeoutOption(Duration.seconds(1)))
    )
    yield* Effect.tryPromise({
      try: () => client.query(`LISTEN ${CHANNEL}`),
      catch: (cause) => cause instanceof Error ? cause : new Error(String(cause))
    })
    handlers.onListening()
    return yield* Deferred.await(lost)
  }))

/**
 * LISTENs for as long as the scope lives, reconnecting after 100 ms doubling to 5 s. Waits on the real clock: a
 * test that stands the clock still must not stop a reconnect.
 */
export const listenForever = (config: PgClient.PgClientConfig, handlers: ListenHandlers): Effect.Effect<never> =>
  Effect.suspend(() => {
    let delay = RETRY_FIRST
    let listened = false
    const tracked: ListenHandlers = {
      ...handlers,
      onListening: () => {
        listened = true
        handlers.onListening()
      }
    }
    const once = Effect.gen(function*() {
      listened = false
      const exit = yield* Effect.exit(session(config, tracked))
      const error = Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
      const reason = error instanceof Error ? error.message : String(error)
      handlers.onLost(reason)
      if (listened) delay = RETRY_FIRST
      yield* Effect.logWarning("the revocation LISTEN connection was lost; reconnecting").pipe(
        Effect.annotateLogs({ reason, retryInMs: Duration.toMillis(delay) })
      )
      yield* Effect.sleep(delay).pipe(Effect.withClock(Clock.make()))
      delay = Duration.min(Duration.times(delay, 2), RETRY_MAX)
    })
    return Effect.forever(once)
  })
