/**
 * PasskeyCeremonies owns the two WebAuthn ceremonies (W3C WebAuthn Level 3 §7) through
 * `@simplewebauthn/server`: registering a passkey from Settings > Passkeys, and signing in
 * with one on `/login` or the authorization page — or, signed in already, proving it is the
 * member again before deleting the account (Settings › Your data; the account's passkeys
 * offered by id, the challenge bound to the session).
 *
 * The relying party is this server's issuer (Issuer.ts: PUBLIC_BASE_URL, else the request's
 * host): its host name is the RP ID and the issuer itself the only expected origin (§7.1
 * steps 9 and 13). Every ceremony uses a challenge from WebAuthnChallenges, taken once;
 * user verification is required on both sides (options `userVerification: "required"`,
 * and the UV flag checked, §7.1 step 15); passkeys are discoverable (`residentKey:
 * "required"`), so sign-in asks for no name and reveals nothing about which accounts exist
 * or have passkeys. The signature counter must grow (§7.2 step 22; Passkeys.recordUse).
 * docs/decisions/web.md, "Passkeys".
 *
 * A failed sign-in says nothing about why: every reason is one `None` to the caller (and
 * one log line with the reason for the operator). Stateless apart from its stores; safe to
 * call concurrently.
 */
import type * as WebAuthn from "@simplewebauthn/server"
import type { PublicKeyCredentialCreationOptionsJSON, PublicKeyCredentialRequestOptionsJSON } from "@simplewebauthn/server"
import { Data, Effect, Either, Option } from "effect"
import type { AuthenticationResponse, RegistrationResponse } from "../../schema/MemberApi.js"
import { Passkeys, type StoredPasskey } from "./Passkeys.js"
import { constantTimeEqual } from "./Tokens.js"
import { WebAuthnChallenges, WebAuthnChallengeLimits } from "./WebAuthnChallenges.js"

// The library (with its ASN.1 and X.509 dependencies) is loaded at the first ceremony, not at start: evaluated at
// start it held some 3 MiB of an idle server that may never see a passkey (bench/results/memory-breakdown.md "Idle on
// Node 24, second pass"). Node caches the module after the first import.
const webAuthn = () => import("@simplewebauthn/server")
const generateAuthenticationOptions: typeof WebAuthn.generateAuthenticationOptions = (options) =>
  webAuthn().then((w) => w.generateAuthenticationOptions(options))
const generateRegistrationOptions: typeof WebAuthn.generateRegistrationOptions = (options) =>
  webAuthn().then((w) => w.generateRegistrationOptions(options))
const verifyAuthenticationResponse: typeof WebAuthn.verifyAuthenticationResponse = (options) =>
  webAuthn().then((w) => w.verifyAuthenticationResponse(options))
const verifyRegistrationResponse: typeof WebAuthn.verifyRegistrationResponse = (options) =>
  webAuthn().then((w) => w.verifyRegistrationResponse(options))

export const RELYING_PARTY_NAME = "Belay"

/** Why a registration was refused; shown to the member who is adding the passkey. */
export class PasskeyNotRegistered extends Data.TaggedError("PasskeyNotRegistered")<{ readonly reason: string }> {}

/** The RP ID and origin of an issuer (an origin without a path, Issuer.ts). */
export const relyingParty = (issuer: string) => ({ id: new URL(issuer).hostname, origin: issuer })

/** The challenge a response was made for (its clientDataJSON, §5.8.1), or undefined when unreadable. */
const challengeOf = (clientDataJSON: string): string | undefined => {
  try {
    const parsed: unknown = JSON.parse(Buffer.from(clientDataJSON, "base64url").toString("utf8"))
    if (typeof parsed !== "object" || parsed === null || !("challenge" in parsed)) return undefined
    return typeof parsed.challenge === "string" ? parsed.challenge : undefined
  } catch {
    return undefined
  }
}

export interface PasskeySignIn {
  readonly accountId: number
  readonly passkeyId: number
}

