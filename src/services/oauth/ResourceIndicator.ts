// The `resource` parameter of RFC 8707 at `/oauth/authorize` and `/api/oauth/token`: this authorization server
// issues tokens for one resource only, its own MCP endpoint `<issuer>/mcp` (the `resource` of its RFC 9728
// metadata, docs/contract.md "Protocol decisions"), so a request naming anything else is refused with
// invalid_target (RFC 8707 §2) instead of yielding a token the client believes is for another server
// (docs/decisions/oauth.md "`resource` names this server's /mcp, and the token remembers it"). Absent stays
// allowed: 2025-era clients send none. Pure; no state, safe from any fiber.
import { Either } from "effect"
import { OAuthPaths } from "../../schema/OAuth.js"
import { InvalidTarget } from "../../schema/OAuthErrors.js"

/** How many `resource` values one request may carry (RFC 8707 allows several; all must name us). */
export const RESOURCE_MAX_VALUES = 4

/** The one resource this server's tokens are for. */
export const mcpResource = (issuer: string): string => issuer + OAuthPaths.mcp

const parse = (raw: string): URL | undefined => {
  try {
    return new URL(raw)
  } catch {
    return undefined
  }
}

/**
 * The resource a request names: undefined when it names none, else `<issuer>/mcp` as this server spells it. Every
 * value must be an absolute URI without a fragment (RFC 8707 §2) that is this server's `/mcp` once WHATWG has
 * normalised both (so `HTTPS://Host:443/mcp` is the same resource); a trailing slash, another path, host or port is
 * another resource.
 */
export const checkResources = (
  presented: ReadonlyArray<string>,
  issuer: string
): Either.Either<string | undefined, InvalidTarget> => {
  const values = presented.filter((value) => value !== "")
  if (values.length === 0) return Either.right(undefined)
  const expected = mcpResource(issuer)
  if (values.length > RESOURCE_MAX_VALUES) {
    return Either.left(new InvalidTarget({ description: "too many resource parameters" }))
  }
  const target = parse(expected)?.href
  for (const value of values) {
    const url = value.includes("#") ? undefined : parse(value)
    if (url === undefined || target === undefined || url.href !== target) {
      return Either.left(new InvalidTarget({ description: "resource must name this server's /mcp endpoint" }))
    }
  }
  return Either.right(expected)
}
