/**
 * Fuzzed JSON bodies of the member's routes and the judge of their answers: `POST /api/auth/login/token`,
 * `POST /api/networks` and `PATCH /api/networks/:id` (of the fuzz network), `POST /api/push/subscriptions`,
 * `POST /login/passkey`, `POST /settings/passkeys/options` and `POST /settings/passkeys`, each with its credential
 * (a password-sign-in token, or the session cookie and a same-origin `Origin`). Every body has deep nesting (at every
 * depth up to the 16 KiB limit) in one of its members, nested ones included — for `/api/networks`, whose decoding is
 * strict, also in a member it does not know; the other members right-looking, sometimes hostile. The deep value is
 * never what its member takes (an object `{"a": …}` lacks the members of a struct) but in the passkey's
 * `clientExtensionResults`, whose assertion then fails: every body is refused and none may change anything. The
 * judge: a JSON refusal `{error, …}` of 400, 401, 403, 404 or 429 (413 only past 16 KiB) of at most 4 KiB; never a
 * success, never a 5xx.
 */
import fc from "fast-check"
import { type DeepJson, deepNesting, encodeJson, hostileJson } from "./HostileValues.js"
import type { RawOutcome, RawRequest } from "./RawHttp.js"

export interface JsonBodyCase extends RawRequest {
  readonly label: string
}

/** What the storm needs to get past each route's credential check. */
export interface JsonBodyTarget {
  readonly url: string
  readonly networkId: number
  /** A password-sign-in token of alice's. */
  readonly bearer: string
  /** The `Cookie` header of a browser session of alice's. */
  readonly cookie: string
}

interface JsonRoute {
  readonly name: string
  readonly method: "POST" | "PATCH"
  readonly path: string
  readonly headers: Readonly<Record<string, string>>
  /** A body whose members look right. */
  readonly template: Readonly<Record<string, unknown>>
  /** Where the deep nesting goes: each member, nested ones as paths. */
  readonly members: ReadonlyArray<ReadonlyArray<string>>
}

const NETWORK = { name: "fuzz-new", host: "irc.example", port: 6697, tls: true, nick: "alice", username: "u", realname: "r", password: "p", channels: ["#a"] }
const NETWORK_MEMBERS = [...Object.keys(NETWORK).map((k) => [k]), ["channels", "0"], ["extra"]]
const B64 = "AAAA"
const ASSERTION = {
  id: B64,
  rawId: B64,
  type: "public-key",
  response: { clientDataJSON: B64, authenticatorData: B64, signature: B64, userHandle: B64 },
  clientExtensionResults: {}
}
const ATTESTATION = { id: B64, rawId: B64, type: "public-key", response: { clientDataJSON: B64, attestationObject: B64 }, clientExtensionResults: {} }
const credentialMembers = (credential: Record<string, unknown>) => [
  ["credential"],
  ...Object.keys(credential).map((k) => ["credential", k]),
  ...Object.keys(credential["response"] as object).map((k) => ["credential", "response", k]),
  ["credential", "response", "transports"],
  ["credential", "authenticatorAttachment"],
  ["credential", "clientExtensionResults", "appid"]
]

const routes = (target: JsonBodyTarget): ReadonlyArray<JsonRoute> => {
  const bearer = { authorization: `Bearer ${target.bearer}` }
  const session = { cookie: target.cookie, origin: target.url }
  return [
    { name: "login/token", method: "POST", path: "/api/auth/login/token", headers: {}, template: { username: "alice", password: "not the password" }, members: [["username"], ["password"]] },
    { name: "networks add", method: "POST", path: "/api/networks", headers: bearer, template: NETWORK, members: NETWORK_MEMBERS },
    { name: "networks edit", method: "PATCH", path: `/api/networks/${target.networkId}`, headers: bearer, template: NETWORK, members: NETWORK_MEMBERS },
    {
      name: "push subscribe",
      method: "POST",
      path: "/api/push/subscriptions",
      headers: bearer,
      template: { endpoint: "https://push.example/x", keys: { p256dh: B64, auth: B64 } },
      members: [["endpoint"], ["keys"], ["keys", "p256dh"], ["keys", "auth"]]
    },
    { name: "passkey sign-in", method: "POST", path: "/login/passkey", headers: { origin: target.url }, template: { credential: ASSERTION, next: "/" }, members: [...credentialMembers(ASSERTION), ["next"]] },
    { name: "passkey options", method: "POST", path: "/settings/passkeys/options", headers: session, template: { name: "key" }, members: [["name"]] },
    { name: "passkey add", method: "POST", path: "/settings/passkeys", headers: session, template: { credential: ATTESTATION }, members: credentialMembers(ATTESTATION) }
  ]
}

/** `value` with `replacement` at `path` (objects copied on the way down, created where missing). */
const setAt = (value: Readonly<Record<string, unknown>>, path: ReadonlyArray<string>, replacement: unknown): Record<string, unknown> => {
  const [head, ...rest] = path
  const copy: Record<string, unknown> = Array.isArray(value) ? ([...value] as unknown as Record<string, unknown>) : { ...value }
  const inner = copy[head!]
  copy[head!] = rest.length === 0
    ? replacement
    : setAt(typeof inner === "object" && inner !== null ? (inner as Record<string, unknown>) : {}, rest, replacement)
  return copy
}

export const jsonBodyCase = (target: JsonBodyTarget): fc.Arbitrary<JsonBodyCase> =>
  fc.constantFrom(...routes(target)).chain((route) =>
    fc.tuple(
      fc.constantFrom(...route.members),
      deepNesting,
      // One time in four another member is hostile too.
      fc.option(fc.tuple(fc.constantFrom(...route.members), hostileJson), { nil: undefined, freq: 3 })
    ).map(([path, deep, other]): JsonBodyCase => {
      const hostile = other === undefined || other[0].join(".") === path.join(".") ? route.template : setAt(route.template, other[0], other[1])
      return {
        method: route.method,
        path: route.path,
        headers: { ...route.headers, "content-type": "application/json" },
        body: encodeJson(setAt(hostile, path, deep satisfies DeepJson)),
        label: `${route.name}: deep ${path.join(".")} (${deep.kind} ${deep.depth})${other === undefined ? "" : `, hostile ${other[0].join(".")}`}`
      }
    })
  )

// --- The judge ---

const REFUSALS = new Set([400, 401, 403, 404, 429, 413])

/** What is wrong with the answer, or undefined when it is a short JSON refusal. */
export const judgeJsonBody = (request: JsonBodyCase, outcome: RawOutcome): string | undefined => {
  if (outcome._tag === "Transport") return `no answer: ${outcome.message}`
  const { status, body, headers } = outcome
  if (!REFUSALS.has(status)) return `status ${status}: ${body.toString("utf8").slice(0, 200)}`
  if (status === 413 && request.body.length <= 16 * 1024) return "413 for a body within 16 KiB"
  if (!String(headers["content-type"] ?? "").startsWith("application/json")) return `status ${status} without JSON`
  if (body.length > 4096) return `a refusal of ${body.length} bytes`
  let json: unknown
  try {
    json = JSON.parse(body.toString("utf8"))
  } catch {
    return `status ${status}: the body is not JSON`
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) return "the refusal is not a JSON object"
  return typeof (json as Record<string, unknown>)["error"] === "string" ? undefined : "the refusal has no error"
}