export class PasskeyCeremonies extends Effect.Service<PasskeyCeremonies>()("belay/PasskeyCeremonies", {
  effect: Effect.gen(function*() {
    const passkeys = yield* Passkeys
    const challenges = yield* WebAuthnChallenges

    /**
     * Options for `navigator.credentials.create()`, for a member signed in with session `sessionId`; QuotaExceeded
     * (no challenge issued) when the account already holds its `passkeys` limit (docs/decisions/account-limits.md).
     */
    const registrationOptions = Effect.fn("PasskeyCeremonies.registrationOptions")(function*(
      issuer: string,
      member: { readonly accountId: number; readonly accountName: string; readonly sessionId: number },
      passkeyName: string
    ) {
      yield* passkeys.roomFor(member.accountId)
      const rp = relyingParty(issuer)
      const userHandle = yield* passkeys.userHandleFor(member.accountId)
      const existing = yield* passkeys.credentialIdsOf(member.accountId)
      const challenge = yield* challenges.issue({
        _tag: "Register",
        accountId: member.accountId,
        sessionId: member.sessionId,
        passkeyName,
        userHandle: userHandle.toString("base64url")
      })
      return yield* Effect.promise((): Promise<PublicKeyCredentialCreationOptionsJSON> =>
        generateRegistrationOptions({
          rpName: RELYING_PARTY_NAME,
          rpID: rp.id,
          userName: member.accountName,
          userDisplayName: member.accountName,
          userID: new Uint8Array(userHandle),
          // Bytes, not a string: the library would UTF-8 encode a string, and the browser
          // echoes the base64url of these bytes, which is the key WebAuthnChallenges holds.
          challenge: new Uint8Array(Buffer.from(challenge, "base64url")),
          timeout: WebAuthnChallengeLimits.promptTimeoutMs,
          attestationType: "none",
          excludeCredentials: existing.map((c) => ({ id: c.credentialId.toString("base64url"), transports: [...c.transports] })),
          authenticatorSelection: { residentKey: "required", requireResidentKey: true, userVerification: "required" }
        })
      )
    })

    /** Verifies a registration and stores the passkey under the name given with the options. */
    const register = Effect.fn("PasskeyCeremonies.register")(function*(
      issuer: string,
      member: { readonly accountId: number; readonly sessionId: number },
      response: RegistrationResponse
    ) {
      const refuse = (reason: string) => Effect.fail(new PasskeyNotRegistered({ reason }))
      const challenge = challengeOf(response.response.clientDataJSON)
      const purpose = challenge === undefined ? Option.none() : yield* challenges.take(challenge)
      if (challenge === undefined || Option.isNone(purpose) || purpose.value._tag !== "Register") {
        return yield* refuse("the passkey prompt expired; try again")
      }
      const pending = purpose.value
      if (pending.accountId !== member.accountId || pending.sessionId !== member.sessionId) {
        return yield* refuse("the passkey prompt belongs to another sign-in; try again")
      }
      const rp = relyingParty(issuer)
      const verified = yield* Effect.either(Effect.tryPromise(() =>
        verifyRegistrationResponse({
          response,
          expectedChallenge: challenge,
          expectedOrigin: rp.origin,
          expectedRPID: rp.id,
          requireUserVerification: true
        })
      ))
      if (Either.isLeft(verified) || !verified.right.verified) {
        yield* Effect.logInfo("passkey registration refused").pipe(
          Effect.annotateLogs({ accountId: member.accountId, cause: Either.isLeft(verified) ? String(verified.left.error) : "not verified" })
        )
        return yield* refuse("the passkey could not be verified")
      }
      const credential = verified.right.registrationInfo.credential
      return yield* passkeys.add({
        accountId: member.accountId,
        name: pending.passkeyName,
        credentialId: Buffer.from(credential.id, "base64url"),
        publicKey: Buffer.from(credential.publicKey),
        signCount: credential.counter,
        transports: credential.transports ?? response.response.transports ?? [],
        userHandle: Buffer.from(pending.userHandle, "base64url")
      }).pipe(Effect.catchTag("PasskeyExists", () => refuse("this passkey is already registered")))
    })

    /** Options for `navigator.credentials.get()`: no allowCredentials, the authenticator offers its passkeys. */
    const signInOptions = Effect.fn("PasskeyCeremonies.signInOptions")(function*(issuer: string) {
      const challenge = yield* challenges.issue({ _tag: "SignIn" })
      return yield* Effect.promise((): Promise<PublicKeyCredentialRequestOptionsJSON> =>
        generateAuthenticationOptions({
          rpID: relyingParty(issuer).id,
          challenge: new Uint8Array(Buffer.from(challenge, "base64url")),
          timeout: WebAuthnChallengeLimits.promptTimeoutMs,
          userVerification: "required"
        })
      )
    })

    /**
     * The checks after the challenge (§7.2 steps 6 onwards): the signature by the stored credential over this
     * challenge, origin and RP ID, user verification, and a counter that grows (recorded). Undefined when accepted,
     * else the reason.
     */
    const verifyAssertion = (issuer: string, challenge: string, passkey: StoredPasskey, response: AuthenticationResponse) =>
      Effect.gen(function*() {
        const rp = relyingParty(issuer)
        const verified = yield* Effect.either(Effect.tryPromise(() =>
          verifyAuthenticationResponse({
            response,
            expectedChallenge: challenge,
            expectedOrigin: rp.origin,
            expectedRPID: rp.id,
            credential: {
              id: passkey.credentialId.toString("base64url"),
              publicKey: new Uint8Array(passkey.publicKey),
              counter: passkey.signCount,
              transports: [...passkey.transports]
            },
            requireUserVerification: true
          })
        ))
        if (Either.isLeft(verified) || !verified.right.verified) {
          return Either.isLeft(verified) ? String(verified.left.error) : "signature not verified"
        }
        if (!(yield* passkeys.recordUse(passkey.id, verified.right.authenticationInfo.newCounter))) {
          return "signature counter did not grow"
        }
        return undefined
      })

    /**
     * Verifies an assertion (§7.2). Some(the account) or None — whatever went wrong. When the
     * credential is known, its account is returned alongside for the failure limit.
     */
    const signIn = Effect.fn("PasskeyCeremonies.signIn")(function*(issuer: string, response: AuthenticationResponse) {
      const refused = (reason: string, accountId?: number) =>
        Effect.logInfo("passkey sign-in refused").pipe(
          Effect.annotateLogs({ reason, ...(accountId === undefined ? {} : { accountId }) }),
          Effect.as({ result: Option.none<PasskeySignIn>(), accountId })
        )
      const challenge = challengeOf(response.response.clientDataJSON)
      const purpose = challenge === undefined ? Option.none() : yield* challenges.take(challenge)
      if (challenge === undefined || Option.isNone(purpose) || purpose.value._tag !== "SignIn") {
        return yield* refused("unknown, used or expired challenge")
      }
      const stored = yield* passkeys.findByCredentialId(Buffer.from(response.rawId, "base64url"))
      if (Option.isNone(stored)) return yield* refused("unknown credential")
      const passkey = stored.value
      // §7.2 step 6: the user was not identified before the ceremony, so the response must
      // name the credential's owner by its user handle.
      const userHandle = response.response.userHandle
      if (userHandle === undefined || !constantTimeEqual(userHandle, passkey.userHandle.toString("base64url"))) {
        return yield* refused("user handle does not match the credential", passkey.accountId)
      }
      const failed = yield* verifyAssertion(issuer, challenge, passkey, response)
      if (failed !== undefined) return yield* refused(failed, passkey.accountId)
      return { result: Option.some<PasskeySignIn>({ accountId: passkey.accountId, passkeyId: passkey.id }), accountId: passkey.accountId }
    })

    /**
     * Options for `navigator.credentials.get()` when a signed-in member proves it is them again (Settings › Delete
     * account, docs/decisions/leaving.md): the account's own passkeys in `allowCredentials` (the user is identified
     * before the ceremony, §7.2), the challenge bound to this session. None when the account has no passkey.
     */
    const reauthenticationOptions = Effect.fn("PasskeyCeremonies.reauthenticationOptions")(function*(
      issuer: string,
      member: { readonly accountId: number; readonly sessionId: number }
    ) {
      const existing = yield* passkeys.credentialIdsOf(member.accountId)
      if (existing.length === 0) return Option.none<PublicKeyCredentialRequestOptionsJSON>()
      const challenge = yield* challenges.issue({ _tag: "Reauthenticate", accountId: member.accountId, sessionId: member.sessionId })
      return Option.some(yield* Effect.promise((): Promise<PublicKeyCredentialRequestOptionsJSON> =>
        generateAuthenticationOptions({
          rpID: relyingParty(issuer).id,
          challenge: new Uint8Array(Buffer.from(challenge, "base64url")),
          timeout: WebAuthnChallengeLimits.promptTimeoutMs,
          userVerification: "required",
          allowCredentials: existing.map((c) => ({ id: c.credentialId.toString("base64url"), transports: [...c.transports] }))
        })
      ))
    })

    /**
     * Verifies a re-authentication (§7.2 with the user identified first): the challenge was issued for this account
     * and session, the credential is one of the account's passkeys (and the user handle, when the authenticator
     * gives one, its own), and the assertion verifies. True when accepted; every refusal is logged with its reason.
     */
    const reauthenticate = Effect.fn("PasskeyCeremonies.reauthenticate")(function*(
      issuer: string,
      member: { readonly accountId: number; readonly sessionId: number },
      response: AuthenticationResponse
    ) {
      const refused = (reason: string) =>
        Effect.logInfo("passkey re-authentication refused").pipe(
          Effect.annotateLogs({ reason, accountId: member.accountId }),
          Effect.as(false)
        )
      const challenge = challengeOf(response.response.clientDataJSON)
      const purpose = challenge === undefined ? Option.none() : yield* challenges.take(challenge)
      if (challenge === undefined || Option.isNone(purpose) || purpose.value._tag !== "Reauthenticate") {
        return yield* refused("unknown, used or expired challenge")
      }
      if (purpose.value.accountId !== member.accountId || purpose.value.sessionId !== member.sessionId) {
        return yield* refused("challenge issued to another sign-in")
      }
      const stored = yield* passkeys.findByCredentialId(Buffer.from(response.rawId, "base64url"))
      if (Option.isNone(stored) || stored.value.accountId !== member.accountId) {
        return yield* refused("not a passkey of this account")
      }
      const passkey = stored.value
      // §7.2 step 6: with the user identified, the credential must be theirs, and a user handle, if given, theirs too.
      const userHandle = response.response.userHandle
      if (userHandle !== undefined && !constantTimeEqual(userHandle, passkey.userHandle.toString("base64url"))) {
        return yield* refused("user handle does not match the credential")
      }
      const failed = yield* verifyAssertion(issuer, challenge, passkey, response)
      return failed === undefined ? true : yield* refused(failed)
    })

    return { registrationOptions, register, signInOptions, signIn, reauthenticationOptions, reauthenticate } as const
  }),
  dependencies: [Passkeys.Default, WebAuthnChallenges.Default]
}) {}
