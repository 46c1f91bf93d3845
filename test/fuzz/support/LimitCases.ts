/**
 * Fuzzed requests at the edge of per-account limits (docs/decisions/account-limits.md), for a member whose account
 * holds exactly what its overrides allow (`belay account limits bob --networks 1 --channels 2 --push-subscriptions 0`):
 * every request is one that would succeed below the limit — a valid new network, an autojoin list of three to thirty
 * channels distinct however cased, a valid push subscription — so each must be refused 409 `quota_exceeded` naming
 * its limit and its maximum, and create nothing (the storm's state check counts networks and subscriptions).
 *
 * And the admin side: `AccountLimits` requests with values no limit takes (negative, fractional, past the ceilings,
 * `unlimited` where a limit is bounded always, strings, nesting), each refused with `ok: false`.
 */
import * as Crypto from "node:crypto"
import fc from "fast-check"
import type { RawOutcome, RawRequest } from "./RawHttp.js"

export interface LimitCase extends RawRequest {
  readonly label: string
  readonly limit: "networks" | "channels" | "push-subscriptions"
  readonly max: number
}

export interface LimitedMember {
  readonly bearer: string
  readonly networkId: number
}

/** A public IPv4 literal: no destination class refuses it and no lookup is made. */
const publicHost = fc.tuple(fc.integer({ min: 11, max: 99 }), fc.nat(255), fc.nat(255), fc.integer({ min: 1, max: 254 }))
  .map((parts) => parts.join("."))

/** Channel names distinct under any casemapping: an index in each. */
const distinctChannels = fc.tuple(fc.integer({ min: 3, max: 30 }), fc.stringMatching(/^[a-zA-Z[\]{}|^~_-]{0,12}$/))
  .map(([n, stem]) => Array.from({ length: n }, (_, i) => `#${i}x${stem}`))

const newNetwork = (member: LimitedMember): fc.Arbitrary<LimitCase> =>
  fc.tuple(fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9 _.-]{0,40}$/), publicHost, fc.integer({ min: 1, max: 65535 }), fc.boolean())
    .map(([name, host, port, tls]) => ({
      method: "POST",
      path: "/api/networks",
      headers: { authorization: `Bearer ${member.bearer}`, "content-type": "application/json" },
      body: Buffer.from(JSON.stringify({ name, host, port, tls, nick: "bob" })),
      label: `network ${JSON.stringify(name)} ${host}:${port}`,
      limit: "networks",
      max: 1
    }))

const longAutojoin = (member: LimitedMember): fc.Arbitrary<LimitCase> =>
  distinctChannels.map((channels) => ({
    method: "PATCH",
    path: `/api/networks/${member.networkId}`,
    headers: { authorization: `Bearer ${member.bearer}`, "content-type": "application/json" },
    body: Buffer.from(JSON.stringify({ channels })),
    label: `autojoin of ${channels.length}`,
    limit: "channels",
    max: 2
  }))

/**
 * A real P-256 public key (uncompressed point), drawn from a private key of the seed's bytes so that a run repeats:
 * a point off the curve is refused 400 before any limit is looked at (services/push/PushEndpoint.ts).
 */
const p256Point = fc.uint8Array({ minLength: 32, maxLength: 32 })
  .filter((bytes) => bytes.some((b) => b !== 0))
  .map((bytes) => {
    const ecdh = Crypto.createECDH("prime256v1")
    ecdh.setPrivateKey(Buffer.from(bytes))
    return ecdh.getPublicKey()
  })

const pushSubscription = (member: LimitedMember): fc.Arbitrary<LimitCase> =>
  fc.tuple(publicHost, fc.stringMatching(/^[A-Za-z0-9_-]{1,64}$/), p256Point, fc.uint8Array({ minLength: 16, maxLength: 16 }))
    .map(([host, path, point, secret]) => ({
      method: "POST",
      path: "/api/push/subscriptions",
      headers: { authorization: `Bearer ${member.bearer}`, "content-type": "application/json" },
      body: Buffer.from(JSON.stringify({
        endpoint: `https://${host}/push/${path}`,
        keys: { p256dh: point.toString("base64url"), auth: Buffer.from(secret).toString("base64url") }
      })),
      label: `push subscription at ${host}`,
      limit: "push-subscriptions",
      max: 0
    }))

export const limitCase = (member: LimitedMember): fc.Arbitrary<LimitCase> =>
  fc.oneof(newNetwork(member), longAutojoin(member), pushSubscription(member))

/** What is wrong with the answer, or undefined when it is the refusal the limit owes. */
export const judgeLimit = (request: LimitCase, outcome: RawOutcome): string | undefined => {
  if (outcome._tag === "Transport") return `no answer: ${outcome.message}`
  const text = outcome.body.toString("utf8")
  if (outcome.status !== 409) return `status ${outcome.status}: ${text.slice(0, 200)}`
  let json: Record<string, unknown>
  try {
    json = JSON.parse(text) as Record<string, unknown>
  } catch {
    return "the refusal is not JSON"
  }
  if (json["error"] !== "quota_exceeded") return `error ${String(json["error"])}`
  if (json["limit"] !== request.limit || json["max"] !== request.max) return `names ${String(json["limit"])} ${String(json["max"])}`
  if (!String(json["error_description"] ?? "").includes(`"${request.limit}"`)) return "the description does not name the limit"
  return undefined
}

/** A value no limit takes, in an `AccountLimits` admin request for `account`. */
export const badLimitRequest = (account: string): fc.Arbitrary<{ readonly label: string; readonly line: string }> => {
  const limit = fc.constantFrom("networks", "channels", "apps", "push-subscriptions", "passkeys", "sessions")
  const bounded = fc.constantFrom("apps", "push-subscriptions", "passkeys", "sessions")
  const value = fc.oneof(
    limit.chain((l) => fc.tuple(fc.constant(l), fc.integer({ min: -1_000_000, max: -1 }))),
    limit.chain((l) => fc.tuple(fc.constant(l), fc.integer({ min: 1_000_001, max: Number.MAX_SAFE_INTEGER }))),
    limit.chain((l) => fc.tuple(fc.constant(l), fc.double({ noInteger: true, noNaN: true }))),
    bounded.chain((l) => fc.tuple(fc.constant(l), fc.integer({ min: 10_001, max: 1_000_000 }))),
    bounded.chain((l) => fc.tuple(fc.constant(l), fc.constant("unlimited"))),
    fc.tuple(fc.constant("sessions"), fc.constant(0)),
    limit.chain((l) => fc.tuple(fc.constant(l), fc.string({ maxLength: 12 }).filter((s) => s !== "default" && s !== "unlimited"))),
    limit.chain((l) => fc.tuple(fc.constant(l), fc.constantFrom<unknown>(null, true, [], {}, [1], { n: 1 }))),
    fc.tuple(fc.stringMatching(/^[a-z-]{1,20}$/).filter((s) => !["networks", "channels", "apps", "push-subscriptions", "passkeys", "sessions", "uploads"].includes(s)), fc.nat(5))
  )
  return value.map(([name, v]) => ({
    label: `${name}=${JSON.stringify(v)}`,
    line: JSON.stringify({ _tag: "AccountLimits", name: account, limits: { [name]: v } })
  }))
}
