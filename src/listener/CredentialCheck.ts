/**
 * CredentialCheck: a signed-in IRC client lasts only as long as what it signed in with (docs/contract.md "The IRC
 * client listener"), as the browser's WebSocket does (it closes with 4001): a revoked API or OAuth token (revocation,
 * logout, Authorized apps, account recovery) ends the connection with `ERROR`; a recovery ends what signed in with
 * the password; an account paused becomes read-only at once (`FAIL … READ_ONLY` on writes) and writable again when
 * resumed, unless its token is a read token, and the client is told either way by a NOTICE from `belay`; an account gone ends it. The listener hears of these on
 * CredentialRevocations (IrcListener.ts) and hands each session what concerns it; when the LISTEN connection was lost
 * and is back, and once just after a session registers (what happened while it signed in), the session judges its
 * credential again from the database.
 *
 * Concurrency rule: runs on the connection's session fiber only.
 */
import { Effect, Option } from "effect"
import type { CredentialRevoked } from "../services/identity/CredentialRevocations.js"
import { type Downstream, SERVER_NAME, type SignedIn, write } from "./Downstream.js"
import type { ListenerDeps } from "./ListenerDeps.js"
import { ownLine } from "./MessageLines.js"
import { closeWith } from "./Registration.js"
import type { CredentialEvent } from "./SessionHub.js"

export type { CredentialEvent }

const REVOKED = "Your credential was revoked; sign in again"

/** Whether a revocation names the credential this client signed in with. */
const isOwn = (signedIn: SignedIn, revoked: CredentialRevoked) =>
  signedIn.credential.kind !== "password" && signedIn.credential.kind === revoked.credential &&
  signedIn.credential.tokenId === revoked.tokenId && signedIn.accountId === revoked.accountId

/** The account as it is now: ends the connection when it is gone or was recovered since a password sign-in. */
const judgeAccount = (deps: ListenerDeps, d: Downstream, signedIn: SignedIn) =>
  Effect.gen(function*() {
    const account = yield* deps.accounts.findById(signedIn.accountId)
    if (Option.isNone(account)) return void closeWith(d, "This account no longer exists")
    if (signedIn.credential.kind === "password") {
      const recovered = yield* deps.accounts.recoveredAt(signedIn.accountId)
      if (Option.isNone(recovered) || recovered.value !== signedIn.credential.recoveredAt) {
        return void closeWith(d, "The account was recovered; sign in with the new password")
      }
    }
    const granted = signedIn.credential.kind === "password" ? "read-write" : signedIn.credential.grantedScope
    const readOnly = account.value.status === "paused" || granted === "read"
    if (d.signedIn === undefined || readOnly === d.signedIn.readOnly) return
    d.signedIn = { ...d.signedIn, readOnly }
    // Told, so that the refusals that follow are no surprise (and the client knows when it may write again).
    write(d, ownLine(d.view, {
      source: { nick: SERVER_NAME },
      command: "NOTICE",
      params: [d.nick, readOnly ? "This account is paused: this connection only reads until it is resumed" : "This account is resumed: this connection may write again"]
    }))
  })

/** Whether the token this client signed in with is still live (after a lost LISTEN). */
const tokenLive = (deps: ListenerDeps, signedIn: SignedIn) => {
  const credential = signedIn.credential
  if (credential.kind === "password") return Effect.succeed(true)
  const live = credential.kind === "oauth" ? deps.oauthTokens.liveAmong([credential.tokenId]) : deps.apiTokens.liveAmong([credential.tokenId])
  return Effect.map(live, (ids) => ids.has(credential.tokenId))
}

export const onCredentialEvent = (deps: ListenerDeps, d: Downstream, event: CredentialEvent) =>
  Effect.gen(function*() {
    const signedIn = d.signedIn
    if (signedIn === undefined || d.closing) return
    switch (event._tag) {
      case "Revoked":
        if (isOwn(signedIn, event.revoked)) closeWith(d, REVOKED)
        return
      case "AccountChanged":
        return yield* judgeAccount(deps, d, signedIn)
      case "Recheck":
        if (!(yield* tokenLive(deps, signedIn))) return void closeWith(d, REVOKED)
        return yield* judgeAccount(deps, d, signedIn)
    }
  })
