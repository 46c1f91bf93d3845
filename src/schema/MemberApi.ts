// The wire shapes of the member's browser surface (docs/decisions/web.md):
// the REST bodies of /api/auth/*, and the JSON a passkey ceremony exchanges with our pages'
// script — the W3C WebAuthn Level 3 JSON serialisation of a credential (§5.1.8
// `toJSON()`: RegistrationResponseJSON, AuthenticationResponseJSON), checked here before
// any verification looks at it. Pure; no state, safe from any fiber.
import { Schema } from "effect"

/** Fixed paths of the member's pages and REST routes. */
export const MemberPaths = {
  home: "/",
  login: "/login",
  logout: "/logout",
  loginPasskeyOptions: "/login/passkey/options",
  loginPasskey: "/login/passkey",
  settings: "/settings",
  apiTokens: "/settings/api-tokens",
  apiTokensRevoke: "/settings/api-tokens/revoke",
  authorizedApps: "/settings/authorized-apps",
  revokeApp: "/settings/authorized-apps/:clientId/revoke",
  revokePasswordSignIn: "/settings/authorized-apps/password-sign-in/:tokenId/revoke",
  passkeys: "/settings/passkeys",
  passkeyOptions: "/settings/passkeys/options",
  passkeyRemove: "/settings/passkeys/:id/remove",
  password: "/settings/password",
  account: "/settings/account",
  accountExport: "/settings/account/export",
  accountDelete: "/settings/account/delete",
  accountDeletePasskeyOptions: "/settings/account/delete/passkey/options",
  accountDeletePasskey: "/settings/account/delete/passkey",
  loginToken: "/api/auth/login/token",
  me: "/api/auth/me",
  assets: "/assets/:file"
} as const

// ---------------------------------------------------------------------------------------------
// REST

/** `POST /api/auth/login/token`. */
export const LoginTokenRequest = Schema.Struct({
  username: Schema.String,
  password: Schema.String
})
export type LoginTokenRequest = typeof LoginTokenRequest.Type

export interface LoginTokenResponse {
  readonly access_token: string
  readonly token_type: "Bearer"
  readonly created_at: number
}

/** `GET /api/auth/me`. */
export interface MeResponse {
  readonly account: { readonly name: string; readonly paused: boolean }
  readonly credential: "session" | "oauth" | "password-token"
  readonly client: { readonly client_id: string; readonly client_name: string } | null
}

// ---------------------------------------------------------------------------------------------
// WebAuthn JSON (W3C WebAuthn Level 3 §5.1.8). Optional members are exact (absent, never
// undefined) and arrays mutable, so a decoded value is the library's own JSON type.

const Base64Url = Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9_-]*$/), Schema.maxLength(16_384))

const Extensions = Schema.Record({ key: Schema.String, value: Schema.Unknown })

/** What `navigator.credentials.create()` returned, serialised by `toJSON()` or our script. */
export const RegistrationResponse = Schema.Struct({
  id: Base64Url,
  rawId: Base64Url,
  type: Schema.Literal("public-key"),
  response: Schema.Struct({
    clientDataJSON: Base64Url,
    attestationObject: Base64Url,
    transports: Schema.optionalWith(
      Schema.mutable(Schema.Array(Schema.String.pipe(Schema.maxLength(32))).pipe(Schema.maxItems(8))),
      { exact: true }
    )
  }),
  authenticatorAttachment: Schema.optionalWith(Schema.Literal("platform", "cross-platform"), { exact: true }),
  clientExtensionResults: Extensions
})
export type RegistrationResponse = typeof RegistrationResponse.Type

/** What `navigator.credentials.get()` returned. */
export const AuthenticationResponse = Schema.Struct({
  id: Base64Url,
  rawId: Base64Url,
  type: Schema.Literal("public-key"),
  response: Schema.Struct({
    clientDataJSON: Base64Url,
    authenticatorData: Base64Url,
    signature: Base64Url,
    userHandle: Schema.optionalWith(Base64Url, { exact: true })
  }),
  authenticatorAttachment: Schema.optionalWith(Schema.Literal("platform", "cross-platform"), { exact: true }),
  clientExtensionResults: Extensions
})
export type AuthenticationResponse = typeof AuthenticationResponse.Type

/** `POST /settings/passkeys/options`: the name the new passkey will carry. */
export const PasskeyOptionsRequest = Schema.Struct({ name: Schema.String })

/** `POST /settings/passkeys`: the ceremony's result. */
export const PasskeyRegisterRequest = Schema.Struct({ credential: RegistrationResponse })

/** `POST /login/passkey`: the ceremony's result and where to go next. */
export const PasskeySignInRequest = Schema.Struct({
  credential: AuthenticationResponse,
  next: Schema.optional(Schema.String)
})
