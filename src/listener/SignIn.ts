/**
 * SignIn: checks the secret an IRC client gives (SASL PLAIN or PASS) for an account, as the web's sign-in does and
 * under the same limiter (SignInLimiter: 10 failures per account or address in 10 minutes, shared with every other
 * way in). The secret is a read-write or read API token, an OAuth access token, or the account's password
 * (docs/contract.md "The IRC client listener"). A read token or a paused account signs in read-only; what the client
 * signed in with is kept (the token's row, or the account's last recovery) so that it ends when that credential does
 * (CredentialCheck.ts). The secret is never logged or kept.
 */
import { Effect, Either, Option } from "effect"
import type { SignedIn } from "./Downstream.js"
import type { ListenerDeps } from "./ListenerDeps.js"

export type SignInOutcome =
  | { readonly _tag: "Ok"; readonly signedIn: SignedIn }
  | { readonly _tag: "Invalid" }
  | { readonly _tag: "Limited" }

/** Tokens are printable ASCII of plausible length (Authenticator); anything else is only tried as a password. */
const PLAUSIBLE_TOKEN = /^[\x21-\x7e]{16,512}$/

export const signIn = (deps: ListenerDeps, accountName: string, secret: string, ipKey: string): Effect.Effect<SignInOutcome> =>
  Effect.gen(function*() {
    const attempt = { ipKey, account: accountName }
    if (Either.isLeft(yield* Effect.either(deps.limiter.check(attempt)))) return { _tag: "Limited" } as const
    const account = yield* deps.accounts.findByName(accountName)
    if (secret !== "") {
      if (Option.isSome(account) && PLAUSIBLE_TOKEN.test(secret)) {
        const principal = yield* deps.authenticator.authenticate(`Bearer ${secret}`)
        if (Option.isSome(principal) && principal.value.accountId === account.value.id) {
          const p = principal.value
          return {
            _tag: "Ok",
            signedIn: {
              accountId: account.value.id,
              accountName: account.value.name,
              credential: { kind: p.credential, tokenId: p.tokenId, grantedScope: p.grantedScope },
              readOnly: p.scope === "read"
            }
          } as const
        }
      }
      // Read before the password is checked: a recovery in between then shows as a change (CredentialCheck.ts).
      const recovered = Option.isSome(account) ? yield* deps.accounts.recoveredAt(account.value.id) : Option.none()
      // Checked whether or not the account exists: the same work either way (Accounts.verifyPassword).
      const verified = yield* deps.accounts.verifyPassword(accountName, secret)
      if (Option.isSome(verified) && Option.isSome(recovered)) {
        return {
          _tag: "Ok",
          signedIn: {
            accountId: verified.value.id,
            accountName: verified.value.name,
            credential: { kind: "password", recoveredAt: recovered.value },
            readOnly: verified.value.status === "paused"
          }
        } as const
      }
    }
    yield* deps.limiter.recordFailure(attempt)
    yield* Effect.logInfo("IRC client sign-in failed").pipe(Effect.annotateLogs({ account: accountName }))
    return { _tag: "Invalid" } as const
  })
