// Limits: the bounds of the MCP tools (the interface's "Limits" table) and of the `/mcp` body
// (docs/decisions/limits.md), read by the tool Schemas, which both enforce them and
// publish them in tools/list, and by the MCP route. The OAuth limits of the same table live
// beside the code that enforces them: ClientMetadataLimits (client_name, client_uri,
// redirect_uris), AuthorizeLimits (state), CodeVerifier in OAuth.ts, RegistrationLimits
// (per IP), OAuthClientLimits (pending cap and lifetime), OAuthCodeLimits (code lifetime) and
// OAUTH_BODY_LIMIT (16 KiB). docs/decisions/limits.md lists them all.
// Pure constants; no state, safe to import from anywhere.

// --- MCP tools (interface "Limits"; docs/decisions/limits.md: out of range is refused, never clamped) ---
export const RECENT_MESSAGES_DEFAULT_LIMIT = 100
export const RECENT_MESSAGES_MAX_LIMIT = 500
export const SEARCH_MESSAGES_DEFAULT_LIMIT = 50
export const SEARCH_MESSAGES_MAX_LIMIT = 100
export const LIST_MEMBERS_DEFAULT_LIMIT = 200
export const LIST_MEMBERS_MAX_LIMIT = 1000
/** Nick note length in characters (Unicode code points, as JSON Schema's maxLength counts). */
export const NICK_NOTE_MAX_LENGTH = 4096

// --- `/mcp` request body (docs/decisions/limits.md: beyond → 413 with a JSON body) ---
export const MCP_BODY_LIMIT_BYTES = 1024 * 1024
