/**
 * RevocationChannel: what a revocation notice says, on the channel `belay_revocations` that every Belay process on the
 * database LISTENs to (EventChannel.ts carries it; docs/decisions/secrets.md "Revocation is immediate across processes").
 *
 * A writer NOTIFYs inside the very transaction that ends the credentials (CredentialRevocations.commit), so PostgreSQL
 * delivers the notice exactly when the change commits, and never for a rollback.
 *
 * A payload is JSON: the sending process (`o`, a random id, so a process can skip its own notices, which it has
 *   already handled) and either revoked credentials (`r`: [credential, row id, account id]) or an account whose
 *   status changed (`a`). PostgreSQL caps a payload below 8000 bytes, so a long list is sent in several notices.
 *
 * Pure; no state.
 */
import { Either, Schema } from "effect"
import { REVOCATIONS_CHANNEL } from "../storage/EventChannel.js"

export const CHANNEL = REVOCATIONS_CHANNEL

/** One ended credential, as a notice names it and as CredentialRevocations announces it. */
export interface CredentialRevoked {
  readonly credential: "api-token" | "oauth" | "session"
  /** The row id in `api_tokens`, `oauth_tokens` or `browser_sessions`, according to `credential`. */
  readonly tokenId: number
  readonly accountId: number
}

/** Entries per notice: ~30 bytes each, well under PostgreSQL's 8000-byte payload limit. */
const PER_NOTICE = 150

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
