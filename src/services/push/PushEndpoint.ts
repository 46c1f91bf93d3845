/**
 * PushEndpoint: what a push subscription must be before it is stored, one rule for the web's route
 * (http/push/PushRoutes.ts) and an IRC client's `WEBPUSH REGISTER` (listener/WebPush.ts), so that both doors take
 * the same endpoints: no space or control character (the URL parser would drop them silently), an
 * endpoint that is an https URL of at most MAX_ENDPOINT characters with no user, password or fragment (http too with
 * BELAY_PUSH_INSECURE_ENDPOINTS=true, for a push service on the member's own network), and the keys RFC 8291
 * encrypts to: `p256dh` an uncompressed P-256 point (§3.1) that lies on the curve (or nothing could ever be
 * encrypted to it) and `auth` 16 bytes (§3.2), both base64url (RFC 4648 §5), padded or not, as clients send either.
 * The destination itself is for DestinationGuard to judge (`destinationOf` says what to ask). Pure.
 */
import * as Crypto from "node:crypto"

/** The longest endpoint kept (the column's CHECK, migration 0004). */
export const MAX_ENDPOINT = 2048

const BASE64URL = /^[A-Za-z0-9_-]+={0,2}$/

/** The bytes of a base64url string, or undefined when it is not one. */
export const base64url = (value: string): Buffer | undefined =>
  BASE64URL.test(value) ? Buffer.from(value.replace(/=+$/, ""), "base64url") : undefined

/** Why an endpoint is refused, if it is. */
export const endpointProblem = (endpoint: string, insecure: boolean): string | undefined => {
  if (endpoint.length === 0 || endpoint.length > MAX_ENDPOINT) return `endpoint must be 1 to ${MAX_ENDPOINT} characters`
  // The URL parser would drop tabs and line breaks silently; what is stored is what the member sent.
  if (/[\u0000-\u0020\u007f]/.test(endpoint)) return "endpoint must carry no spaces or control characters"
  let url: URL
  try {
    url = new URL(endpoint)
  } catch {
    return "endpoint must be a URL"
  }
  if (url.username !== "" || url.password !== "" || url.hash !== "") return "endpoint must carry no user, password or fragment"
  if (url.protocol === "https:") return undefined
  if (url.protocol === "http:" && insecure) return undefined
  return "endpoint must be an https URL"
}

/** The host and port DestinationGuard judges for an endpoint `endpointProblem` accepted. */
export const destinationOf = (endpoint: string): { readonly host: string; readonly port: number } => {
  const url = new URL(endpoint)
  return { host: url.hostname, port: url.port === "" ? (url.protocol === "https:" ? 443 : 80) : Number(url.port) }
}

/** Whether `point` is a point of P-256 (an ECDH with it succeeds). */
const onCurve = (point: Buffer): boolean => {
  try {
    const ecdh = Crypto.createECDH("prime256v1")
    ecdh.generateKeys()
    ecdh.computeSecret(point)
    return true
  } catch {
    return false
  }
}

/** The keys as stored (base64url without padding), or why they are refused. */
export const subscriptionKeys = (
  p256dh: string,
  auth: string
): { readonly p256dh: string; readonly auth: string } | { readonly problem: string } => {
  const point = base64url(p256dh)
  if (point === undefined || point.length !== 65 || point[0] !== 0x04 || !onCurve(point)) {
    return { problem: "p256dh must be an uncompressed P-256 point, base64url" }
  }
  const secret = base64url(auth)
  if (secret === undefined || secret.length !== 16) return { problem: "auth must be 16 bytes, base64url" }
  return { p256dh: point.toString("base64url"), auth: secret.toString("base64url") }
}
