/**
 * Authenticator owns the one question every request to /mcp asks: whose bearer token is
 * this, and what may it do? It owns no table: API tokens (scope fixed at creation) are
 * ApiTokens', OAuth access tokens (always read-write, the interface, "Authentication" 3)
 * are OAuthTokens', and the account's status is Accounts' — a paused account is narrowed
 * to read (the interface, "Authentication" 5).
 *
 * Every request is authenticated again; answers are cached briefly by CredentialCache,
 * which drops a credential as soon as its revocation is announced, so a revocation still
 * takes effect at once. Each success is handed to CredentialUsage ("last used" in
 * Settings, kept in memory). Stateless itself; safe to call concurrently.
 */
import { Effect, Exit, Option } from "effect"
import { Accounts } from "./Accounts.js"
import { ApiTokens, type TokenScope } from "./ApiTokens.js"
import { CredentialCache } from "./CredentialCache.js"
import { CredentialUsage } from "./CredentialUsage.js"
import { OAuthTokens } from "./OAuthTokens.js"
import { API_TOKEN_PREFIX, sha256Base64 } from "./Tokens.js"

export interface Principal {
  readonly accountId: number
  /** The table the token lives in; what CredentialRevocations and CredentialCache key on. */
  readonly credential: "api-token" | "oauth"
  /** The row id of the token in its table (`api_tokens` or `oauth_tokens`, per `credential`). */
  readonly tokenId: number
  /**
   * For an `oauth` credential: `app`, issued to an app, or `password`, a password-sign-in
   * token of `POST /api/auth/login/token` (docs/decisions/web.md). Null for API tokens.
   */
  readonly oauthKind: "app" | "password" | null
  /** The app an `app` token was issued to; null otherwise. */
  readonly clientId: string | null
  /** The scope the token was granted. */
  readonly grantedScope: TokenScope
  readonly paused: boolean
  /** What the request may do now: read when the account is paused. */
  readonly scope: TokenScope
}

/** Whether an Effect is already a successful Exit (what Effect.succeed makes). */
const isSuccessNow = <A, E>(self: Effect.Effect<A, E>): self is Effect.Effect<A, E> & Exit.Success<A, E> =>
  Exit.isExit(self) && Exit.isSuccess(self)

/** Bearer tokens are base64url-ish opaque strings; anything else is not worth a query. */
const PLAUSIBLE_TOKEN = /^[\x21-\x7e]{16,512}$/

export class Authenticator extends Effect.Service<Authenticator>()("belay/Authenticator", {
  effect: Effect.gen(function*() {
    const apiTokens = yield* ApiTokens
    const oauthTokens = yield* OAuthTokens
    const accounts = yield* Accounts
    const cache = yield* CredentialCache
    const usage = yield* CredentialUsage

    type Credential = Pick<Principal, "credential" | "tokenId" | "oauthKind" | "clientId" | "accountId" | "grantedScope">

    const oauthToken = (hash: Buffer) =>
      Effect.map(oauthTokens.authenticate(hash), Option.map((t): Credential => ({
        credential: "oauth",
        tokenId: t.tokenId,
        oauthKind: t.kind,
        clientId: t.clientId,
        accountId: t.accountId,
        grantedScope: "read-write"
      })))

    const apiToken = (hash: Buffer) =>
      Effect.map(apiTokens.authenticate(hash), Option.map((t): Credential => ({
        credential: "api-token",
        tokenId: t.tokenId,
        oauthKind: null,
        clientId: null,
        accountId: t.accountId,
        grantedScope: t.scope
      })))

    /**
     * Every API token is minted with its prefix (Tokens.ts), so a token without it is
     * looked up only as an OAuth token; one with it is an API token first (an OAuth token
     * may carry a hosted `<name>~` prefix that happens to start the same way).
     */
    const credentialOf = (raw: string, hash: Buffer): Effect.Effect<Option.Option<Credential>> =>
      raw.startsWith(API_TOKEN_PREFIX)
        ? Effect.flatMap(apiToken(hash), (found) => (Option.isSome(found) ? Effect.succeed(found) : oauthToken(hash)))
        : oauthToken(hash)

    /** The credential behind `raw`, whose SHA-256 is `key` in base64, from the database. */
    const lookup = (raw: string, key: string) =>
      Effect.gen(function*() {
        const credential = yield* credentialOf(raw, Buffer.from(key, "base64"))
        if (Option.isNone(credential)) return Option.none<Principal>()
        const account = yield* accounts.findById(credential.value.accountId)
        if (Option.isNone(account)) return Option.none<Principal>()
        const paused = account.value.status === "paused"
        return Option.some<Principal>({
          ...credential.value,
          paused,
          scope: paused ? "read" : credential.value.grantedScope
        })
      })

    const recordUse = (principal: Option.Option<Principal>) => {
      if (Option.isSome(principal)) usage.record(principal.value.credential, principal.value.tokenId)
      return principal
    }

    /**
     * The token hash of the last `Authorization` value each connection presented. A client sends the same header on
     * every request of a connection, and hashing it again was a visible share of an answer from memory; the hash only
     * finds the cache entry, which CredentialCache still checks against revocations on every request. Held as long as
     * the connection (a WeakMap keyed by its socket), in memory only, like the request that carried it.
     */
    const lastKeys = new WeakMap<object, { readonly authorization: string; readonly raw: string; readonly key: string }>()

    const keyOf = (authorization: string | undefined, connection: object | undefined): readonly [string, string] | undefined => {
      if (authorization === undefined) return undefined
      const known = connection === undefined ? undefined : lastKeys.get(connection)
      if (known !== undefined && known.authorization === authorization) return [known.raw, known.key]
      const raw = authorization.match(/^Bearer +(\S+) *$/i)?.[1]
      if (!raw || !PLAUSIBLE_TOKEN.test(raw)) return undefined
      const key = sha256Base64(raw)
      if (connection !== undefined) lastKeys.set(connection, { authorization, raw, key })
      return [raw, key]
    }

    /**
     * `authenticate` as of the moment it is called, not when the Effect is run: a credential cached and not revoked
     * is answered with an Exit (Effect.succeed), which /mcp sends without a fiber (docs/decisions/http-and-mcp.md
     * "Answers from memory are sent without a fiber"). Only for a caller that runs the Effect at once. `connection`
     * (the request's socket), when given, lets a connection's repeated header skip the hash (`lastKeys`).
     */
    const authenticateNow = (authorization: string | undefined, connection?: object): Effect.Effect<Option.Option<Principal>> => {
      const found = keyOf(authorization, connection)
      if (found === undefined) return Effect.succeed(Option.none())
      const [raw, key] = found
      const answer = cache.getOrLookup(key, () => lookup(raw, key))
      return isSuccessNow(answer) ? Exit.succeed(recordUse(answer.value)) : Effect.map(answer, recordUse)
    }

    /** The principal behind an `Authorization` header value, if it is a live credential; read when run. */
    const authenticate = (authorization: string | undefined): Effect.Effect<Option.Option<Principal>> =>
      Effect.suspend(() => authenticateNow(authorization))

    return { authenticate, authenticateNow } as const
  }),
  dependencies: [ApiTokens.Default, OAuthTokens.Default, Accounts.Default, CredentialCache.Default, CredentialUsage.Default]
}) {}
